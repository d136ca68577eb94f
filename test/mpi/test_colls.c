/*
 * Every collective that coll/gpu wraps, blocking and nonblocking, against a reference computed here:
 * reductions for every predefined type and op pair MPI allows, data movement with contiguous and
 * derived datatypes (holes, negative lower bound), in place and not, counts 0, 1 and more, every root.
 * Outputs are poisoned first; receive images are compared byte for byte, holes included.
 *
 * usage: test_colls [-m host|device|managed|pinned|pool|mixed] [-s seed] [-v] [-L]
 * -L runs only a broadcast of more than 2^31 bytes (several GiB of memory per rank).
 * -v names every case before running it (to find a case that crashes).
 * The seed is random unless given (TEST_SEED also sets it); it is printed for reproduction.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "test/common/tbuf.h"

static int rank, nranks;
static uint64_t seed;
static tbuf_kind_t kind;
static long checks, failures;
static bool verbose;

#define POISON 0xA5

static uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static uint64_t rnd(uint64_t a, uint64_t b, uint64_t c) { return mix(seed ^ mix(a ^ mix(b ^ mix(c)))); }

static void fail(const char *what, const char *detail) {
  if (failures++ < 20)
    fprintf(stderr, "[rank %d] FAIL %s: %s (seed %llu)\n", rank, what, detail, (unsigned long long)seed);
}

static void check_bytes(const char *what, const void *got, const void *want, size_t n) {
  checks++;
  const unsigned char *g = got, *w = want;
  for (size_t i = 0; i < n; ++i) {
    if (g[i] != w[i]) {
      char d[128];
      snprintf(d, sizeof(d), "byte %zu of %zu: got 0x%02x, want 0x%02x", i, n, g[i], w[i]);
      fail(what, d);
      return;
    }
  }
}

/* A buffer of the rank's memory kind with a host image of the same bytes. */
typedef struct {
  char *dev; /* allocation of the test kind */
  char *img; /* host image */
  size_t bytes;
  tbuf_kind_t k;
} buf_t;

static buf_t buf_new(size_t bytes) {
  buf_t b = {NULL, NULL, bytes, tbuf_rank_kind(kind, rank)};
  b.dev = tbuf_alloc(b.k, bytes);
  b.img = malloc(bytes ? bytes : 1);
  memset(b.img, POISON, bytes);
  return b;
}
static void buf_push(buf_t *b) { tbuf_put(b->k, b->dev, b->img, b->bytes); }
static void buf_check(const char *what, buf_t *b, const void *want) {
  tbuf_get(b->k, b->img, b->dev, b->bytes);
  check_bytes(what, b->img, want, b->bytes);
}
static void buf_free(buf_t *b) {
  tbuf_free(b->k, b->dev);
  free(b->img);
}

/* ======================================================================== reductions */

typedef enum { T_SINT, T_UINT, T_FLOAT, T_BOOL, T_BYTE, T_PAIR, T_CPLX } tclass_t;
typedef struct {
  const char *name;
  MPI_Datatype type;
  tclass_t cls;
  size_t size;  /* bytes of the value (or of the pair struct) */
  size_t vsize; /* pairs: bytes of the value part */
  size_t ioff;  /* pairs: offset of the int index */
} rtype_t;

typedef struct {
  float v;
  int i;
} float_int_t;
typedef struct {
  double v;
  int i;
} double_int_t;
typedef struct {
  long v;
  int i;
} long_int_t;
typedef struct {
  short v;
  int i;
} short_int_t;
typedef struct {
  int v;
  int i;
} int_int_t;

#define SI(n, t, c) \
  { n, t, T_SINT, sizeof(c), sizeof(c), 0 }
#define UI(n, t, c) \
  { n, t, T_UINT, sizeof(c), sizeof(c), 0 }
#define PAIR(n, t, s, v) \
  { n, t, T_PAIR, sizeof(s), sizeof(v), offsetof(s, i) }
static rtype_t rtypes[] = {
    SI("MPI_INT8_T", MPI_INT8_T, int8_t),
    SI("MPI_INT16_T", MPI_INT16_T, int16_t),
    SI("MPI_INT32_T", MPI_INT32_T, int32_t),
    SI("MPI_INT64_T", MPI_INT64_T, int64_t),
    UI("MPI_UINT8_T", MPI_UINT8_T, uint8_t),
    UI("MPI_UINT16_T", MPI_UINT16_T, uint16_t),
    UI("MPI_UINT32_T", MPI_UINT32_T, uint32_t),
    UI("MPI_UINT64_T", MPI_UINT64_T, uint64_t),
    SI("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, signed char),
    UI("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, unsigned char),
    SI("MPI_SHORT", MPI_SHORT, short),
    UI("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, unsigned short),
    SI("MPI_INT", MPI_INT, int),
    UI("MPI_UNSIGNED", MPI_UNSIGNED, unsigned),
    SI("MPI_LONG", MPI_LONG, long),
    UI("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, unsigned long),
    SI("MPI_LONG_LONG", MPI_LONG_LONG, long long),
    UI("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, unsigned long long),
    {"MPI_FLOAT", MPI_FLOAT, T_FLOAT, 4, 4, 0},
    {"MPI_DOUBLE", MPI_DOUBLE, T_FLOAT, 8, 8, 0},
    {"MPI_C_BOOL", MPI_C_BOOL, T_BOOL, sizeof(bool), sizeof(bool), 0},
    {"MPI_BYTE", MPI_BYTE, T_BYTE, 1, 1, 0},
    PAIR("MPI_FLOAT_INT", MPI_FLOAT_INT, float_int_t, float),
    PAIR("MPI_DOUBLE_INT", MPI_DOUBLE_INT, double_int_t, double),
    PAIR("MPI_LONG_INT", MPI_LONG_INT, long_int_t, long),
    PAIR("MPI_SHORT_INT", MPI_SHORT_INT, short_int_t, short),
    PAIR("MPI_2INT", MPI_2INT, int_int_t, int),
    SI("MPI_AINT", MPI_AINT, MPI_Aint),
    SI("MPI_OFFSET", MPI_OFFSET, MPI_Offset),
    SI("MPI_COUNT", MPI_COUNT, MPI_Count),
    {"MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, T_CPLX, 2 * sizeof(float), sizeof(float), 0},
    {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, T_CPLX, 2 * sizeof(double), sizeof(double), 0},
};

typedef enum { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MAXLOC, O_MINLOC } opid_t;
static const char *opnames[] = {"SUM",  "PROD", "MAX", "MIN",  "LAND",   "LOR",
                                "LXOR", "BAND", "BOR", "BXOR", "MAXLOC", "MINLOC"};
static MPI_Op mpiop(opid_t o) {
  MPI_Op ops[] = {MPI_SUM,  MPI_PROD, MPI_MAX, MPI_MIN,  MPI_LAND,   MPI_LOR,
                  MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC};
  return ops[o];
}

/* The pairs MPI defines (MPI-3.1 section 5.9.2). */
static bool op_allowed(tclass_t c, opid_t o) {
  switch (c) {
    case T_SINT:
    case T_UINT:
      return o <= O_BXOR;
    case T_FLOAT:
      return o <= O_MIN;
    case T_BOOL:
      return o >= O_LAND && o <= O_LXOR;
    case T_BYTE:
      return o >= O_BAND && o <= O_BXOR;
    case T_PAIR:
      return o >= O_MAXLOC;
    case T_CPLX:
      return o <= O_PROD;
  }
  return false;
}

/* Values read and written through the widest type of their class. */
static long double vget(const rtype_t *t, const void *p) {
  switch (t->cls) {
    case T_SINT:
      switch (t->size) {
        case 1:
          return *(const int8_t *)p;
        case 2:
          return *(const int16_t *)p;
        case 4:
          return *(const int32_t *)p;
        default:
          return *(const int64_t *)p;
      }
    case T_UINT:
    case T_BYTE:
      switch (t->size) {
        case 1:
          return *(const uint8_t *)p;
        case 2:
          return *(const uint16_t *)p;
        case 4:
          return *(const uint32_t *)p;
        default:
          return *(const uint64_t *)p;
      }
    case T_BOOL:
      return *(const bool *)p;
    case T_FLOAT:
      return t->size == 4 ? *(const float *)p : *(const double *)p;
    case T_CPLX: /* complex values go through cget and cset */
      break;
    case T_PAIR:
      switch (t->vsize) {
        case 2:
          return *(const short *)p;
        case 4:
          return strcmp(t->name, "MPI_FLOAT_INT") == 0 ? *(const float *)p : *(const int *)p;
        default:
          return strcmp(t->name, "MPI_DOUBLE_INT") == 0 ? *(const double *)p : *(const long *)p;
      }
  }
  return 0;
}
static void vset(const rtype_t *t, void *p, long double v) {
  switch (t->cls) {
    case T_SINT:
    case T_UINT:
    case T_BYTE: {
      uint64_t u = (uint64_t)(int64_t)v; /* two's complement wrap, as the types do */
      memcpy(p, &u, t->size);            /* little endian */
      return;
    }
    case T_BOOL:
      *(bool *)p = v != 0;
      return;
    case T_FLOAT:
      if (t->size == 4)
        *(float *)p = (float)v;
      else
        *(double *)p = (double)v;
      return;
    case T_CPLX: /* complex values go through cget and cset */
      return;
    case T_PAIR:
      switch (t->vsize) {
        case 2:
          *(short *)p = (short)v;
          return;
        case 4:
          if (strcmp(t->name, "MPI_FLOAT_INT") == 0)
            *(float *)p = (float)v;
          else
            *(int *)p = (int)v;
          return;
        default:
          if (strcmp(t->name, "MPI_DOUBLE_INT") == 0)
            *(double *)p = (double)v;
          else
            *(long *)p = (long)v;
          return;
      }
  }
}
static uint64_t ubits(const rtype_t *t, const void *p) {
  uint64_t u = 0;
  memcpy(&u, p, t->size);
  return u;
}

/* Complex values: real and imaginary parts as doubles. */
static void cget(const rtype_t *t, const void *p, double *re, double *im) {
  if (t->vsize == sizeof(float)) {
    *re = ((const float *)p)[0];
    *im = ((const float *)p)[1];
  } else {
    *re = ((const double *)p)[0];
    *im = ((const double *)p)[1];
  }
}
static void cset(const rtype_t *t, void *p, double re, double im) {
  if (t->vsize == sizeof(float)) {
    ((float *)p)[0] = (float)re;
    ((float *)p)[1] = (float)im;
  } else {
    ((double *)p)[0] = re;
    ((double *)p)[1] = im;
  }
}

/* The input of `r` at element i: small values keep every sum and product exact and in range. */
static void input(const rtype_t *t, opid_t o, int r, size_t i, void *p, uint64_t salt) {
  uint64_t x = rnd(r, i, salt);
  memset(p, 0, t->size);
  if (t->cls == T_CPLX) { /* parts of +-1 keep products of 8 ranks within 2^4 */
    if (o == O_PROD)
      cset(t, p, x % 2 ? 1 : -1, (x >> 1) % 2 ? 1 : -1);
    else
      cset(t, p, (int)(x % 17) - 8, (int)((x >> 8) % 17) - 8);
    return;
  }
  if (o >= O_BAND && o <= O_BXOR) {
    memcpy(p, &x, t->size);
    return;
  }
  long double v;
  if (o == O_PROD) {
    static const int s1[] = {-1, 1}, s2[] = {-2, -1, 1, 2}, u[] = {1, 2, 3};
    v = t->cls == T_UINT ? u[x % 3] : t->size == 1 ? s1[x % 2] : s2[x % 4];
    if (t->cls == T_UINT && t->size == 1) v = 1 + x % 2;
  } else if (o >= O_LAND && o <= O_LXOR) {
    v = t->cls == T_BOOL ? (long double)(x % 2) : (long double)((x % 3) == 2 ? 3 : x % 3);
  } else {
    v = t->cls == T_UINT ? (long double)(x % 17) : (long double)((int)(x % 17) - 8);
    /* Open MPI 4.1.4's own MAX and MIN compare MPI_OFFSET as unsigned (seen without coll/gpu): staging
     * hands the data to that code, so negative offsets would test Open MPI, not coll/gpu */
    if (t->type == MPI_OFFSET && (o == O_MAX || o == O_MIN)) v = (long double)(x % 17);
  }
  vset(t, p, v);
  if (t->cls == T_PAIR) {
    int idx = (int)(rnd(r, i, salt + 1) % 4); /* few distinct indices: ties exercise the rule */
    memcpy((char *)p + t->ioff, &idx, sizeof(int));
  }
}

/* acc = acc op x, in the reference arithmetic. */
static void combine(const rtype_t *t, opid_t o, void *acc, const void *x) {
  if (t->cls == T_CPLX) {
    double ar, ai, br, bi;
    cget(t, acc, &ar, &ai);
    cget(t, x, &br, &bi);
    if (o == O_SUM)
      cset(t, acc, ar + br, ai + bi);
    else
      cset(t, acc, ar * br - ai * bi, ar * bi + ai * br);
    return;
  }
  if (o >= O_BAND && o <= O_BXOR) {
    uint64_t a = ubits(t, acc), b = ubits(t, x);
    uint64_t r = o == O_BAND ? (a & b) : o == O_BOR ? (a | b) : (a ^ b);
    memcpy(acc, &r, t->size);
    return;
  }
  long double a = vget(t, acc), b = vget(t, x), r = 0;
  switch (o) {
    case O_SUM:
      r = a + b;
      break;
    case O_PROD:
      r = a * b;
      break;
    case O_MAX:
      r = a > b ? a : b;
      break;
    case O_MIN:
      r = a < b ? a : b;
      break;
    case O_LAND:
      r = (a != 0) && (b != 0);
      break;
    case O_LOR:
      r = (a != 0) || (b != 0);
      break;
    case O_LXOR:
      r = (a != 0) != (b != 0);
      break;
    case O_MAXLOC:
    case O_MINLOC: {
      int ia, ib;
      memcpy(&ia, (char *)acc + t->ioff, sizeof(int));
      memcpy(&ib, (const char *)x + t->ioff, sizeof(int));
      bool take = o == O_MAXLOC ? b > a : b < a;
      if (a == b) take = ib < ia;
      if (take) memcpy(acc, x, t->size);
      return;
    }
    default:
      break;
  }
  vset(t, acc, r);
}

/* Reference of elements [first, first + n) folded over ranks [r0, r1). */
static void reference(const rtype_t *t, opid_t o, int r0, int r1, size_t first, size_t n, char *out, uint64_t salt) {
  char x[32];
  for (size_t i = 0; i < n; ++i) {
    char *acc = out + i * t->size;
    input(t, o, r0, first + i, acc, salt);
    for (int r = r0 + 1; r < r1; ++r) {
      input(t, o, r, first + i, x, salt);
      combine(t, o, acc, x);
    }
  }
}

/* Turns every negative floating-point zero in n bytes of values into +0. */
static void unzero(const rtype_t *t, char *p, size_t n) {
  if (t->vsize == sizeof(float)) {
    for (float *f = (float *)p; (char *)(f + 1) <= p + n; ++f)
      if (*f == 0) *f = 0;
  } else {
    for (double *d = (double *)p; (char *)(d + 1) <= p + n; ++d)
      if (*d == 0) *d = 0;
  }
}

typedef enum { R_ALLREDUCE, R_REDUCE, R_SCAN, R_EXSCAN, R_RSB, R_RS } rcoll_t;
static const char *rcoll_names[] = {"allreduce", "reduce", "scan", "exscan", "reduce_scatter_block", "reduce_scatter"};

static int rs_count(int r, int block) { return block + (r % 3) - 1 > 0 ? block + (r % 3) - 1 : 0; }

static void run_reduction(rcoll_t c, const rtype_t *t, opid_t o, int count, bool inplace, bool nb, int root) {
  char what[256];
  snprintf(what, sizeof(what), "%s%s %s %s count %d%s root %d", nb ? "i" : "", rcoll_names[c], t->name, opnames[o],
           count, inplace ? " in place" : "", root);
  if (verbose) fprintf(stderr, "[rank %d] %s\n", rank, what);
  uint64_t salt = rnd(c, o, (uint64_t)count * 131 + (t - rtypes));
  int *rcounts = malloc(sizeof(int) * nranks);
  size_t total = (size_t)count, mine = (size_t)count, myfirst = 0;
  if (c == R_RSB) {
    total = (size_t)count * nranks;
    myfirst = (size_t)count * rank;
  }
  if (c == R_RS) {
    total = 0;
    for (int r = 0; r < nranks; ++r) {
      rcounts[r] = rs_count(r, count);
      if (r < rank) myfirst += rcounts[r];
      total += rcounts[r];
    }
    mine = rcounts[rank];
  }
  size_t es = t->size;
  buf_t sb = buf_new(total * es), rb = buf_new(total * es);
  for (size_t i = 0; i < total; ++i) input(t, o, rank, i, sb.img + i * es, salt);
  if (inplace) memcpy(rb.img, sb.img, total * es);
  buf_push(&sb);
  buf_push(&rb);
  const void *s = inplace ? MPI_IN_PLACE : sb.dev;
  MPI_Request req;
  int err = MPI_SUCCESS;
  switch (c) {
    case R_ALLREDUCE:
      err = nb ? MPI_Iallreduce(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD, &req)
               : MPI_Allreduce(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD);
      break;
    case R_REDUCE:
      if (inplace && rank != root) s = sb.dev;
      err = nb ? MPI_Ireduce(s, rb.dev, count, t->type, mpiop(o), root, MPI_COMM_WORLD, &req)
               : MPI_Reduce(s, rb.dev, count, t->type, mpiop(o), root, MPI_COMM_WORLD);
      break;
    case R_SCAN:
      err = nb ? MPI_Iscan(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD, &req)
               : MPI_Scan(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD);
      break;
    case R_EXSCAN:
      err = nb ? MPI_Iexscan(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD, &req)
               : MPI_Exscan(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD);
      break;
    case R_RSB:
      err = nb ? MPI_Ireduce_scatter_block(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD, &req)
               : MPI_Reduce_scatter_block(s, rb.dev, count, t->type, mpiop(o), MPI_COMM_WORLD);
      break;
    case R_RS:
      err = nb ? MPI_Ireduce_scatter(s, rb.dev, rcounts, t->type, mpiop(o), MPI_COMM_WORLD, &req)
               : MPI_Reduce_scatter(s, rb.dev, rcounts, t->type, mpiop(o), MPI_COMM_WORLD);
      break;
  }
  if (err == MPI_SUCCESS && nb) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  checks++;
  if (err != MPI_SUCCESS) fail(what, "returned an error");
  /* expected receive image: what it held, with the result where MPI defines one */
  char *want = malloc(total * es + 1);
  memcpy(want, rb.img, total * es);
  switch (c) {
    case R_ALLREDUCE:
      reference(t, o, 0, nranks, 0, mine, want, salt);
      break;
    case R_REDUCE:
      if (rank == root) reference(t, o, 0, nranks, 0, mine, want, salt);
      break;
    case R_SCAN:
      reference(t, o, 0, rank + 1, 0, mine, want, salt);
      break;
    case R_EXSCAN:
      if (rank > 0) reference(t, o, 0, rank, 0, mine, want, salt);
      break;
    case R_RSB:
    case R_RS:
      reference(t, o, 0, nranks, myfirst, mine, want, salt);
      break;
  }
  /* padding inside pair structs is not part of the datatype: it keeps the bytes it had */
  if (t->cls == T_PAIR) {
    for (size_t i = 0; i < total; ++i) {
      memcpy(want + i * es + t->vsize, rb.img + i * es + t->vsize, t->ioff - t->vsize);
      memcpy(want + i * es + t->ioff + sizeof(int), rb.img + i * es + t->ioff + sizeof(int),
             es - t->ioff - sizeof(int));
    }
  }
  /* MPI leaves these undefined: rank 0 of exscan; in place, the input part of reduce_scatter(_block) past
   * this rank's block; only the result part is compared there */
  size_t cmp = total * es;
  if (c == R_EXSCAN && rank == 0) cmp = 0;
  if (c == R_RSB || c == R_RS) cmp = mine * es;
  tbuf_get(rb.k, rb.img, rb.dev, rb.bytes);
  if (t->cls == T_FLOAT || t->cls == T_CPLX) { /* -0 and +0 are one value: which one depends on the order */
    unzero(t, rb.img, cmp);
    unzero(t, want, cmp);
  }
  check_bytes(what, rb.img, want, cmp);
  free(want);
  free(rcounts);
  buf_free(&sb);
  buf_free(&rb);
}

static void test_reductions(void) {
  const int counts[] = {0, 1, 7, 1000};
  for (size_t ti = 0; ti < sizeof(rtypes) / sizeof(rtypes[0]); ++ti) {
    for (int o = 0; o <= O_MINLOC; ++o) {
      if (!op_allowed(rtypes[ti].cls, (opid_t)o)) continue;
      for (int c = R_ALLREDUCE; c <= R_RS; ++c) {
        for (int v = 0; v < 4; ++v) { /* blocking/nonblocking x in place or not */
          bool nb = v & 1, inplace = v & 2;
          if (c == R_EXSCAN && inplace && nranks > 8) continue;
          int count = counts[(ti + o + c + v) % 4]; /* every count reaches every collective */
          run_reduction((rcoll_t)c, &rtypes[ti], (opid_t)o, count, inplace, nb, (int)((ti + o) % nranks));
        }
      }
    }
  }
  /* every count on allreduce, one type */
  for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k)
    run_reduction(R_ALLREDUCE, &rtypes[12], O_SUM, counts[k] * 3 + 1, false, false, 0);
  run_reduction(R_ALLREDUCE, &rtypes[19], O_SUM, 65537, false, false, 0);
  run_reduction(R_ALLREDUCE, &rtypes[19], O_MAX, 1 << 20, true, true, 0);
}

/* ======================================================================== data movement */

/* Layouts of one element: ints at off[j]; base pointers are moved by `shift` so that the lowest byte
 * touched is the first byte of the allocation. */
typedef struct {
  const char *name;
  MPI_Datatype type;
  int nint;
  ptrdiff_t off[2];
  ptrdiff_t extent;
  ptrdiff_t shift;
} layout_t;
static layout_t layouts[3];

static void make_layouts(void) {
  layouts[0] = (layout_t){"MPI_INT", MPI_INT, 1, {0, 0}, 4, 0};
  /* two ints with a hole of 4 bytes between, and 4 bytes of tail: extent 16 */
  MPI_Datatype vec, vecr;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, 16, &vecr);
  MPI_Type_commit(&vecr);
  MPI_Type_free(&vec);
  layouts[1] = (layout_t){"vector with holes", vecr, 2, {0, 8}, 16, 0};
  /* negative lower bound: ints at -8 and +4, lb -8, extent 16 */
  MPI_Datatype neg;
  int bl[2] = {1, 1};
  MPI_Aint disp[2] = {-8, 4};
  MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &neg);
  MPI_Type_commit(&neg);
  layouts[2] = (layout_t){"negative lb", neg, 2, {-8, 4}, 16, 8};
}

static int val(int origin, size_t elem, int j, uint64_t salt) {
  return (int)(rnd(origin, elem * 2 + j, salt) & 0x7fffffff);
}

/* Writes element `elem` of origin into a host image at element slot `slot`. */
static void put_elem(const layout_t *L, char *base, size_t slot, int origin, size_t elem, uint64_t salt) {
  for (int j = 0; j < L->nint; ++j) {
    int v = val(origin, elem, j, salt);
    memcpy(base + (ptrdiff_t)slot * L->extent + L->off[j], &v, sizeof(int));
  }
}

static size_t alloc_bytes(const layout_t *L, size_t nelem) { return nelem * L->extent + 32; }

typedef enum {
  D_BCAST,
  D_GATHER,
  D_SCATTER,
  D_ALLGATHER,
  D_ALLTOALL,
  D_GATHERV,
  D_SCATTERV,
  D_ALLGATHERV,
  D_ALLTOALLV,
  D_ALLTOALLW
} dcoll_t;
static const char *dcoll_names[] = {"bcast",   "gather",   "scatter",    "allgather", "alltoall",
                                    "gatherv", "scatterv", "allgatherv", "alltoallv", "alltoallw"};

/* The v collectives use counts c + (r % 3) - 1 and leave one element of gap between blocks. */
static int vcount(int c, int r) {
  int n = c + (r % 3) - 1;
  return n < 0 ? 0 : n;
}

static void run_move(dcoll_t c, const layout_t *L, int count, bool inplace, bool nb, int root) {
  char what[256];
  snprintf(what, sizeof(what), "%s%s %s count %d%s root %d", nb ? "i" : "", dcoll_names[c], L->name, count,
           inplace ? " in place" : "", root);
  if (verbose) fprintf(stderr, "[rank %d] %s\n", rank, what);
  uint64_t salt = rnd(100 + c, count, (uint64_t)(L - layouts) * 7 + inplace);
  int n = nranks;
  int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n), *rcnt = malloc(sizeof(int) * n),
      *rdsp = malloc(sizeof(int) * n);
  MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * n);
  int vtotal = 0;
  for (int r = 0; r < n; ++r) {
    cnt[r] = vcount(count, r);
    dsp[r] = vtotal;
    vtotal += cnt[r] + 1;
    types[r] = L->type;
  }
  /* alltoallv/w: rank s sends vcount(count, s + d) elements to d */
  int stotal = 0, rtotal = 0;
  int *scnt = malloc(sizeof(int) * n), *sdsp = malloc(sizeof(int) * n);
  for (int d = 0; d < n; ++d) {
    scnt[d] = vcount(count, rank + d);
    sdsp[d] = stotal;
    stotal += scnt[d] + 1;
    rcnt[d] = vcount(count, d + rank);
    rdsp[d] = rtotal;
    rtotal += rcnt[d] + 1;
  }
  size_t selems = 0, relems = 0;
  switch (c) {
    case D_BCAST:
      selems = relems = count;
      break;
    case D_GATHER:
    case D_ALLGATHER:
      selems = count;
      relems = (size_t)count * n;
      break;
    case D_SCATTER:
      selems = (size_t)count * n;
      relems = count;
      break;
    case D_ALLTOALL:
      selems = relems = (size_t)count * n;
      break;
    case D_GATHERV:
    case D_ALLGATHERV:
      selems = cnt[rank];
      relems = vtotal;
      break;
    case D_SCATTERV:
      selems = vtotal;
      relems = cnt[rank];
      break;
    case D_ALLTOALLV:
    case D_ALLTOALLW:
      selems = stotal;
      relems = rtotal;
      break;
  }
  buf_t sb = buf_new(alloc_bytes(L, selems)), rb = buf_new(alloc_bytes(L, relems));
  char *simg = sb.img + L->shift, *rimg = rb.img + L->shift;
  char *sdev = sb.dev + L->shift, *rdev = rb.dev + L->shift;
  /* send data: element e of rank r holds val(r, e) */
  for (size_t e = 0; e < selems; ++e) put_elem(L, simg, e, rank, e, salt);
  if (c == D_BCAST && rank == root)
    for (size_t e = 0; e < relems; ++e) put_elem(L, rimg, e, rank, e, salt);
  /* in place: the receive buffer holds what this rank contributes, where it belongs */
  if (inplace) {
    switch (c) {
      case D_GATHER:
      case D_ALLGATHER:
        for (int e = 0; e < count; ++e) put_elem(L, rimg, (size_t)rank * count + e, rank, e, salt);
        break;
      case D_GATHERV:
      case D_ALLGATHERV:
        for (int e = 0; e < cnt[rank]; ++e) put_elem(L, rimg, dsp[rank] + e, rank, e, salt);
        break;
      case D_ALLTOALL:
        for (size_t e = 0; e < relems; ++e) put_elem(L, rimg, e, rank, e, salt);
        break;
      default:
        break; /* scatter(v): the root's block stays in its send buffer */
    }
  }
  buf_push(&sb);
  buf_push(&rb);
  /* expected receive image */
  char *want = malloc(rb.bytes > sb.bytes ? rb.bytes : sb.bytes);
  memcpy(want, rb.img, rb.bytes);
  char *wimg = want + L->shift;
  switch (c) {
    case D_BCAST:
      for (size_t e = 0; e < relems; ++e) put_elem(L, wimg, e, root, e, salt);
      break;
    case D_GATHER:
    case D_ALLGATHER:
      if (c == D_ALLGATHER || rank == root)
        for (int r = 0; r < n; ++r)
          for (int e = 0; e < count; ++e) put_elem(L, wimg, (size_t)r * count + e, r, e, salt);
      break;
    case D_SCATTER:
      if (!(inplace && rank == root))
        for (int e = 0; e < count; ++e) put_elem(L, wimg, e, root, (size_t)rank * count + e, salt);
      break;
    case D_ALLTOALL:
      for (int r = 0; r < n; ++r)
        for (int e = 0; e < count; ++e) put_elem(L, wimg, (size_t)r * count + e, r, (size_t)rank * count + e, salt);
      break;
    case D_GATHERV:
    case D_ALLGATHERV:
      if (c == D_ALLGATHERV || rank == root)
        for (int r = 0; r < n; ++r)
          for (int e = 0; e < cnt[r]; ++e) put_elem(L, wimg, dsp[r] + e, r, e, salt);
      break;
    case D_SCATTERV:
      if (!(inplace && rank == root))
        for (int e = 0; e < cnt[rank]; ++e) put_elem(L, wimg, e, root, dsp[rank] + e, salt);
      break;
    case D_ALLTOALLV:
    case D_ALLTOALLW:
      for (int s = 0; s < n; ++s) {
        /* rank s placed our block at its sdsp[rank] = sum over d < rank of (vcount(count, s + d) + 1) */
        int off = 0;
        for (int d = 0; d < rank; ++d) off += vcount(count, s + d) + 1;
        for (int e = 0; e < rcnt[s]; ++e) put_elem(L, wimg, rdsp[s] + e, s, off + e, salt);
      }
      break;
  }
  const void *s = inplace && (c != D_SCATTER && c != D_SCATTERV) ? MPI_IN_PLACE : sdev;
  void *r = rdev;
  if (inplace && (c == D_GATHER || c == D_GATHERV) && rank != root) s = sdev;
  if (inplace && (c == D_SCATTER || c == D_SCATTERV) && rank == root) r = MPI_IN_PLACE;
  int *wsd = malloc(sizeof(int) * n), *wrd = malloc(sizeof(int) * n);
  for (int d = 0; d < n; ++d) {
    wsd[d] = (int)(sdsp[d] * L->extent);
    wrd[d] = (int)(rdsp[d] * L->extent);
  }
  MPI_Datatype T = L->type;
  MPI_Comm W = MPI_COMM_WORLD;
  MPI_Request req;
  int err = MPI_SUCCESS;
  switch (c) {
    case D_BCAST:
      err = nb ? MPI_Ibcast(rdev, count, T, root, W, &req) : MPI_Bcast(rdev, count, T, root, W);
      break;
    case D_GATHER:
      err = nb ? MPI_Igather(s, count, T, r, count, T, root, W, &req) : MPI_Gather(s, count, T, r, count, T, root, W);
      break;
    case D_SCATTER:
      err = nb ? MPI_Iscatter(s, count, T, r, count, T, root, W, &req) : MPI_Scatter(s, count, T, r, count, T, root, W);
      break;
    case D_ALLGATHER:
      err = nb ? MPI_Iallgather(s, count, T, r, count, T, W, &req) : MPI_Allgather(s, count, T, r, count, T, W);
      break;
    case D_ALLTOALL:
      err = nb ? MPI_Ialltoall(s, count, T, r, count, T, W, &req) : MPI_Alltoall(s, count, T, r, count, T, W);
      break;
    case D_GATHERV:
      err = nb ? MPI_Igatherv(s, cnt[rank], T, r, cnt, dsp, T, root, W, &req)
               : MPI_Gatherv(s, cnt[rank], T, r, cnt, dsp, T, root, W);
      break;
    case D_SCATTERV:
      err = nb ? MPI_Iscatterv(s, cnt, dsp, T, r, cnt[rank], T, root, W, &req)
               : MPI_Scatterv(s, cnt, dsp, T, r, cnt[rank], T, root, W);
      break;
    case D_ALLGATHERV:
      err = nb ? MPI_Iallgatherv(s, cnt[rank], T, r, cnt, dsp, T, W, &req)
               : MPI_Allgatherv(s, cnt[rank], T, r, cnt, dsp, T, W);
      break;
    case D_ALLTOALLV:
      err = nb ? MPI_Ialltoallv(s, scnt, sdsp, T, r, rcnt, rdsp, T, W, &req)
               : MPI_Alltoallv(s, scnt, sdsp, T, r, rcnt, rdsp, T, W);
      break;
    case D_ALLTOALLW:
      err = nb ? MPI_Ialltoallw(s, scnt, wsd, types, r, rcnt, wrd, types, W, &req)
               : MPI_Alltoallw(s, scnt, wsd, types, r, rcnt, wrd, types, W);
      break;
  }
  if (err == MPI_SUCCESS && nb) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  checks++;
  if (err != MPI_SUCCESS) fail(what, "returned an error");
  buf_check(what, &rb, want);
  /* the send buffer is never written */
  memcpy(want, sb.img, sb.bytes);
  buf_check(what, &sb, want);
  free(want);
  free(cnt);
  free(dsp);
  free(rcnt);
  free(rdsp);
  free(scnt);
  free(sdsp);
  free(types);
  free(wsd);
  free(wrd);
  buf_free(&sb);
  buf_free(&rb);
}

static void test_moves(void) {
  const int counts[] = {0, 1, 5, 300};
  for (int c = D_BCAST; c <= D_ALLTOALLW; ++c) {
    for (int l = 0; l < 3; ++l) {
      for (int v = 0; v < 4; ++v) {
        bool nb = v & 1, inplace = v & 2;
        if (inplace && c == D_BCAST) continue;
        if (inplace && (c == D_ALLTOALLV || c == D_ALLTOALLW))
          continue; /* in place needs equal send and receive counts */
        for (int k = 0; k < 4; ++k) run_move((dcoll_t)c, &layouts[l], counts[k], inplace, nb, (c + l + v + k) % nranks);
      }
    }
  }
}

/* A legal program posts a nonblocking collective, then waits on point-to-point traffic that the other
 * rank sends before joining the collective: nothing may block inside the nonblocking call. */
static void test_nonblocking_progress(void) {
  if (nranks < 2) return;
  buf_t sb = buf_new(64 * sizeof(int)), rb = buf_new(64 * sizeof(int));
  for (int i = 0; i < 64; ++i) ((int *)sb.img)[i] = rank + i;
  buf_push(&sb);
  MPI_Request req;
  int token = 0;
  if (rank == 0) {
    MPI_Iallreduce(sb.dev, rb.dev, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Recv(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    if (rank == 1) MPI_Send(&rank, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    MPI_Iallreduce(sb.dev, rb.dev, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  int want[64];
  for (int i = 0; i < 64; ++i) want[i] = nranks * (nranks - 1) / 2 + nranks * i;
  buf_check("iallreduce then point-to-point", &rb, want);
  buf_free(&sb);
  buf_free(&rb);
}

/* A broadcast of more than 2^31 bytes: byte counts must not be truncated to int anywhere. */
static void test_large(void) {
  const int count = (1 << 28) + 5; /* doubles: 2 GiB + 40 bytes */
  const size_t bytes = (size_t)count * sizeof(double);
  buf_t b = buf_new(bytes);
  int root = nranks - 1;
  double *img = (double *)b.img;
  if (rank == root)
    for (int i = 0; i < count; ++i) img[i] = (double)(rnd(7, i, 0) >> 11);
  buf_push(&b);
  checks++;
  if (MPI_Bcast(b.dev, count, MPI_DOUBLE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
    fail("large bcast", "returned an error");
  double *want = malloc(bytes);
  for (int i = 0; i < count; ++i) want[i] = (double)(rnd(7, i, 0) >> 11);
  buf_check("bcast of 2^31 + 40 bytes", &b, want);
  free(want);
  buf_free(&b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  kind = TBUF_HOST;
  unsigned long long s = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
  if (getenv("TEST_SEED")) s = strtoull(getenv("TEST_SEED"), NULL, 0);
  int opt;
  bool large = false;
  while ((opt = getopt(argc, argv, "m:s:vL")) != -1) {
    if (opt == 'L') large = true;
    if (opt == 'm' && tbuf_parse_kind(optarg, &kind) != 0) {
      fprintf(stderr, "unknown or unavailable memory kind '%s'\n", optarg);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (opt == 's') s = strtoull(optarg, NULL, 0);
    if (opt == 'v') verbose = true;
  }
  /* a collective before CUDA is loaded: coll/gpu must notice libcuda arriving after it started */
  MPI_Bcast(&s, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
#ifdef TEST_WITH_CUDA
  int ndev = 0;
  TBUF_CHECK(cudaGetDeviceCount(&ndev));
  TBUF_CHECK(cudaSetDevice(rank % ndev));
#endif
  seed = s;
  alarm(600); /* a hang becomes a failure, never a stuck test run */
  make_layouts();
  if (large) {
    test_large();
  } else {
    test_reductions();
    test_moves();
    test_nonblocking_progress();
  }
  long totals[2] = {checks, failures}, all[2];
  MPI_Allreduce(totals, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_colls: %d ranks, %s memory, seed %llu: %ld checks, %ld failed\n", nranks, tbuf_kind_name(kind), s,
           all[0], all[1]);
  MPI_Type_free(&layouts[1].type);
  MPI_Type_free(&layouts[2].type);
  MPI_Finalize();
  return all[1] == 0 ? 0 : 1;
}
