/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Reductions: allreduce, reduce, scan, exscan, reduce_scatter(_block), blocking and nonblocking, in
 * place and not, for every predefined type and op pair MPI allows, against a reference computed here
 * in exact arithmetic (small integer inputs).
 */
#include <stddef.h>

#include "test/mpi/colls.h"

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
    /* Open MPI 4.1.4's AVX ops add 8- and 16-bit integers saturating instead of wrapping (seen without
     * coll/gpu: MPI_Reduce_local of 250 + 10 as MPI_UINT8_T gives 255; with --mca op ^avx, 4): staging hands
     * the data to that code, so 8-bit sums stay in range: up to 8 ranks the values above do, beyond them
     * smaller ones */
    if (o == O_SUM && t->size == 1 && nranks > 8) {
      const int most = (t->cls == T_UINT ? 255 : 127) / nranks;
      v = t->cls == T_UINT ? (long double)(x % (uint64_t)(most + 1))
                           : (long double)((int)(x % (uint64_t)(2 * most + 1)) - most);
    }
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
  /* -G: reductions with a GPU path on types the kernels take stage nothing, and so do the nonblocking ones on device
   * memory on one host (MPI_Reduce_scatter with counts that differ is staged beyond 8 ranks; in place, up to 8, it
   * reduces from a copy of its input) */
  const bool gpu_type = t->type == MPI_FLOAT || t->type == MPI_DOUBLE || t->type == MPI_INT32_T ||
                        t->type == MPI_INT64_T || t->type == MPI_UINT8_T;
  bool equal = true;
  for (int r = 0; c == R_RS && r < nranks; ++r) equal = equal && rcounts[r] == rcounts[0];
  const bool must_gpu = gpu_path && total > 0 && gpu_type && (!nb || (kind == TBUF_DEVICE && one_host())) &&
                        (c == R_ALLREDUCE || c == R_REDUCE || c == R_RSB ||
                         (c == R_RS && ((!inplace && (nranks <= 8 || equal)) || (inplace && !equal && nranks <= 8))));
  const unsigned long long staged_before = must_gpu ? staged_count() : 0;
  random_gap(salt + 31 * (uint64_t)root + nb);
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
  if (must_gpu) {
    checks++;
    if (staged_count() != staged_before) fail(what, "staged its buffers: the GPU path did not run");
  }
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

void test_reductions(void) {
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
  /* reduce and reduce-scatter past one LL slot and one ring step, at every root, unaligned blocks */
  for (int root = 0; root < nranks; ++root)
    run_reduction(R_REDUCE, &rtypes[18], O_SUM, 65537 + root, root % 2 == 1, false, root);
  run_reduction(R_REDUCE, &rtypes[26], O_MINLOC, 40001, false, false, nranks - 1);
  run_reduction(R_RSB, &rtypes[19], O_MAX, 30001, false, false, 0);
  run_reduction(R_RSB, &rtypes[12], O_SUM, 1 << 16, true, false, 0);
  run_reduction(R_RS, &rtypes[10], O_PROD, 50001, false, false, 0);
  run_reduction(R_RS, &rtypes[23], O_MAXLOC, 20000, true, false, 0);
}
