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

/* The ring a channel runs: channels come in runs of `span` (at least 1) on one ring each, the rings in
 * turn: channel c runs ring (c / span) mod nrings. One node: span 1. Across nodes a run of channels on each
 * ring, so that the channels of one ring, which a bcast or reduce may take alone, spread over the proxy
 * threads (channel c on thread c mod threads). */
COLL_GPU_PART_FN int coll_gpu_channel_ring(int c, int nrings, int span) { return c / span % nrings; }
/* The ring channels a call runs on: a call whose rings are a mask of them (bit i: ring i; 0 for every ring)
 * runs on the channels of those rings only. Its blocks go round the mask's rings: block b, at place
 * o = b mod span of the t-th (t = b / span) round of span blocks, runs the ((t + o) mod per)-th ring of the
 * mask (per rings in it), on channel o of that ring's run number t / per. So where span is 1, or the mask
 * holds one ring, block b runs the b-th channel of the mask's rings in channel order (channel b for every
 * ring on one node); where a call across nodes takes several rings, consecutive blocks take turns at them at
 * consecutive places of their runs, so on consecutive proxy threads (channel c on thread c mod threads). A
 * bcast or reduce across nodes takes the rings whose chain enters and leaves each node once (engine/rings.h,
 * coll_gpu_rings_chain). */
COLL_GPU_PART_FN int coll_gpu_work_channel(unsigned rings, int nrings, int span, int b) {
  const unsigned all = nrings >= 32 ? ~0u : (1u << nrings) - 1u;
  const unsigned mask = rings == 0 ? all : rings & all;
  int per = 0; /* rings in the mask */
  for (int i = 0; i < nrings; ++i) per += (int)((mask >> i) & 1u);
  const int o = b % span, t = b / span;
  int j = (t + o) % per, i = 0;
  for (; i < nrings; ++i)
    if (((mask >> i) & 1u) && j-- == 0) break;
  return ((t / per) * nrings + i) * span + o;
}
/* How many of a call's first blocks run on channels below nchannels (the longest such run of blocks): all of
 * them on one node (every ring, span 1: block b on channel b), counted out otherwise. */
COLL_GPU_PART_FN int coll_gpu_work_channels(unsigned rings, int nrings, int span, int nchannels) {
  if (rings == 0 && span == 1) return nchannels;
  int n = 0;
  while (n < nchannels && coll_gpu_work_channel(rings, nrings, span, n) < nchannels) ++n;
  return n;
}

/* Block b of a call of nblocks blocks among the call's blocks on the same ring as it: the index'th of count. */
COLL_GPU_PART_FN void coll_gpu_work_ring_share(unsigned rings, int nrings, int span, int nblocks, int b, int *index,
                                               int *count) {
  const int ring = coll_gpu_channel_ring(coll_gpu_work_channel(rings, nrings, span, b), nrings, span);
  *index = 0;
  *count = 0;
  for (int x = 0; x < nblocks; ++x)
    if (coll_gpu_channel_ring(coll_gpu_work_channel(rings, nrings, span, x), nrings, span) == ring) {
      *index += x < b;
      ++*count;
    }
}

#ifdef __cplusplus
}
#endif
#endif
