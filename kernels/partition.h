/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * How the allreduce algorithms cut a buffer: parts in whole 16-byte packs, so that every part of an
 * aligned buffer starts aligned. Host and device share this arithmetic (and the unit tests check it).
 */
#ifndef COLL_GPU_KERNELS_PARTITION_H
#define COLL_GPU_KERNELS_PARTITION_H

#include <stddef.h>

#ifdef __CUDACC__
#define COLL_GPU_PART_FN static inline __host__ __device__
#else
#define COLL_GPU_PART_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  size_t begin; /* first element */
  size_t count; /* elements, possibly 0 */
} coll_gpu_range_t;

COLL_GPU_PART_FN size_t coll_gpu_div_up(size_t a, size_t b) { return (a + b - 1) / b; }
COLL_GPU_PART_FN size_t coll_gpu_round_up(size_t a, size_t b) { return coll_gpu_div_up(a, b) * b; }
COLL_GPU_PART_FN size_t coll_gpu_min(size_t a, size_t b) { return a < b ? a : b; }
COLL_GPU_PART_FN size_t coll_gpu_max(size_t a, size_t b) { return a > b ? a : b; }

/* Part i of n of `count` elements: equal parts of whole packs of `pack` elements, so the last parts
 * may be shorter or empty. The parts tile [0, count) in order. */
COLL_GPU_PART_FN coll_gpu_range_t coll_gpu_part(size_t count, size_t n, size_t i, size_t pack) {
  size_t per = coll_gpu_round_up(coll_gpu_div_up(count, n), pack);
  size_t begin = coll_gpu_min(i * per, count);
  coll_gpu_range_t r = {begin, coll_gpu_min(per, count - begin)};
  return r;
}

/* Ring rounds of one channel holding `count` elements: each round moves one slot per rank. */
COLL_GPU_PART_FN size_t coll_gpu_ring_rounds(size_t count, int nranks, size_t slot_elems) {
  return coll_gpu_div_up(count, (size_t)nranks * slot_elems);
}

#ifdef __cplusplus
}
#endif
#endif
