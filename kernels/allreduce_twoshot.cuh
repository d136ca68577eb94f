/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Two-shot allreduce, Simple protocol: for medium messages, a reduce-scatter and an all-gather, each one
 * NVLink trip straight to the rank that needs the data (every pair of GPUs is connected).
 *
 * The buffer is cut into one chunk per rank, each chunk into one slice per block (kernels/partition.h).
 * Block b of every rank handles slice b of every chunk:
 *   step 0: push slice b of my chunk j into rank j's reduce-scatter slot for me; flag it (release);
 *   step 1: wait for every peer's flag; reduce slice b of my own chunk over all ranks in rank order;
 *           write it to my output and push it into every peer's all-gather slot for me; flag it;
 *   step 2: wait for every peer's flag; copy their reduced slices into my output.
 * Slots alternate by seq parity, flags hold the seq of the phase a sender last completed.
 */
#ifndef COLL_GPU_KERNELS_ALLREDUCE_TWOSHOT_CUH
#define COLL_GPU_KERNELS_ALLREDUCE_TWOSHOT_CUH

#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

// Waits until every peer has flagged `phase` of this call for this block; false if the host aborted. Thread s
// polls peer s's flag, so the peers' flags cost one load latency together, not one each in turn; the
// barrier then orders every thread's reads after the acquiring loads.
__device__ bool wait_peers(const coll_gpu_dev_comm_t &c, const coll_gpu_work_t &p, const Layout &L, const Waiter &w,
                           int phase) {
  const int s = threadIdx.x;
  bool ok = true;
  if (s < c.nranks && s != c.rank)
    ok = w.wait_geq(flag_at(c.peer_scratch[c.rank], L.flag(phase, s, blockIdx.x)), p.seq, s);
  return __syncthreads_and(ok) != 0;
}

// Thread 0 flags `phase` of this call for this block at every peer, after every thread's stores (the
// barrier orders them before thread 0's fence).
__device__ void post_peers(const coll_gpu_dev_comm_t &c, const coll_gpu_work_t &p, const Layout &L, int phase) {
  __syncthreads();
  if (threadIdx.x == 0) {
    fence_release_sys();
    for (int k = 1; k < c.nranks; ++k) {
      const int peer = (c.rank + k) % c.nranks;
      st_relaxed_sys(flag_at(c.peer_scratch[peer], L.flag(phase, c.rank, blockIdx.x)), p.seq);
    }
  }
}

// Moves one segment per peer q = 1..nseg: thread tid's packs at tid * kPack + k * stride of each, kUnroll
// packs in flight, taken peer after peer at each position, so that a thread's loads for different peers
// overlap (a loop over the peers, each with its own loads, waits out one memory round trip per peer).
// seg(q, &src, &dst, &len) names segment q; len is at most maxlen; load and store move one pack.
template <typename Seg, typename Load, typename Store>
__device__ __forceinline__ void move_segments(int nseg, size_t maxlen, Seg seg, Load load, Store store) {
  const size_t stride = (size_t)blockDim.x * kPack;
  const size_t first = (size_t)threadIdx.x * kPack;
  if (first >= maxlen) return;
  const unsigned items = (unsigned)coll_gpu_div_up(maxlen - first, stride) * (unsigned)nseg;
  for (unsigned i0 = 0; i0 < items; i0 += kUnroll) {
    uint4 v[kUnroll];
    int n[kUnroll];
    char *dst[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      n[k] = 0;
      const unsigned i = i0 + k;
      if (i >= items) continue;
      const char *src;
      size_t len;
      seg(1 + (int)(i % (unsigned)nseg), &src, &dst[k], &len);
      const size_t off = first + (size_t)(i / (unsigned)nseg) * stride;
      if (off >= len) continue;
      n[k] = (int)coll_gpu_min(kPack, len - off);
      dst[k] += off;
      v[k] = load(src + off, n[k]);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      if (n[k]) store(dst[k], v[k], n[k]);
  }
}

template <typename T, typename Op, int Align>
__global__ void __launch_bounds__(kThreads)
    twoshot(const __grid_constant__ coll_gpu_dev_comm_t c, const __grid_constant__ coll_gpu_work_t p, bool told) {
  const bool aligned = call_aligned<Align>(told);
  const Layout L(c.layout);
  const int parity = (int)(p.seq & 1);
  const int n = c.nranks, rank = c.rank;
  const size_t pack = kPack / sizeof(T);
  const char *in = (const char *)p.sendbuf;
  char *out = (char *)p.recvbuf;
  char *mine = (char *)c.peer_scratch[rank];
  const size_t stride = (size_t)blockDim.x * kPack;
  // slice b of chunk j: its offset inside a slot (slots hold one chunk), and in bytes from the buffer
  // start, and its length
  auto slice = [&](int j, size_t *in_slot, size_t *at, size_t *len) {
    const coll_gpu_range_t k = coll_gpu_part(p.count, n, j, pack);
    const coll_gpu_range_t s = coll_gpu_part(k.count, gridDim.x, blockIdx.x, pack);
    *in_slot = s.begin * sizeof(T);
    *at = (k.begin + s.begin) * sizeof(T);
    *len = s.count * sizeof(T);
  };
  // no slice is longer than the slices of the first chunk, the longest
  const size_t maxlen =
      coll_gpu_round_up(coll_gpu_div_up(coll_gpu_part(p.count, n, 0, pack).count, gridDim.x), pack) * sizeof(T);
  const Waiter w(c);

  // step 0: push slice b of chunk j to rank j
  move_segments(
      n - 1, maxlen,
      [&](int q, const char **src, char **dst, size_t *len) {
        const int j = (rank + q) % n;
        size_t in_slot, at;
        slice(j, &in_slot, &at, len);
        *src = in + at;
        *dst = (char *)c.peer_scratch[j] + L.ts(parity, 0, rank) + in_slot;
      },
      [=](const char *src, int bytes) { return load_pack(aligned, src, bytes); },
      [](char *dst, uint4 v, int bytes) { store_pack(true, dst, v, bytes); });
  post_peers(c, p, L, 0);

  // step 1: reduce my chunk's slice over all ranks in rank order, keep it, push it to every peer; a
  // thread's loads from every rank are in flight together
  bool alive = wait_peers(c, p, L, w, 0);
  if (alive) {
    size_t off, at, len;
    slice(rank, &off, &at, &len);
    for (size_t i = (size_t)threadIdx.x * kPack; i < len; i += stride) {
      const int bytes = (int)coll_gpu_min(kPack, len - i);
      uint4 v[COLL_GPU_MAX_DIRECT];
#pragma unroll
      for (int s = 0; s < COLL_GPU_MAX_DIRECT; ++s)
        if (s < n)
          v[s] = s == rank ? load_pack(aligned, in + at + i, bytes)
                           : load_peer_pack(mine + L.ts(parity, 0, s) + off + i, bytes);
      uint4 acc = v[0];
#pragma unroll
      for (int s = 1; s < COLL_GPU_MAX_DIRECT; ++s)
        if (s < n) acc = reduce_pack<T, Op>(acc, v[s]);
      store_out<T>(aligned, out + at + i, acc, bytes);
      for (int q = 1; q < n; ++q) {
        const int peer = (rank + q) % n;
        store_pack(true, (char *)c.peer_scratch[peer] + L.ts(parity, 1, rank) + off + i, acc, bytes);
      }
    }
    post_peers(c, p, L, 1);
  }

  // step 2: copy every peer's reduced slice into my output
  if (alive && wait_peers(c, p, L, w, 1))
    move_segments(
        n - 1, maxlen,
        [&](int q, const char **src, char **dst, size_t *len) {
          const int s = (rank + q) % n;
          size_t in_slot, at;
          slice(s, &in_slot, &at, len);
          *src = mine + L.ts(parity, 1, s) + in_slot;
          *dst = out + at;
        },
        [](const char *src, int bytes) { return load_peer_pack(src, bytes); },
        [=](char *dst, uint4 v, int bytes) { store_out<T>(aligned, dst, v, bytes); });
  block_done(c.status, p.seq);
}

}  // namespace

// instantiated in kernels/inst/twoshot_*.cu
COLL_GPU_DEFINE_TYPED(twoshot_typed, twoshot, dim3(w.nchannels), dim3(kThreads))

}  // namespace coll_gpu

#endif
