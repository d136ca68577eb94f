/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Ring allreduce, Simple protocol: for large messages, bandwidth-optimal (every rank sends and receives
 * 2 (n - 1) / n of the buffer), over several channels, one block each, to fill NVLink.
 *
 * Each channel owns a part of the buffer and loops over rounds of one FIFO slot per rank, around its
 * own ring (an order of the ranks from the topology search). With the round cut into n chunks, the rank
 * at position r of the ring runs (chunk indices mod n):
 *   step 0:          send(chunk r)                      push my data to the next GPU
 *   steps 1..n-2:    recvReduceSend(chunk r - s)        add mine to what arrived, push it on
 *   step n-1:        recvReduceCopySend(chunk r + 1)    that chunk is complete here: keep it, push it
 *   steps n..2n-3:   recvCopySend(chunk r + 2 - t)      all-gather: keep what arrived, push it on
 *   step 2n-2:       recv(chunk r + 2)                  keep the last one
 * The steps are kernels/prims_ring.cuh's.
 */
#ifndef COLL_GPU_KERNELS_ALLREDUCE_RING_CUH
#define COLL_GPU_KERNELS_ALLREDUCE_RING_CUH

#include <cuda_runtime.h>

#include "kernels/prims_ring.cuh"

namespace coll_gpu {
namespace {

template <typename T, typename Op, int Align>
__global__ void __launch_bounds__(kRingThreads)
    ring(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  RingChannel<T, Op, Align> c(comm, p, aligned, blockIdx.x);
  const int n = c.nranks, r = c.pos;
  const size_t pack = kPack / sizeof(T);
  const size_t slot = p.chunk / sizeof(T);  // elements per step
  const coll_gpu_range_t part = coll_gpu_part(p.count, gridDim.x, blockIdx.x, pack);
  bool ok = true;
  for (size_t off = 0; ok && off < part.count; off += (size_t)n * slot) {
    const size_t round = coll_gpu_min((size_t)n * slot, part.count - off);
    auto chunk = [&](int j) { return coll_gpu_part(round, n, (size_t)((j % n + n) % n), pack); };
    const size_t base = part.begin + off;
    coll_gpu_range_t k = chunk(r);
    // step 0: push my data to the next GPU
    ok = c.template step_at<kSend>(base + k.begin, k.count);
    // steps 1..n-2: add mine to the partial sum that arrived, push it on
    for (int s = 1; ok && s < n - 1; ++s) {
      k = chunk(r - s);
      ok = c.template step_at<kRecv | kReduce | kSend>(base + k.begin, k.count);
    }
    // step n-1: chunk r+1 is complete here: keep it and push it on
    k = chunk(r + 1);
    if (ok) ok = c.template step_at<kRecv | kReduce | kCopyOut | kSend>(base + k.begin, k.count);
    // all-gather: keep each complete chunk that arrives and push it on
    for (int t = 1; ok && t < n - 1; ++t) {
      k = chunk(r + 1 - t);
      ok = c.template step_at<kRecv | kCopyOut | kSend>(base + k.begin, k.count);
    }
    // last step: keep the last complete chunk
    k = chunk(r + 2);
    if (ok) ok = c.template step_at<kRecv | kCopyOut>(base + k.begin, k.count);
  }
  c.save();
  block_done(c.w.status, p.seq);
}

}  // namespace

// instantiated in kernels/inst/ring_*.cu
COLL_GPU_DEFINE_TYPED(ring_typed, ring, dim3(w.nchannels), dim3(kRingThreads))

}  // namespace coll_gpu

#endif
