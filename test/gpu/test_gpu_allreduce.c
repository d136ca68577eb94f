/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * MPI_Allreduce on device buffers through coll/gpu: every predefined type and op the GPU path takes,
 * counts from 1 to 2^20 + 5 (2^28 with -L), in place and not, buffers offset by 0 to 15 bytes, checked
 * element by element against a host reference computed here from every rank's inputs (drawn fresh
 * from a seed rank 0 broadcasts), outputs poisoned first, and results compared bit for bit across ranks.
 *
 * usage: test_gpu_allreduce [-m device|mixed] [-L] [-r GAP_US]
 *   -m mixed   even ranks pass host memory, odd ranks device memory (the path agreement must stage)
 *   -L         also 2^28 elements (MPI_UINT8_T, MPI_SUM)
 *   -r GAP_US  instead, 600 calls of one-shot sizes (random type, op, count, offsets, in place or not)
 *              on buffers allocated once, then 8 calls of each size from 4 B to 256 KiB, each rank
 *              waiting a random 0 to GAP_US microseconds before each call: with GAP_US about twice
 *              coll_gpu_oneshot_linger_us, a lingering kernel leaves just as calls arrive, and calls
 *              outgrow its blocks
 * Late and dead ranks: test_late.c.
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/common/tbuf.h"

typedef struct {
  const char *name;
  MPI_Datatype dt;
  int kind; /* 'i' signed, 'u' unsigned, 'f' float, 'd' double, 'b' bool, 'p' pair */
  size_t size;
  size_t vsize; /* pairs: size of the value part */
} type_t;

typedef struct {
  const char *name;
  MPI_Op op;
} op_t;

static const op_t OPS[] = {{"SUM", MPI_SUM},   {"PROD", MPI_PROD}, {"MAX", MPI_MAX},       {"MIN", MPI_MIN},
                           {"LAND", MPI_LAND}, {"LOR", MPI_LOR},   {"LXOR", MPI_LXOR},     {"BAND", MPI_BAND},
                           {"BOR", MPI_BOR},   {"BXOR", MPI_BXOR}, {"MAXLOC", MPI_MAXLOC}, {"MINLOC", MPI_MINLOC}};
enum { SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC, NOPS };

static bool allowed(const type_t *t, int op) {
  switch (t->kind) {
    case 'i':
    case 'u':
      return op < MAXLOC;
    case 'f':
    case 'd':
      return op <= MIN;
    case 'b':
      return op == LAND || op == LOR || op == LXOR;
    default:
      return op == MAXLOC || op == MINLOC;
  }
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/* Element i of rank r's input, as raw bytes. Floats hold small integers (exact sums and products);
 * pairs hold a small value (ties happen) and the rank as index. */
static void gen(const type_t *t, int op, uint64_t seed, int r, size_t i, void *out) {
  uint64_t h = mix(seed ^ mix((uint64_t)r << 40 ^ i));
  memset(out, 0, t->size);
  switch (t->kind) {
    case 'i':
    case 'u':
      if (op == PROD) h = h % 5; /* keep some products small and some zero */
      if (op >= LAND && op <= LXOR) h = h % 3 == 0 ? 0 : h;
      memcpy(out, &h, t->size);
      break;
    case 'f': {
      float v = (float)((int)(h % 9) - 4);
      memcpy(out, &v, 4);
      break;
    }
    case 'd': {
      double v = (double)((int)(h % 9) - 4);
      memcpy(out, &v, 8);
      break;
    }
    case 'b':
      *(uint8_t *)out = (uint8_t)(h % 2);
      break;
    default: {
      int idx = r;
      int64_t v = (int64_t)(h % 4) - 2;
      if (t->dt == MPI_FLOAT_INT) {
        float f = (float)v;
        memcpy(out, &f, 4);
      } else if (t->dt == MPI_DOUBLE_INT) {
        double d = (double)v;
        memcpy(out, &d, 8);
      } else if (t->dt == MPI_SHORT_INT) {
        short s = (short)v;
        memcpy(out, &s, 2);
      } else {
        memcpy(out, &v, t->vsize); /* long, int: little endian */
      }
      memcpy((char *)out + (t->size == 16 ? 8 : 4), &idx, 4);
    }
  }
}

/* The reference: acc = acc op v, in C on the host. */
#define INT_OP(T)               \
  {                             \
    T a, b;                     \
    memcpy(&a, acc, sizeof(T)); \
    memcpy(&b, v, sizeof(T));   \
    T z = 0;                    \
    switch (op) {               \
      case SUM:                 \
        z = (T)(a + b);         \
        break;                  \
      case PROD:                \
        z = (T)(a * b);         \
        break;                  \
      case MAX:                 \
        z = a > b ? a : b;      \
        break;                  \
      case MIN:                 \
        z = a < b ? a : b;      \
        break;                  \
      case LAND:                \
        z = (T)(a && b);        \
        break;                  \
      case LOR:                 \
        z = (T)(a || b);        \
        break;                  \
      case LXOR:                \
        z = (T)(!a != !b);      \
        break;                  \
      case BAND:                \
        z = (T)(a & b);         \
        break;                  \
      case BOR:                 \
        z = (T)(a | b);         \
        break;                  \
      case BXOR:                \
        z = (T)(a ^ b);         \
        break;                  \
    }                           \
    memcpy(acc, &z, sizeof(T)); \
  }
#define FLOAT_OP(T)             \
  {                             \
    T a, b, z = 0;              \
    memcpy(&a, acc, sizeof(T)); \
    memcpy(&b, v, sizeof(T));   \
    switch (op) {               \
      case SUM:                 \
        z = a + b;              \
        break;                  \
      case PROD:                \
        z = a * b;              \
        break;                  \
      case MAX:                 \
        z = a > b ? a : b;      \
        break;                  \
      case MIN:                 \
        z = a < b ? a : b;      \
        break;                  \
    }                           \
    memcpy(acc, &z, sizeof(T)); \
  }

static double pair_value(const type_t *t, const void *p) {
  if (t->dt == MPI_FLOAT_INT) return *(const float *)p;
  if (t->dt == MPI_DOUBLE_INT) return *(const double *)p;
  if (t->dt == MPI_SHORT_INT) return *(const short *)p;
  if (t->dt == MPI_2INT) return *(const int *)p;
  return (double)*(const long *)p;
}

static void ref_apply(const type_t *t, int op, void *acc, const void *v) {
  switch (t->kind) {
    case 'i':
      if (t->size == 1)
        INT_OP(int8_t)
      else if (t->size == 2)
        INT_OP(int16_t) else if (t->size == 4) INT_OP(int32_t) else INT_OP(int64_t) break;
    case 'u':
    case 'b':
      if (t->size == 1)
        INT_OP(uint8_t)
      else if (t->size == 2)
        INT_OP(uint16_t) else if (t->size == 4) INT_OP(uint32_t) else INT_OP(uint64_t) break;
    case 'f':
      FLOAT_OP(float)
      break;
    case 'd':
      FLOAT_OP(double)
      break;
    default: {
      size_t ioff = t->size == 16 ? 8 : 4;
      double a = pair_value(t, acc), b = pair_value(t, v);
      int ia, ib;
      memcpy(&ia, (char *)acc + ioff, 4);
      memcpy(&ib, (const char *)v + ioff, 4);
      bool take_b = op == MAXLOC ? (b > a || (b == a && ib < ia)) : (b < a || (b == a && ib < ia));
      if (take_b) memcpy(acc, v, t->size);
    }
  }
}

static int rank, nranks;
static long checks, failures;
/* -r: device buffers every call uses, and the largest wait before a call */
static char *pool_s, *pool_r;
static size_t pool_bytes;
static int gap_max_us;

static void spin_us(int us) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static uint64_t fnv(const void *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ULL;
  return h;
}

/* One allreduce, checked. */
static void run(const type_t *t, int op, size_t count, bool in_place, int offset, bool device, uint64_t seed) {
  const size_t bytes = count * t->size;
  /* pairs: only the value and index bytes count (padding is undefined) */
  char *in = malloc(bytes), *expect = malloc(bytes), *got = malloc(bytes), *el = malloc(t->size);
  for (size_t i = 0; i < count; ++i) gen(t, op, seed, rank, i, in + i * t->size);
  for (size_t i = 0; i < count; ++i) {
    char *acc = expect + i * t->size;
    gen(t, op, seed, 0, i, acc);
    for (int r = 1; r < nranks; ++r) {
      gen(t, op, seed, r, i, el);
      ref_apply(t, op, acc, el);
    }
  }
  char *sbase = NULL, *rbase = NULL;
  const int soff = offset, roff = (offset * 7) % 16;
  const bool pooled = device && bytes + 16 <= pool_bytes;
  if (pooled) {
    sbase = pool_s;
    rbase = pool_r;
  } else if (device) {
    TBUF_CHECK(cudaMalloc((void **)&sbase, bytes + 16));
    TBUF_CHECK(cudaMalloc((void **)&rbase, bytes + 16));
  } else {
    sbase = malloc(bytes + 16);
    rbase = malloc(bytes + 16);
  }
  char *s = sbase + soff, *r = rbase + roff;
  if (device) {
    TBUF_CHECK(cudaMemcpy(in_place ? r : s, in, bytes, cudaMemcpyHostToDevice));
    if (!in_place) TBUF_CHECK(cudaMemset(r, 0xA5, bytes)); /* poison */
  } else {
    memcpy(in_place ? r : s, in, bytes);
    if (!in_place) memset(r, 0xA5, bytes);
  }
  if (gap_max_us > 0) spin_us((int)(mix(seed ^ ((uint64_t)rank << 40)) % (uint64_t)(gap_max_us + 1)));
  int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, (int)count, t->dt, OPS[op].op, MPI_COMM_WORLD);
  if (device)
    TBUF_CHECK(cudaMemcpy(got, r, bytes, cudaMemcpyDeviceToHost));
  else
    memcpy(got, r, bytes);
  long bad = rc != MPI_SUCCESS;
  size_t first = 0;
  /* pairs: the value bytes and the index count; padding is no data and is cleared before hashing */
  const size_t vlen = t->kind == 'p' ? t->vsize : t->size, ioff = t->size == 16 ? 8 : 4;
  for (size_t i = 0; i < count; ++i) {
    char *g = got + i * t->size, *e = expect + i * t->size;
    bool ok = memcmp(g, e, vlen) == 0 && (t->kind != 'p' || memcmp(g + ioff, e + ioff, 4) == 0);
    if (!ok && bad++ == 0) first = i;
    if (t->kind == 'p') {
      memset(g + vlen, 0, ioff - vlen);
      memset(g + ioff + 4, 0, t->size - ioff - 4);
    }
  }
  /* bit-identical on every rank */
  uint64_t h = fnv(got, bytes), *all = malloc(nranks * sizeof(uint64_t));
  MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (int q = 0; q < nranks; ++q)
    if (all[q] != all[0]) bad += 1;
  ++checks;
  if (bad) {
    ++failures;
    fprintf(stderr, "rank %d: FAIL %s %s count %zu %s offset %d: rc %d, %ld bad, first at %zu\n", rank, t->name,
            OPS[op].name, count, in_place ? "in place" : "out of place", offset, rc, bad, first);
  }
  free(all);
  if (device && !pooled) {
    cudaFree(sbase);
    cudaFree(rbase);
  } else if (!device) {
    free(sbase);
    free(rbase);
  }
  free(in);
  free(expect);
  free(got);
  free(el);
}

/* -r: one-shot sizes (up to 256 KiB) of a few types and ops, in a random mix. */
static void linger_case(uint64_t seed) {
  static const type_t types[] = {{"FLOAT", MPI_FLOAT, 'f', 4, 0},
                                 {"INT", MPI_INT, 'i', 4, 0},
                                 {"UINT8_T", MPI_UINT8_T, 'u', 1, 0},
                                 {"DOUBLE_INT", MPI_DOUBLE_INT, 'p', 16, 8}};
  static const int ops[] = {SUM, MAX, BOR, MAXLOC};
  pool_bytes = (256 << 10) + 16;
  TBUF_CHECK(cudaMalloc((void **)&pool_s, pool_bytes));
  TBUF_CHECK(cudaMalloc((void **)&pool_r, pool_bytes));
  for (int k = 0; k < 600; ++k) {
    const uint64_t x = mix(seed + 7919 * (uint64_t)k);
    const int ti = (int)(x % 4);
    const size_t count = 1 + (x >> 8) % ((256 << 10) / types[ti].size);
    run(&types[ti], ops[ti], count, (x >> 40) & 1, (int)((x >> 44) % 16), true, seed + 3000 + k);
  }
  /* then sizes growing as in a benchmark sweep: each size needs more blocks than the kernel before */
  for (size_t bytes = 4; bytes <= (256 << 10); bytes *= 2)
    for (int k = 0; k < 8; ++k) run(&types[0], ops[0], bytes / 4, false, 0, true, seed + 9000 + bytes + k);
  cudaFree(pool_s);
  cudaFree(pool_r);
  pool_bytes = 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  bool mixed = false, large = false;
  int opt;
  while ((opt = getopt(argc, argv, "m:Lr:")) != -1) {
    if (opt == 'm') mixed = strcmp(optarg, "mixed") == 0;
    if (opt == 'L') large = true;
    if (opt == 'r') gap_max_us = atoi(optarg);
  }
  int ndev = 0;
  TBUF_CHECK(cudaGetDeviceCount(&ndev));
  TBUF_CHECK(cudaSetDevice(rank % ndev));
  uint64_t seed = 0;
  if (rank == 0) seed = mix((uint64_t)time(NULL) ^ (uint64_t)getpid());
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("seed %llu\n", (unsigned long long)seed);
  if (gap_max_us > 0) {
    linger_case(seed);
  } else {
    const type_t types[] = {
        {"INT8_T", MPI_INT8_T, 'i', 1, 0},
        {"UINT8_T", MPI_UINT8_T, 'u', 1, 0},
        {"INT16_T", MPI_INT16_T, 'i', 2, 0},
        {"UINT16_T", MPI_UINT16_T, 'u', 2, 0},
        {"INT", MPI_INT, 'i', 4, 0},
        {"UNSIGNED", MPI_UNSIGNED, 'u', 4, 0},
        {"INT64_T", MPI_INT64_T, 'i', 8, 0},
        {"UINT64_T", MPI_UINT64_T, 'u', 8, 0},
        {"LONG", MPI_LONG, 'i', 8, 0},
        {"FLOAT", MPI_FLOAT, 'f', 4, 0},
        {"DOUBLE", MPI_DOUBLE, 'd', 8, 0},
        {"C_BOOL", MPI_C_BOOL, 'b', 1, 0},
        {"FLOAT_INT", MPI_FLOAT_INT, 'p', 8, 4},
        {"DOUBLE_INT", MPI_DOUBLE_INT, 'p', 16, 8},
        {"LONG_INT", MPI_LONG_INT, 'p', 16, 8},
        {"2INT", MPI_2INT, 'p', 8, 4},
        {"SHORT_INT", MPI_SHORT_INT, 'p', 8, 2},
    };
    const size_t counts[] = {1, 7, 1000, 4099, 65537};
    const bool device = !mixed || rank % 2 == 1;
    int k = 0;
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ++ti)
      for (int op = 0; op < NOPS; ++op) {
        if (!allowed(&types[ti], op)) continue;
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci)
          for (int ip = 0; ip < 2; ++ip, ++k) run(&types[ti], op, counts[ci], ip, k % 16, device, seed + k);
      }
    /* larger: several algorithms and channel counts */
    for (int ip = 0; ip < 2; ++ip) {
      run(&types[9], SUM, (1 << 20) + 5, ip, 3 * ip, device, seed + 1000 + ip);
      run(&types[4], MAX, (1 << 20) + 5, ip, 0, device, seed + 1002 + ip);
      run(&types[13], MAXLOC, (1 << 20) + 5, ip, 8, device, seed + 1004 + ip);
      run(&types[10], SUM, 3 << 20, ip, 0, device, seed + 1006 + ip);
    }
    if (large) run(&types[1], SUM, (size_t)1 << 28, false, 0, device, seed + 2000);
  }
  long all_checks = 0, all_failures = 0;
  MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("test_gpu_allreduce: %d ranks, %ld checks, %ld failed\n", nranks, all_checks, all_failures);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
