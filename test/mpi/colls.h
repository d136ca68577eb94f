/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Shared by the parts of the collective test: the run's state, the random inputs, byte comparison
 * and test buffers of the chosen memory kind with their host images.
 */
#ifndef COLL_GPU_TEST_COLLS_H
#define COLL_GPU_TEST_COLLS_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "test/common/tbuf.h"

/* The run's state, defined in test_colls.c. */
extern int rank, nranks;
extern uint64_t seed;
extern tbuf_kind_t kind;
extern long checks, failures;
extern bool verbose;
extern bool gpu_path;  /* test_colls -G: the GPU path's calls must stage nothing */
extern int gap_max_us; /* test_colls -r: the most a rank waits before each collective */
extern bool node_shm;  /* test_colls -G: coll_gpu_node_transport shm, where no zero-copy call runs */
/* staged_count.c: coll/gpu's count of the buffers it staged (MPI_T), once opened; an integer parameter of coll/gpu
 * as the run sets it (MPI_T), or dflt where it cannot be read. */
void staged_count_open(void);
unsigned long long staged_count(void);
int gpu_param_int(const char *name, int dflt);
/* Whether the run forces the SHM node transport (coll_gpu_node_transport shm): the calls that only the zero-copy
 * exchange serves (with counts unlike from rank to rank, gather(v), scatter(v), alltoall in place) stage there. */
bool gpu_node_shm(void);
/* Whether every rank runs on this host (collective at its first call, which every rank makes alike). */
bool one_host(void);
/* Whether every rank runs on one node as coll/gpu counts them: one host, not split into virtual nodes
 * (coll_gpu_virtual_nodes below the rank count); collective at its first call, as one_host. */
bool one_node(void);

#define POISON 0xA5 /* the byte every output is filled with before a collective */

static inline uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static inline uint64_t rnd(uint64_t a, uint64_t b, uint64_t c) { return mix(seed ^ mix(a ^ mix(b ^ mix(c)))); }

/* -r: before each collective, each rank waits its own random 0 to gap_max_us microseconds (a spin, as
 * a rank that computes), drawn from the case's salt. */
static inline void random_gap(uint64_t salt) {
  if (gap_max_us <= 0) return;
  const long us = (long)(rnd(salt, (uint64_t)rank, 0x6a9) % (uint64_t)(gap_max_us + 1));
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static inline void fail(const char *what, const char *detail) {
  if (failures++ < 20)
    fprintf(stderr, "[rank %d] FAIL %s: %s (seed %llu)\n", rank, what, detail, (unsigned long long)seed);
}

static inline void check_bytes(const char *what, const void *got, const void *want, size_t n) {
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

static inline buf_t buf_new(size_t bytes) {
  buf_t b = {NULL, NULL, bytes, tbuf_rank_kind(kind, rank)};
  b.dev = tbuf_alloc(b.k, bytes);
  b.img = malloc(bytes ? bytes : 1);
  memset(b.img, POISON, bytes);
  return b;
}
static inline void buf_push(buf_t *b) { tbuf_put(b->k, b->dev, b->img, b->bytes); }
static inline void buf_check(const char *what, buf_t *b, const void *want) {
  tbuf_get(b->k, b->img, b->dev, b->bytes);
  check_bytes(what, b->img, want, b->bytes);
}
static inline void buf_free(buf_t *b) {
  tbuf_free(b->k, b->dev);
  free(b->img);
}

/* colls_reduce.c: every reduction collective for every predefined type and op pair. */
void test_reductions(void);
/* colls_move.c: every data-movement collective over contiguous and derived datatypes. */
void make_layouts(void);
void free_layouts(void);
void test_moves(void);
void test_bottom(void);

#endif
