/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The topology XML reader and writer (topo_xml.h).
 */
#include "topo/topo_xml.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  const char *p, *end, *file;
  int line, nodes;
  char *err;
  size_t errlen;
} parser_t;

static coll_gpu_status_t fail(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static coll_gpu_status_t fail(parser_t *ps, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  topo_verror(ps->err, ps->errlen, ps->file, ps->line, fmt, ap);
  va_end(ap);
  return COLL_GPU_INVALID_INPUT;
}

coll_gpu_status_t topo_verror(char *err, size_t errlen, const char *file, int line, const char *fmt, va_list ap) {
  /* line 0: a tree that was built, not read (a probe) */
  int n = line > 0 ? snprintf(err, errlen, "%s:%d: ", file, line) : snprintf(err, errlen, "%s: ", file);
  if (n >= 0 && (size_t)n < errlen) vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  return COLL_GPU_INVALID_INPUT;
}

static void skip_space(parser_t *ps) {
  for (; ps->p < ps->end && isspace((unsigned char)*ps->p); ++ps->p)
    if (*ps->p == '\n') ++ps->line;
}

/* Skips to just after `close`, counting lines; -1 when the text ends first. */
static coll_gpu_status_t skip_past(parser_t *ps, const char *close, const char *what) {
  const size_t n = strlen(close);
  for (; ps->p + n <= ps->end; ++ps->p) {
    if (memcmp(ps->p, close, n) == 0) {
      ps->p += n;
      return COLL_GPU_SUCCESS;
    }
    if (*ps->p == '\n') ++ps->line;
  }
  return fail(ps, "unterminated %s", what);
}

static int is_name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == ':'; }

static coll_gpu_status_t read_name(parser_t *ps, char *out, const char *what) {
  size_t n = 0;
  for (; ps->p < ps->end && is_name_char(*ps->p); ++ps->p) {
    if (n + 1 >= TOPO_XML_MAX_NAME) return fail(ps, "%s name longer than %d bytes", what, TOPO_XML_MAX_NAME - 1);
    out[n++] = *ps->p;
  }
  out[n] = '\0';
  return n == 0 ? fail(ps, "expected a %s name", what) : COLL_GPU_SUCCESS;
}

/* A quoted attribute value with entities decoded into out (TOPO_XML_MAX_VALUE bytes). */
static coll_gpu_status_t read_value(parser_t *ps, char *out) {
  if (ps->p >= ps->end || (*ps->p != '"' && *ps->p != '\'')) return fail(ps, "expected a quoted attribute value");
  const char quote = *ps->p++;
  static const struct {
    const char *name;
    char c;
  } entities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  size_t n = 0;
  while (ps->p < ps->end && *ps->p != quote) {
    char c = *ps->p;
    if (c == '<') return fail(ps, "'<' inside an attribute value");
    if (c == '\n') ++ps->line;
    size_t adv = 1;
    if (c == '&') {
      size_t k = 0;
      for (; k < sizeof(entities) / sizeof(entities[0]); ++k) {
        const size_t len = strlen(entities[k].name);
        if ((size_t)(ps->end - ps->p) >= len && memcmp(ps->p, entities[k].name, len) == 0) break;
      }
      if (k == sizeof(entities) / sizeof(entities[0])) return fail(ps, "unknown entity in an attribute value");
      c = entities[k].c;
      adv = strlen(entities[k].name);
    }
    if (n + 1 >= TOPO_XML_MAX_VALUE) return fail(ps, "attribute value longer than %d bytes", TOPO_XML_MAX_VALUE - 1);
    out[n++] = c;
    ps->p += adv;
  }
  if (ps->p >= ps->end) return fail(ps, "unterminated attribute value");
  ++ps->p;
  out[n] = '\0';
  return COLL_GPU_SUCCESS;
}

/* An element with no attributes and no children; NULL when out of memory. */
static topo_xml_node_t *alloc_node(const char *name) {
  topo_xml_node_t *n = calloc(1, sizeof(*n));
  if (n == NULL || (n->name = strdup(name)) == NULL || (n->keys = calloc(TOPO_XML_MAX_ATTRS, sizeof(char *))) == NULL ||
      (n->values = calloc(TOPO_XML_MAX_ATTRS, sizeof(char *))) == NULL) {
    topo_xml_free(n);
    return NULL;
  }
  return n;
}

static coll_gpu_status_t attach(topo_xml_node_t *parent, topo_xml_node_t *child) {
  topo_xml_node_t **c = realloc(parent->children, (size_t)(parent->nchildren + 1) * sizeof(*c));
  if (c == NULL) return COLL_GPU_SYSTEM_ERROR;
  parent->children = c;
  c[parent->nchildren++] = child;
  child->parent = parent;
  return COLL_GPU_SUCCESS;
}

static topo_xml_node_t *new_node(parser_t *ps, const char *name, topo_xml_node_t *parent) {
  if (++ps->nodes > TOPO_XML_MAX_NODES) {
    fail(ps, "more than %d elements", TOPO_XML_MAX_NODES);
    return NULL;
  }
  topo_xml_node_t *n = alloc_node(name);
  if (n == NULL) {
    fail(ps, "out of memory");
    return NULL;
  }
  n->line = ps->line;
  n->parent = parent;
  return n;
}

static coll_gpu_status_t add_child(parser_t *ps, topo_xml_node_t *parent, topo_xml_node_t *child) {
  return attach(parent, child) != COLL_GPU_SUCCESS ? fail(ps, "out of memory") : COLL_GPU_SUCCESS;
}

/* After '<' and the name: attributes up to '>' or '/>'. Sets *closed for '/>'. */
static coll_gpu_status_t read_attrs(parser_t *ps, topo_xml_node_t *n, int *closed) {
  for (;;) {
    skip_space(ps);
    if (ps->p >= ps->end) return fail(ps, "unterminated <%s>", n->name);
    if (*ps->p == '>') {
      ++ps->p;
      *closed = 0;
      return COLL_GPU_SUCCESS;
    }
    if (*ps->p == '/') {
      if (ps->p + 1 >= ps->end || ps->p[1] != '>') return fail(ps, "expected '/>' in <%s>", n->name);
      ps->p += 2;
      *closed = 1;
      return COLL_GPU_SUCCESS;
    }
    char key[TOPO_XML_MAX_NAME], value[TOPO_XML_MAX_VALUE];
    if (read_name(ps, key, "attribute") != 0) return COLL_GPU_INVALID_INPUT;
    skip_space(ps);
    if (ps->p >= ps->end || *ps->p != '=') return fail(ps, "expected '=' after attribute %s", key);
    ++ps->p;
    skip_space(ps);
    if (read_value(ps, value) != 0) return COLL_GPU_INVALID_INPUT;
    if (topo_xml_attr(n, key) != NULL) return fail(ps, "attribute %s given twice in <%s>", key, n->name);
    if (n->nattrs == TOPO_XML_MAX_ATTRS)
      return fail(ps, "more than %d attributes in <%s>", TOPO_XML_MAX_ATTRS, n->name);
    if ((n->keys[n->nattrs] = strdup(key)) == NULL || (n->values[n->nattrs] = strdup(value)) == NULL) {
      free(n->keys[n->nattrs]);
      n->keys[n->nattrs] = NULL;
      return fail(ps, "out of memory");
    }
    ++n->nattrs;
  }
}

coll_gpu_status_t topo_xml_parse(const char *text, size_t len, const char *file, topo_xml_node_t **root, char *err,
                                 size_t errlen) {
  parser_t ps = {text, text + len, file != NULL ? file : "<topology>", 1, 0, err, errlen};
  topo_xml_node_t *top = NULL, *cur = NULL;
  int depth = 0;
  *root = NULL;
  if (len > TOPO_XML_MAX_BYTES) {
    fail(&ps, "larger than %d bytes", TOPO_XML_MAX_BYTES);
    return COLL_GPU_INVALID_INPUT;
  }
  for (;;) {
    skip_space(&ps);
    if (ps.p >= ps.end) break;
    if (*ps.p != '<') {
      fail(&ps, "unexpected text outside a tag");
      goto bad;
    }
    if (ps.end - ps.p >= 4 && memcmp(ps.p, "<!--", 4) == 0) {
      if (skip_past(&ps, "-->", "comment") != 0) goto bad;
      continue;
    }
    if (ps.end - ps.p >= 2 && ps.p[1] == '?') {
      if (top != NULL) {
        fail(&ps, "<?...?> after the root element");
        goto bad;
      }
      if (skip_past(&ps, "?>", "<?...?> declaration") != 0) goto bad;
      continue;
    }
    ++ps.p;
    char name[TOPO_XML_MAX_NAME];
    if (ps.p < ps.end && *ps.p == '/') { /* end tag */
      ++ps.p;
      if (read_name(&ps, name, "element") != 0) goto bad;
      skip_space(&ps);
      if (ps.p >= ps.end || *ps.p != '>') {
        fail(&ps, "expected '>' after </%s", name);
        goto bad;
      }
      ++ps.p;
      if (cur == NULL || strcmp(cur->name, name) != 0) {
        if (cur == NULL)
          fail(&ps, "</%s> closes nothing", name);
        else
          fail(&ps, "</%s> closes <%s> of line %d", name, cur->name, cur->line);
        goto bad;
      }
      cur = cur->parent;
      --depth;
      continue;
    }
    if (read_name(&ps, name, "element") != 0) goto bad;
    if (top != NULL && cur == NULL) {
      fail(&ps, "a second root element <%s>", name);
      goto bad;
    }
    if (depth + 1 > TOPO_XML_MAX_DEPTH) {
      fail(&ps, "elements nested deeper than %d", TOPO_XML_MAX_DEPTH);
      goto bad;
    }
    topo_xml_node_t *n = new_node(&ps, name, cur);
    if (n == NULL) goto bad;
    if (cur == NULL) {
      top = n;
    } else if (add_child(&ps, cur, n) != 0) {
      topo_xml_free(n);
      goto bad;
    }
    int closed = 0;
    if (read_attrs(&ps, n, &closed) != 0) goto bad;
    if (!closed) {
      cur = n;
      ++depth;
    }
  }
  if (cur != NULL) {
    fail(&ps, "<%s> of line %d is not closed", cur->name, cur->line);
    goto bad;
  }
  if (top == NULL) {
    fail(&ps, "no element");
    return COLL_GPU_INVALID_INPUT;
  }
  *root = top;
  return COLL_GPU_SUCCESS;
bad:
  topo_xml_free(top);
  return COLL_GPU_INVALID_INPUT;
}

coll_gpu_status_t topo_xml_load(const char *path, topo_xml_node_t **root, char *err, size_t errlen) {
  *root = NULL;
  /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is then refused as no regular file */
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: %s", path, fd < 0 ? "cannot open it" : "not a regular file");
    if (fd >= 0) close(fd);
    return COLL_GPU_SYSTEM_ERROR;
  }
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) {
    close(fd);
    snprintf(err, errlen, "%s: cannot open it", path);
    return COLL_GPU_SYSTEM_ERROR;
  }
  char *buf = malloc(TOPO_XML_MAX_BYTES + 1);
  size_t len = buf != NULL ? fread(buf, 1, TOPO_XML_MAX_BYTES + 1, f) : 0;
  const int read_error = ferror(f);
  fclose(f);
  coll_gpu_status_t rc = COLL_GPU_SYSTEM_ERROR;
  if (buf == NULL)
    snprintf(err, errlen, "%s: out of memory", path);
  else if (read_error)
    snprintf(err, errlen, "%s: read error", path);
  else
    rc = topo_xml_parse(buf, len, path, root, err, errlen); /* len > max is reported as too large */
  free(buf);
  return rc;
}

coll_gpu_status_t topo_xml_save(const topo_xml_node_t *root, const char *path, char *err, size_t errlen) {
  const size_t len = strlen(path) + 8;
  char *tmp = malloc(len);
  if (tmp == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    return COLL_GPU_SYSTEM_ERROR;
  }
  snprintf(tmp, len, "%s.XXXXXX", path);
  const int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  coll_gpu_status_t rc = COLL_GPU_SYSTEM_ERROR;
  if (f == NULL) {
    snprintf(err, errlen, "%s: cannot create a file beside it: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
  } else {
    const int bad = (fchmod(fd, 0644) != 0) | (topo_xml_write(root, f) != 0) | (fclose(f) != 0);
    if (bad || rename(tmp, path) != 0)
      snprintf(err, errlen, "%s: cannot write it: %s", path, strerror(errno));
    else
      rc = COLL_GPU_SUCCESS;
  }
  if (rc != 0 && fd >= 0) unlink(tmp);
  free(tmp);
  return rc;
}

static coll_gpu_status_t write_escaped(FILE *f, const char *s) {
  for (; *s; ++s) {
    const char *e = NULL;
    switch (*s) {
      case '&':
        e = "&amp;";
        break;
      case '<':
        e = "&lt;";
        break;
      case '>':
        e = "&gt;";
        break;
      case '"':
        e = "&quot;";
        break;
      default:
        break;
    }
    if ((e != NULL ? fputs(e, f) : fputc(*s, f)) == EOF) return COLL_GPU_SYSTEM_ERROR;
  }
  return COLL_GPU_SUCCESS;
}

static coll_gpu_status_t write_node(const topo_xml_node_t *n, FILE *f, int depth) {
  if (fprintf(f, "%*s<%s", 2 * depth, "", n->name) < 0) return COLL_GPU_SYSTEM_ERROR;
  for (int i = 0; i < n->nattrs; ++i)
    if (fprintf(f, " %s=\"", n->keys[i]) < 0 || write_escaped(f, n->values[i]) != 0 || fputc('"', f) == EOF)
      return COLL_GPU_SYSTEM_ERROR;
  if (n->nchildren == 0) return fputs("/>\n", f) == EOF ? COLL_GPU_SYSTEM_ERROR : COLL_GPU_SUCCESS;
  if (fputs(">\n", f) == EOF) return COLL_GPU_SYSTEM_ERROR;
  for (int i = 0; i < n->nchildren; ++i)
    if (write_node(n->children[i], f, depth + 1) != 0) return COLL_GPU_SYSTEM_ERROR;
  return fprintf(f, "%*s</%s>\n", 2 * depth, "", n->name) < 0 ? COLL_GPU_SYSTEM_ERROR : COLL_GPU_SUCCESS;
}

coll_gpu_status_t topo_xml_write(const topo_xml_node_t *root, FILE *f) { return write_node(root, f, 0); }

void topo_xml_free(topo_xml_node_t *n) {
  if (n == NULL) return;
  for (int i = 0; i < n->nchildren; ++i) topo_xml_free(n->children[i]);
  for (int i = 0; i < n->nattrs; ++i) {
    free(n->keys[i]);
    free(n->values[i]);
  }
  free(n->keys);
  free(n->values);
  free(n->children);
  free(n->name);
  free(n);
}

topo_xml_node_t *topo_xml_child(const topo_xml_node_t *n, const char *name) {
  for (int i = 0; i < n->nchildren; ++i)
    if (strcmp(n->children[i]->name, name) == 0) return n->children[i];
  return NULL;
}

int topo_xml_is_gpu(const topo_xml_node_t *n) {
  const char *cls = topo_xml_attr(n, "class");
  return strcmp(n->name, "pci") == 0 && cls != NULL && strtol(cls, NULL, 16) >> 16 == 0x03;
}

static const topo_xml_node_t *find_gpu(const topo_xml_node_t *n, const char *busid) {
  const char *b = topo_xml_attr(n, "busid");
  if (topo_xml_is_gpu(n) && b != NULL && strcasecmp(b, busid) == 0) return n;
  for (int i = 0; i < n->nchildren; ++i) {
    const topo_xml_node_t *g = find_gpu(n->children[i], busid);
    if (g != NULL) return g;
  }
  return NULL;
}

int topo_xml_gpu_cpus(const topo_xml_node_t *root, const char *busid, int *cpus, int max) {
  return topo_xml_cpus_near(find_gpu(root, busid), cpus, max);
}

/* The first <net> below n that take accepts, depth first in file order, not looking below `skip` (a child of n
 * already searched). */
static const topo_xml_node_t *find_net(const topo_xml_node_t *n, const topo_xml_node_t *skip,
                                       int (*take)(const char *name, void *ctx), void *ctx) {
  const char *name = topo_xml_attr(n, "name");
  if (strcmp(n->name, "net") == 0 && name != NULL && (take == NULL || take(name, ctx))) return n;
  for (int i = 0; i < n->nchildren; ++i) {
    if (n->children[i] == skip) continue;
    const topo_xml_node_t *net = find_net(n->children[i], NULL, take, ctx);
    if (net != NULL) return net;
  }
  return NULL;
}

const topo_xml_node_t *topo_xml_gpu_net(const topo_xml_node_t *root, const char *busid,
                                        int (*take)(const char *name, void *ctx), void *ctx) {
  const topo_xml_node_t *below = NULL;
  for (const topo_xml_node_t *n = find_gpu(root, busid); n != NULL; below = n, n = n->parent) {
    const topo_xml_node_t *net = find_net(n, below, take, ctx);
    if (net != NULL) return net;
  }
  return NULL;
}

int topo_xml_cpus_near(const topo_xml_node_t *n, int *cpus, int max) {
  while (n != NULL && strcmp(n->name, "cpu") != 0) n = n->parent;
  const char *c = n != NULL ? topo_xml_attr(n, "affinity") : NULL;
  if (c == NULL) return 0;
  /* the words, most significant first (a value holds at most TOPO_XML_MAX_VALUE / 2 of them) */
  unsigned long words[TOPO_XML_MAX_VALUE / 2];
  int nwords = 0;
  for (;;) {
    if (c[0] == '0' && (c[1] == 'x' || c[1] == 'X')) c += 2;
    char *end;
    errno = 0;
    const unsigned long v = isxdigit((unsigned char)*c) ? strtoul(c, &end, 16) : 0;
    if (!isxdigit((unsigned char)*c) || errno != 0 || v > 0xfffffffful || (*end != ',' && *end != '\0') ||
        nwords == TOPO_XML_MAX_VALUE / 2)
      return 0;
    words[nwords++] = v;
    if (*end == '\0') break;
    c = end + 1;
  }
  int found = 0;
  for (int w = nwords - 1; w >= 0; --w) /* the last word holds CPUs 0-31 */
    for (int bit = 0; bit < 32 && found < max; ++bit)
      if (words[w] >> bit & 1ul) cpus[found++] = 32 * (nwords - 1 - w) + bit;
  return found;
}

const char *topo_xml_attr(const topo_xml_node_t *n, const char *key) {
  for (int i = 0; i < n->nattrs; ++i)
    if (strcmp(n->keys[i], key) == 0) return n->values[i];
  return NULL;
}

/* ------------------------------------------------------------------ building and merging trees */

topo_xml_node_t *topo_xml_add(topo_xml_node_t *parent, const char *name) {
  if (strlen(name) >= TOPO_XML_MAX_NAME) return NULL;
  topo_xml_node_t *n = alloc_node(name);
  if (n != NULL && parent != NULL && attach(parent, n) != 0) {
    topo_xml_free(n);
    return NULL;
  }
  return n;
}

coll_gpu_status_t topo_xml_set(topo_xml_node_t *n, const char *key, const char *value) {
  if (strlen(key) >= TOPO_XML_MAX_NAME || strlen(value) >= TOPO_XML_MAX_VALUE) return COLL_GPU_INVALID_INPUT;
  char *v = strdup(value);
  if (v == NULL) return COLL_GPU_SYSTEM_ERROR;
  for (int i = 0; i < n->nattrs; ++i)
    if (strcmp(n->keys[i], key) == 0) {
      free(n->values[i]);
      n->values[i] = v;
      return COLL_GPU_SUCCESS;
    }
  if (n->nattrs == TOPO_XML_MAX_ATTRS || (n->keys[n->nattrs] = strdup(key)) == NULL) {
    free(v);
    return COLL_GPU_SYSTEM_ERROR;
  }
  n->values[n->nattrs++] = v;
  return COLL_GPU_SUCCESS;
}

void topo_xml_unset(topo_xml_node_t *n, const char *key) {
  for (int i = 0; i < n->nattrs; ++i)
    if (strcmp(n->keys[i], key) == 0) {
      free(n->keys[i]);
      free(n->values[i]);
      memmove(n->keys + i, n->keys + i + 1, (size_t)(n->nattrs - i - 1) * sizeof(char *));
      memmove(n->values + i, n->values + i + 1, (size_t)(n->nattrs - i - 1) * sizeof(char *));
      --n->nattrs;
      return;
    }
}

coll_gpu_status_t topo_xml_setf(topo_xml_node_t *n, const char *key, const char *fmt, ...) {
  char value[TOPO_XML_MAX_VALUE];
  va_list ap;
  va_start(ap, fmt);
  const int len = vsnprintf(value, sizeof(value), fmt, ap);
  va_end(ap);
  return len < 0 || len >= (int)sizeof(value) ? COLL_GPU_INVALID_INPUT : topo_xml_set(n, key, value);
}

void topo_xml_remove(topo_xml_node_t *n) {
  topo_xml_node_t *p = n->parent;
  if (p != NULL)
    for (int i = 0; i < p->nchildren; ++i)
      if (p->children[i] == n) {
        memmove(p->children + i, p->children + i + 1, (size_t)(p->nchildren - i - 1) * sizeof(*p->children));
        --p->nchildren;
        break;
      }
  topo_xml_free(n);
}

/* What tells two elements of one name apart: NCCL's key attributes. NULL: the name alone. */
static const char *key_of(const topo_xml_node_t *n) {
  static const char *const keys[] = {"busid", "numaid", "target", "name"};
  for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); ++k) {
    const char *v = topo_xml_attr(n, keys[k]);
    if (v != NULL) return v;
  }
  return NULL;
}

static int same_element(const topo_xml_node_t *a, const topo_xml_node_t *b) {
  if (strcmp(a->name, b->name) != 0) return 0;
  const char *ka = key_of(a), *kb = key_of(b);
  return ka == NULL ? kb == NULL : kb != NULL && strcasecmp(ka, kb) == 0; /* bus ids come in either case */
}

static topo_xml_node_t *copy_tree(const topo_xml_node_t *src) {
  topo_xml_node_t *n = alloc_node(src->name);
  if (n == NULL) return NULL;
  n->line = src->line;
  for (int i = 0; i < src->nattrs; ++i)
    if (topo_xml_set(n, src->keys[i], src->values[i]) != 0) goto bad;
  for (int i = 0; i < src->nchildren; ++i) {
    topo_xml_node_t *c = copy_tree(src->children[i]);
    if (c == NULL || attach(n, c) != 0) {
      topo_xml_free(c);
      goto bad;
    }
  }
  return n;
bad:
  topo_xml_free(n);
  return NULL;
}

coll_gpu_status_t topo_xml_merge(topo_xml_node_t *dst, const topo_xml_node_t *src) {
  for (int i = 0; i < src->nattrs; ++i)
    if (topo_xml_attr(dst, src->keys[i]) == NULL && topo_xml_set(dst, src->keys[i], src->values[i]) != 0)
      return COLL_GPU_SYSTEM_ERROR;
  for (int i = 0; i < src->nchildren; ++i) {
    const topo_xml_node_t *c = src->children[i];
    topo_xml_node_t *match = NULL;
    for (int j = 0; j < dst->nchildren && match == NULL; ++j)
      if (same_element(dst->children[j], c)) match = dst->children[j];
    if (match != NULL) {
      if (topo_xml_merge(match, c) != 0) return COLL_GPU_SYSTEM_ERROR;
      continue;
    }
    topo_xml_node_t *copy = copy_tree(c);
    if (copy == NULL || attach(dst, copy) != 0) {
      topo_xml_free(copy);
      return COLL_GPU_SYSTEM_ERROR;
    }
  }
  return COLL_GPU_SUCCESS;
}

char *topo_xml_text(const topo_xml_node_t *root, size_t *len) {
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  if (f == NULL) return NULL;
  const coll_gpu_status_t rc = topo_xml_write(root, f);
  if (fclose(f) != 0 || rc != 0) {
    free(text);
    return NULL;
  }
  if (len != NULL) *len = n;
  return text;
}
