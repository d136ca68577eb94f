/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The system graph, GPU paths and ring search (topo.h).
 *
 * Nodes form the PCI tree under each CPU (a <pci> element's node hangs below its parent's); GPUs are
 * PCI endpoints, NIC ports hang below their NIC; NVSwitches hang off the GPUs that list them; with
 * several files one network node joins every NIC port. Links are directed, one per direction, so that
 * a ring, which sends one way around, uses up each direction on its own.
 */
#include "topo/topo.h"

#include <ctype.h>
#include <float.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 512
#define MAX_EDGES 2048
#define MAX_PATH_EDGES (4 * TOPO_XML_MAX_DEPTH + 8) /* up and down a tree, twice for another node */
#define NVLINK_BW 20.0                              /* GB/s per NVLink per direction (NCCL: SM70 and SM80) */
#define NVLINK_BW_SM90 20.6                         /* NCCL's figure from Hopper on */
#define PCI_BW_DEFAULT 24.0                         /* Gen4 x16, when the file gives no speed */
#define SYS_BW 10.0                                 /* between two CPUs */
#define NIC_MBPS 100000                             /* a NIC port whose <net> gives no speed: 100 Gb/s */
#define NVSWITCH_TCLASS 0x068000

typedef enum { N_CPU, N_PCI, N_GPU, N_NIC, N_NVS, N_NET } node_type_t; /* N_NIC: one port; N_NET: the network */
typedef enum { E_NVL, E_PCI, E_SYS, E_NET } edge_kind_t;

typedef struct {
  node_type_t type;
  int parent;                     /* in the PCI tree; -1 for CPUs and NVSwitches */
  int gpu;                        /* GPU index, or -1 */
  int host;                       /* which file */
  int bridge;                     /* a PCIe switch (class 0x0604xx), not an endpoint */
  char busid[TOPO_XML_MAX_VALUE]; /* a NIC port: its name */
} node_t;

typedef struct {
  int from, to;
  double cap;
  edge_kind_t kind;
} edge_t;

typedef struct {
  topo_path_type_t type;
  double bw;
  int nedges;
  int edges[MAX_PATH_EDGES];
} path_t;

typedef struct {
  int node;
  int label;
  int nvlinks;
  int sm;
  int nic; /* node of the NIC port it uses, -1 for none */
  topo_path_type_t nic_type;
  const topo_xml_node_t *xml; /* its <gpu> element, NULL in a placement-only file */
} gpu_t;

struct topo_system {
  int nnodes, nedges, ngpus;
  node_t nodes[MAX_NODES];
  edge_t edges[MAX_EDGES];
  gpu_t gpus[TOPO_MAX_GPUS];
  path_t paths[TOPO_MAX_GPUS][TOPO_MAX_GPUS];
};

typedef struct {
  topo_system_t *s;
  const char *file;
  char *err;
  size_t errlen;
  int host; /* the file being read */
} builder_t;

static coll_gpu_status_t fail(builder_t *b, const topo_xml_node_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static coll_gpu_status_t fail(builder_t *b, const topo_xml_node_t *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  topo_verror(b->err, b->errlen, b->file, at != NULL ? at->line : 0, fmt, ap);
  va_end(ap);
  return COLL_GPU_INVALID_INPUT;
}

const char *topo_path_name(topo_path_type_t t) {
  static const char *names[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", "NET"};
  return t >= 0 && t < TOPO_PATH_NTYPES ? names[t] : "?";
}

static void lower_copy(char *dst, const char *src) {
  size_t i = 0;
  for (; src[i] && i + 1 < TOPO_XML_MAX_VALUE; ++i) dst[i] = (char)tolower((unsigned char)src[i]);
  dst[i] = '\0';
}

/* An integer attribute: 0 when absent (*v = def), -1 when malformed or out of [lo, hi]. */
static coll_gpu_status_t int_attr(builder_t *b, const topo_xml_node_t *n, const char *key, long def, long lo, long hi,
                                  long *v) {
  const char *s = topo_xml_attr(n, key);
  *v = def;
  if (s == NULL) return COLL_GPU_SUCCESS;
  char *end;
  *v = strtol(s, &end, 0);
  if (end == s || *end != '\0' || *v < lo || *v > hi)
    return fail(b, n, "<%s %s=\"%s\">: expected an integer from %ld to %ld", n->name, key, s, lo, hi);
  return COLL_GPU_SUCCESS;
}

/* A new node, *id its index. */
static coll_gpu_status_t add_node(builder_t *b, const topo_xml_node_t *at, node_type_t type, int parent,
                                  const char *busid, int *id) {
  topo_system_t *s = b->s;
  if (s->nnodes == MAX_NODES) return fail(b, at, "more than %d devices", MAX_NODES);
  node_t *n = &s->nodes[s->nnodes];
  n->type = type;
  n->parent = parent;
  n->gpu = -1;
  n->host = b->host;
  lower_copy(n->busid, busid != NULL ? busid : "");
  *id = s->nnodes++;
  return COLL_GPU_SUCCESS;
}

static coll_gpu_status_t add_edge(builder_t *b, const topo_xml_node_t *at, int from, int to, double cap,
                                  edge_kind_t kind) {
  topo_system_t *s = b->s;
  if (s->nedges == MAX_EDGES) return fail(b, at, "more than %d links", MAX_EDGES);
  s->edges[s->nedges++] = (edge_t){from, to, cap, kind};
  return COLL_GPU_SUCCESS;
}

/* The edge from `from` to `to` of that kind, or NO_EDGE. */
enum { NO_EDGE = -1 };
static int find_edge(const topo_system_t *s, int from, int to, edge_kind_t kind) {
  for (int e = 0; e < s->nedges; ++e)
    if (s->edges[e].from == from && s->edges[e].to == to && s->edges[e].kind == kind) return e;
  return NO_EDGE;
}

/* The link from a <pci> element to its parent: width x GT/s x 0.75 / 8 GB/s (NCCL's PCIe efficiency). */
static coll_gpu_status_t pci_bw(builder_t *b, const topo_xml_node_t *n, double *bw) {
  const char *speed = topo_xml_attr(n, "link_speed");
  long width;
  if (int_attr(b, n, "link_width", 16, 1, 32, &width) != 0) return COLL_GPU_INVALID_INPUT;
  *bw = PCI_BW_DEFAULT;
  if (speed == NULL) return COLL_GPU_SUCCESS;
  char *end;
  const double gts = strtod(speed, &end);
  if (end == speed || gts <= 0 || gts > 1000)
    return fail(b, n, "<pci link_speed=\"%s\">: expected a rate such as \"16.0 GT/s PCIe\"", speed);
  *bw = (double)width * gts * 0.75 / 8;
  return COLL_GPU_SUCCESS;
}

static coll_gpu_status_t walk(builder_t *b, const topo_xml_node_t *x, int parent);

/* A NIC port below node `parent`, linked at its speed. */
static coll_gpu_status_t add_port(builder_t *b, const topo_xml_node_t *at, int parent, const char *name, long mbps) {
  int id;
  const double bw = (double)mbps / 8000;
  coll_gpu_status_t st = add_node(b, at, N_NIC, parent, name != NULL ? name : "nic", &id);
  if (st == COLL_GPU_SUCCESS) st = add_edge(b, at, id, parent, bw, E_PCI);
  return st == COLL_GPU_SUCCESS ? add_edge(b, at, parent, id, bw, E_PCI) : st;
}

/* A <nic>: a port per <net>, or one of NIC_MBPS when it lists none. */
static coll_gpu_status_t add_nic(builder_t *b, const topo_xml_node_t *x, int parent) {
  int ports = 0;
  for (int i = 0; i < x->nchildren; ++i) {
    const topo_xml_node_t *net = x->children[i];
    long mbps;
    if (strcmp(net->name, "net") != 0) continue;
    if (int_attr(b, net, "speed", NIC_MBPS, 1, 100000000, &mbps) != 0 ||
        add_port(b, net, parent, topo_xml_attr(net, "name"), mbps) != 0)
      return COLL_GPU_INVALID_INPUT;
    ++ports;
  }
  return ports > 0 ? 0 : add_port(b, x, parent, NULL, NIC_MBPS);
}

/* A <pci> element below node `parent`. */
static coll_gpu_status_t add_pci(builder_t *b, const topo_xml_node_t *x, int parent) {
  const char *busid = topo_xml_attr(x, "busid");
  if (busid == NULL) return fail(b, x, "<pci> without busid");
  long cls;
  if (int_attr(b, x, "class", 0x060400, 0, 0xffffff, &cls) != 0) return COLL_GPU_INVALID_INPUT;
  double bw;
  if (pci_bw(b, x, &bw) != 0) return COLL_GPU_INVALID_INPUT;
  node_type_t type = (cls >> 16) == 0x03 ? N_GPU : N_PCI; /* a NIC's ports are its <nic><net> elements */
  int id;
  if (add_node(b, x, type, parent, busid, &id) != COLL_GPU_SUCCESS) return COLL_GPU_INVALID_INPUT;
  b->s->nodes[id].bridge = (cls >> 8) == 0x0604;
  if (add_edge(b, x, id, parent, bw, E_PCI) != 0 || add_edge(b, x, parent, id, bw, E_PCI) != 0)
    return COLL_GPU_INVALID_INPUT;
  if (type == N_GPU) {
    topo_system_t *s = b->s;
    if (s->ngpus == TOPO_MAX_GPUS) return fail(b, x, "more than %d GPUs", TOPO_MAX_GPUS);
    gpu_t *g = &s->gpus[s->ngpus];
    g->node = id;
    g->label = s->ngpus;
    g->sm = 0;
    g->nic = -1;
    g->xml = NULL;
    s->nodes[id].gpu = s->ngpus++;
    for (int i = 0; i < x->nchildren; ++i) {
      const topo_xml_node_t *c = x->children[i];
      if (strcmp(c->name, "gpu") != 0) continue;
      if (g->xml != NULL) return fail(b, c, "a second <gpu> in <pci busid=\"%s\">", busid);
      long rank, sm;
      if (int_attr(b, c, "rank", g->label, 0, 1 << 20, &rank) != 0 || int_attr(b, c, "sm", 0, 0, 1000, &sm) != 0)
        return COLL_GPU_INVALID_INPUT;
      g->label = (int)rank;
      g->sm = (int)sm;
      g->xml = c;
    }
    return COLL_GPU_SUCCESS;
  }
  return walk(b, x, id);
}

/* The children of an element whose node is `parent`. */
static coll_gpu_status_t walk(builder_t *b, const topo_xml_node_t *x, int parent) {
  for (int i = 0; i < x->nchildren; ++i) {
    const topo_xml_node_t *c = x->children[i];
    if (strcmp(c->name, "pci") == 0) {
      if (add_pci(b, c, parent) != 0) return COLL_GPU_INVALID_INPUT;
    } else if (strcmp(c->name, "nic") == 0) {
      if (add_nic(b, c, parent) != 0) return COLL_GPU_INVALID_INPUT;
    } else if (strcmp(c->name, "gpu") == 0) {
      return fail(b, c, "<gpu> outside a <pci> element");
    } else if (strcmp(c->name, "cpu") == 0) {
      return fail(b, c, "<cpu> inside <%s>", x->name);
    }
    /* anything else (<net> of a <nic>, vendor extensions) does not change paths between GPUs */
  }
  return COLL_GPU_SUCCESS;
}

/* The <nvlink> elements of every GPU, once all GPUs are known. */
static coll_gpu_status_t add_nvlinks(builder_t *b, const char *const *files) {
  topo_system_t *s = b->s;
  for (int g = 0; g < s->ngpus; ++g) {
    const topo_xml_node_t *x = s->gpus[g].xml;
    if (x == NULL) continue;
    b->host = s->nodes[s->gpus[g].node].host;
    b->file = files != NULL && files[b->host] != NULL ? files[b->host] : "<topology>";
    const double per_link = s->gpus[g].sm >= 90 ? NVLINK_BW_SM90 : NVLINK_BW;
    for (int i = 0; i < x->nchildren; ++i) {
      const topo_xml_node_t *l = x->children[i];
      if (strcmp(l->name, "nvlink") != 0) continue;
      const char *target = topo_xml_attr(l, "target");
      long count, tclass;
      if (target == NULL) return fail(b, l, "<nvlink> without target");
      if (int_attr(b, l, "count", 1, 1, 64, &count) != 0 ||
          int_attr(b, l, "tclass", 0x030200, 0, 0xffffff, &tclass) != 0)
        return COLL_GPU_INVALID_INPUT;
      char busid[TOPO_XML_MAX_VALUE];
      lower_copy(busid, target);
      int to = -1;
      const int from = s->gpus[g].node;
      for (int n = 0; n < s->nnodes && to < 0; ++n)
        if ((s->nodes[n].type == N_GPU || s->nodes[n].type == N_NVS) && s->nodes[n].host == s->nodes[from].host &&
            strcmp(s->nodes[n].busid, busid) == 0)
          to = n;
      if (to == from) return fail(b, l, "<nvlink> from a GPU to itself");
      if (to >= 0 && s->nodes[to].type == N_GPU) {
        /* each GPU lists its own side: one direction here */
        if (find_edge(s, from, to, E_NVL) >= 0) return fail(b, l, "a second <nvlink> to %s", target);
        if (add_edge(b, l, from, to, (double)count * per_link, E_NVL) != 0) return COLL_GPU_INVALID_INPUT;
      } else if (tclass == NVSWITCH_TCLASS) {
        if (to < 0 && add_node(b, l, N_NVS, -1, busid, &to) != COLL_GPU_SUCCESS) return COLL_GPU_INVALID_INPUT;
        if (find_edge(s, from, to, E_NVL) >= 0) return fail(b, l, "a second <nvlink> to NVSwitch %s", target);
        /* the switch side is not in the file: both directions from the GPU's entry */
        if (add_edge(b, l, from, to, (double)count * per_link, E_NVL) != 0 ||
            add_edge(b, l, to, from, (double)count * per_link, E_NVL) != 0)
          return COLL_GPU_INVALID_INPUT;
      } else {
        return fail(b, l, "<nvlink target=\"%s\">: neither a GPU of this file nor an NVSwitch (tclass 0x068000)",
                    target);
      }
      s->gpus[g].nvlinks += (int)count;
    }
  }
  return COLL_GPU_SUCCESS;
}

static double path_bw(const topo_system_t *s, const path_t *p) {
  double bw = DBL_MAX;
  for (int i = 0; i < p->nedges; ++i)
    if (s->edges[p->edges[i]].cap < bw) bw = s->edges[p->edges[i]].cap;
  return bw;
}

/* NVLink paths: direct, through one NVSwitch (both NVL), through one GPU (NVB); the widest. */
static int nvlink_path(const topo_system_t *s, int i, int j, path_t *best) {
  const int a = s->gpus[i].node, z = s->gpus[j].node;
  best->bw = 0;
  int e = find_edge(s, a, z, E_NVL);
  if (e >= 0) *best = (path_t){TOPO_PATH_NVL, s->edges[e].cap, 1, {e}};
  for (int pass = 0; pass < 2 && best->bw == 0; ++pass) {
    /* pass 0: NVSwitches (NVL); pass 1: other GPUs (NVB) */
    for (int m = 0; m < s->nnodes; ++m) {
      if (s->nodes[m].type != (pass == 0 ? N_NVS : N_GPU) || m == a || m == z) continue;
      const int e1 = find_edge(s, a, m, E_NVL), e2 = find_edge(s, m, z, E_NVL);
      if (e1 < 0 || e2 < 0) continue;
      path_t p = {pass == 0 ? TOPO_PATH_NVL : TOPO_PATH_NVB, 0, 2, {e1, e2}};
      p.bw = path_bw(s, &p);
      if (p.bw > best->bw) *best = p;
    }
  }
  return best->bw > 0;
}

/* Through the PCI trees of one node, from node x to node y: up to their lowest common node, or up to
 * x's CPU and across to y's, then down. Appends the links to p and returns the path type. */
static topo_path_type_t tree_path(const topo_system_t *s, int x, int y, path_t *p) {
  int up[TOPO_XML_MAX_DEPTH + 2], down[TOPO_XML_MAX_DEPTH + 2], nu = 0, nd = 0;
  for (int n = x; n >= 0; n = s->nodes[n].parent) up[nu++] = n;
  for (int n = y; n >= 0; n = s->nodes[n].parent) down[nd++] = n;
  /* drop the common top part, keeping the lowest common node on the up side */
  int common = 0;
  while (common < nu && common < nd && up[nu - 1 - common] == down[nd - 1 - common]) ++common;
  const int nup = common > 0 ? nu - common + 1 : nu;   /* nodes on the way up, the common one included */
  const int ndown = common > 0 ? nd - common : nd - 1; /* nodes on the way down below it (or below y's CPU) */
  for (int k = 0; k + 1 < nup; ++k) p->edges[p->nedges++] = find_edge(s, up[k], up[k + 1], E_PCI);
  int top = up[nup - 1];
  if (common == 0) { /* two CPUs of one node: every pair is linked */
    p->edges[p->nedges++] = find_edge(s, top, down[nd - 1], E_SYS);
    top = down[nd - 1];
  }
  for (int k = ndown - 1; k >= 0; --k) {
    p->edges[p->nedges++] = find_edge(s, top, down[k], E_PCI);
    top = down[k];
  }
  int switches = 0;
  for (int k = 1; k + 1 < nup; ++k) switches += s->nodes[up[k]].bridge;
  for (int k = 1; k < ndown; ++k) switches += s->nodes[down[k]].bridge;
  if (common > 0) switches += s->nodes[up[nup - 1]].bridge;
  if (common == 0) return TOPO_PATH_SYS;
  if (s->nodes[up[nup - 1]].type == N_CPU) return TOPO_PATH_PHB;
  return switches <= 1 ? TOPO_PATH_PIX : TOPO_PATH_PXB;
}

/* Each GPU's NIC port: the best path type to it, then the widest, then the first. */
static void choose_nics(topo_system_t *s) {
  for (int g = 0; g < s->ngpus; ++g) {
    gpu_t *gpu = &s->gpus[g];
    double best_bw = 0;
    for (int n = 0; n < s->nnodes; ++n) {
      if (s->nodes[n].type != N_NIC || s->nodes[n].host != s->nodes[gpu->node].host) continue;
      path_t p = {TOPO_PATH_LOC, 0, 0, {0}};
      const topo_path_type_t t = tree_path(s, gpu->node, n, &p);
      const double bw = path_bw(s, &p);
      if (gpu->nic < 0 || t < gpu->nic_type || (t == gpu->nic_type && bw > best_bw)) {
        gpu->nic = n;
        gpu->nic_type = t;
        best_bw = bw;
      }
    }
  }
}

/* GPU i to GPU j of another node: to i's NIC, over the network, from j's NIC. */
static void net_path(const topo_system_t *s, int net, int i, int j, path_t *p) {
  const gpu_t *a = &s->gpus[i], *z = &s->gpus[j];
  p->nedges = 0;
  tree_path(s, a->node, a->nic, p);
  p->edges[p->nedges++] = find_edge(s, a->nic, net, E_NET);
  p->edges[p->nedges++] = find_edge(s, net, z->nic, E_NET);
  tree_path(s, z->nic, z->node, p);
  p->type = TOPO_PATH_NET;
  p->bw = path_bw(s, p);
}

/* One file's node: its CPUs (linked to each other) and what hangs below them. */
static coll_gpu_status_t build_host(builder_t *b, const topo_xml_node_t *root) {
  topo_system_t *s = b->s;
  long version;
  if (strcmp(root->name, "system") != 0) return fail(b, root, "the root element is <%s>, not <system>", root->name);
  if (int_attr(b, root, "version", 1, 1, 1, &version) != 0) return COLL_GPU_INVALID_INPUT;
  const int first_cpu = s->nnodes;
  for (int i = 0; i < root->nchildren; ++i) {
    const topo_xml_node_t *c = root->children[i];
    if (strcmp(c->name, "cpu") != 0) continue;
    long numa;
    if (int_attr(b, c, "numaid", -1, -1, 4096, &numa) != 0) return COLL_GPU_INVALID_INPUT;
    int cpu;
    if (add_node(b, c, N_CPU, -1, NULL, &cpu) != COLL_GPU_SUCCESS) return COLL_GPU_INVALID_INPUT;
    for (int other = first_cpu; other < cpu; ++other)
      if (s->nodes[other].type == N_CPU &&
          (add_edge(b, c, cpu, other, SYS_BW, E_SYS) != 0 || add_edge(b, c, other, cpu, SYS_BW, E_SYS) != 0))
        return COLL_GPU_INVALID_INPUT;
    if (walk(b, c, cpu) != 0) return COLL_GPU_INVALID_INPUT;
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t topo_system_build(const topo_xml_node_t *const *roots, const char *const *files, int nroots,
                                    topo_system_t **out, char *err, size_t errlen) {
  topo_system_t *s = calloc(1, sizeof(*s));
  builder_t b = {s, "<topology>", err, errlen, 0};
  *out = NULL;
  if (s == NULL) {
    snprintf(err, errlen, "out of memory");
    return COLL_GPU_SYSTEM_ERROR;
  }
  for (b.host = 0; b.host < nroots; ++b.host) {
    b.file = files != NULL && files[b.host] != NULL ? files[b.host] : "<topology>";
    const int gpus_before = s->ngpus;
    if (build_host(&b, roots[b.host]) != 0) goto bad;
    if (s->ngpus == gpus_before) {
      fail(&b, roots[b.host], "no GPU (a <pci> of class 0x03xxxx)");
      goto bad;
    }
  }
  if (add_nvlinks(&b, files) != 0) goto bad;
  choose_nics(s);
  int net = -1;
  if (nroots > 1) {
    for (int g = 0; g < s->ngpus; ++g)
      if (s->gpus[g].nic < 0) {
        const int host = s->nodes[s->gpus[g].node].host;
        b.file = files != NULL && files[host] != NULL ? files[host] : "<topology>";
        fail(&b, roots[host], "no NIC (<nic><net>) in this node: its GPUs cannot reach the other nodes");
        goto bad;
      }
    b.host = -1;
    if (add_node(&b, NULL, N_NET, -1, "network", &net) != COLL_GPU_SUCCESS) goto bad;
    for (int n = 0; n < net; ++n)
      if (s->nodes[n].type == N_NIC) {
        const double bw = s->edges[find_edge(s, n, s->nodes[n].parent, E_PCI)].cap;
        if (add_edge(&b, NULL, n, net, bw, E_NET) != 0 || add_edge(&b, NULL, net, n, bw, E_NET) != 0) goto bad;
      }
  }
  for (int i = 0; i < s->ngpus; ++i)
    for (int j = 0; j < s->ngpus; ++j) {
      path_t *p = &s->paths[i][j];
      if (i == j) {
        *p = (path_t){TOPO_PATH_LOC, DBL_MAX, 0, {0}};
      } else if (s->nodes[s->gpus[i].node].host != s->nodes[s->gpus[j].node].host) {
        net_path(s, net, i, j, p);
      } else if (!nvlink_path(s, i, j, p)) {
        p->nedges = 0;
        p->type = tree_path(s, s->gpus[i].node, s->gpus[j].node, p);
        p->bw = path_bw(s, p);
      }
    }
  *out = s;
  return COLL_GPU_SUCCESS;
bad:
  free(s);
  return COLL_GPU_INVALID_INPUT;
}

void topo_system_free(topo_system_t *s) { free(s); }

int topo_ngpus(const topo_system_t *s) { return s->ngpus; }
int topo_gpu_label(const topo_system_t *s, int gpu) { return s->gpus[gpu].label; }
const char *topo_gpu_busid(const topo_system_t *s, int gpu) { return s->nodes[s->gpus[gpu].node].busid; }
int topo_gpu_nvlinks(const topo_system_t *s, int gpu) { return s->gpus[gpu].nvlinks; }
int topo_gpu_node(const topo_system_t *s, int gpu) { return s->nodes[s->gpus[gpu].node].host; }

const char *topo_gpu_nic(const topo_system_t *s, int gpu, topo_path_type_t *type) {
  const gpu_t *g = &s->gpus[gpu];
  if (g->nic < 0) return NULL;
  if (type != NULL) *type = g->nic_type;
  return s->nodes[g->nic].busid;
}

topo_path_t topo_path(const topo_system_t *s, int from, int to) {
  topo_path_t p = {s->paths[from][to].type, s->paths[from][to].bw};
  return p;
}

/* The next permutation of a[0..n) in lexicographic order; 0 after the last. */
static int next_permutation(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) --i;
  if (i < 0) return 0;
  int j = n - 1;
  while (a[j] <= a[i]) --j;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; ++l, --r) {
    t = a[l];
    a[l] = a[r];
    a[r] = t;
  }
  return 1;
}

/* The speed of ring `order` with `left` GB/s left on each link: the least left / uses over its links. */
static double ring_speed(const topo_system_t *s, const int *order, int n, const double *left, int *uses, int *typesum) {
  int touched[TOPO_MAX_GPUS * MAX_PATH_EDGES], nt = 0;
  *typesum = 0;
  for (int h = 0; h < n; ++h) {
    const path_t *p = &s->paths[order[h]][order[(h + 1) % n]];
    *typesum += p->type;
    for (int k = 0; k < p->nedges; ++k)
      if (uses[p->edges[k]]++ == 0) touched[nt++] = p->edges[k];
  }
  double speed = DBL_MAX;
  for (int k = 0; k < nt; ++k) {
    const double v = left[touched[k]] / uses[touched[k]];
    if (v < speed) speed = v;
    uses[touched[k]] = 0;
  }
  return speed;
}

/* The best ring with `left` GB/s left on each link: every order of GPUs 1..n-1 after GPU 0. */
static double exhaustive_ring(const topo_system_t *s, const double *left, int *uses, int *best) {
  const int n = s->ngpus;
  int order[TOPO_MAX_GPUS];
  for (int g = 0; g < n; ++g) order[g] = g;
  double best_speed = -1;
  int best_types = 0;
  do {
    int types;
    const double v = ring_speed(s, order, n, left, uses, &types);
    if (v > best_speed * (1 + 1e-9) || (v >= best_speed * (1 - 1e-9) && types < best_types)) {
      best_speed = v;
      best_types = types;
      memcpy(best, order, sizeof(order));
    }
  } while (next_permutation(order + 1, n - 1));
  return best_speed;
}

/* A ring grown from GPU 0, each hop to the GPU not yet in it whose path has the most bandwidth left,
 * ties to the better path type, then to the lower index: for more GPUs than the exhaustive search
 * takes. Paths to another node are NET, the worst type, so a node's GPUs stay together. */
static double greedy_ring(const topo_system_t *s, const double *left, int *uses, int *order) {
  const int n = s->ngpus;
  int in[TOPO_MAX_GPUS] = {0};
  order[0] = 0;
  in[0] = 1;
  for (int k = 1; k < n; ++k) {
    int pick = -1;
    double pick_bw = -1;
    for (int g = 0; g < n; ++g) {
      if (in[g]) continue;
      const path_t *p = &s->paths[order[k - 1]][g];
      double bw = DBL_MAX;
      for (int e = 0; e < p->nedges; ++e)
        if (left[p->edges[e]] < bw) bw = left[p->edges[e]];
      if (pick < 0 || bw > pick_bw * (1 + 1e-9) ||
          (bw >= pick_bw * (1 - 1e-9) && p->type < s->paths[order[k - 1]][pick].type)) {
        pick = g;
        pick_bw = bw;
      }
    }
    order[k] = pick;
    in[pick] = 1;
  }
  int types;
  return ring_speed(s, order, n, left, uses, &types);
}

coll_gpu_status_t topo_search_rings(const topo_system_t *s, topo_rings_t *rings, char *err, size_t errlen) {
  const int n = s->ngpus;
  memset(rings, 0, sizeof(*rings));
  if (n < 1) {
    snprintf(err, errlen, "no GPU to search rings over");
    return COLL_GPU_INVALID_INPUT;
  }
  if (n == 1) {
    rings->nrings = 1;
    return COLL_GPU_SUCCESS;
  }
  double left[MAX_EDGES];
  int uses[MAX_EDGES] = {0};
  for (int e = 0; e < s->nedges; ++e) left[e] = s->edges[e].cap;
  while (rings->nrings < TOPO_MAX_RINGS) {
    int best[TOPO_MAX_GPUS];
    const double best_speed =
        n <= TOPO_SEARCH_MAX_GPUS ? exhaustive_ring(s, left, uses, best) : greedy_ring(s, left, uses, best);
    if (best_speed <= 1e-9 || (rings->nrings > 0 && best_speed < 0.5 * rings->speed[0])) break;
    rings->speed[rings->nrings] = best_speed;
    memcpy(rings->order[rings->nrings++], best, sizeof(best));
    for (int h = 0; h < n; ++h) {
      const path_t *p = &s->paths[best[h]][best[(h + 1) % n]];
      for (int k = 0; k < p->nedges; ++k) left[p->edges[k]] -= best_speed;
    }
  }
  return COLL_GPU_SUCCESS;
}
