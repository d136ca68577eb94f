/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * One-shot allreduce and reduce, LL protocol: for small messages, one kernel, one NVLink trip.
 *
 * Phases of a call (every rank, every thread on its own 16-byte units):
 *   step 0: push my data, as LL lines flagged with this call's seq, into every peer's one-shot slot
 *           for me;
 *   step 1: for each unit, wait until every peer's lines carry the flag, reduce all ranks' data in
 *           rank order (bit-identical results on every rank), write the result.
 * No fence and no separate flag: the flag travels in the line, so which block of a rank handles which
 * unit does not matter to its peers. Slots alternate by seq parity: a rank reaches call seq + 2 only
 * after every peer has finished call seq, so the slot of seq is free again.
 *
 * A call of its own runs a kernel per type, op and alignment (instantiated in kernels/inst/oneshot_*.cu):
 * the call's parameters stay in registers. The lingering kernel (kernels/allreduce_oneshot.cu) runs the
 * same body for the calls the host posts to it.
 */
#ifndef COLL_GPU_KERNELS_ALLREDUCE_ONESHOT_CUH
#define COLL_GPU_KERNELS_ALLREDUCE_ONESHOT_CUH

#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

// Call c on this block's share of the units: an allreduce, or a reduce (MPI_Reduce) to c.root, in which
// only the other ranks push data, to the root only, and only the root reduces and keeps the result. Where a
// rank has nothing for a peer it writes one token line (unit 0), and where a peer has nothing for it it
// waits for one: so every rank of call seq still waits for every other, and the slot rule above holds.
template <typename T, typename Op>
__device__ __forceinline__ void oneshot_call(const coll_gpu_dev_comm_t &p, const Call &c, bool aligned) {
  const Layout L(p.layout);
  const int parity = (int)(c.seq & 1);
  const uint32_t flag = (uint32_t)c.seq;  // never 0: the engine skips seqs that are 0 mod 2^32
  const size_t bytes = c.count * sizeof(T);
  const size_t units = coll_gpu_div_up(bytes, kPack);
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const char *in = c.sendbuf;
  char *out = c.recvbuf;
  const bool all = c.coll != COLL_GPU_COLL_REDUCE;  // allreduce: every rank pushes to, and keeps, all
  const bool keep = all || p.rank == c.root;

  // step 0: push my data to every peer (reduce: to the root; a token to the others)
  for (size_t u = first; u < units; u += stride) {
    const int n = (int)coll_gpu_min(kPack, bytes - u * kPack);
    uint4 v = make_uint4(0, 0, 0, 0);
    if (all || p.rank != c.root) v = load_pack(aligned, in + u * kPack, n);
    for (int k = 1; k < p.nranks; ++k) {
      const int peer = (p.rank + k) % p.nranks;
      const bool data = all || peer == c.root;
      if (!data && u != 0) continue;
      ll_put((uint4 *)((char *)p.peer_scratch[peer] + L.ll(parity, p.rank)) + 2 * u, data ? v : make_uint4(0, 0, 0, 0),
             flag);
    }
  }

  // step 1: reduce every rank's data in rank order (reduce, off the root: take each peer's token)
  const Waiter w(p);
  bool alive = true;
  for (size_t u = first; u < (keep ? units : 1); u += stride) {
    const int n = (int)coll_gpu_min(kPack, bytes - u * kPack);
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (int s = 0; s < p.nranks; ++s) {
      uint4 v = make_uint4(0, 0, 0, 0);
      if (s == p.rank) {
        if (keep) v = load_pack(aligned, in + u * kPack, n);
      } else {
        const uint4 *line = (const uint4 *)((const char *)p.peer_scratch[p.rank] + L.ll(parity, s)) + 2 * u;
        alive = alive && ll_get(line, flag, w, s, &v);
      }
      acc = s == 0 ? v : reduce_pack<T, Op>(acc, v);
    }
    if (alive && keep) store_out<T>(aligned, out + u * kPack, acc, n);
  }
}

template <typename T, typename Op, int Align>
__global__ void __launch_bounds__(kLLThreads)
    oneshot(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  oneshot_call<T, Op>(comm, call_of(p), call_aligned<Align>(aligned));
  block_done(comm.status, p.seq);
}

}  // namespace

// instantiated in kernels/inst/oneshot_*.cu
COLL_GPU_DEFINE_TYPED(oneshot_typed, oneshot, dim3(oneshot_blocks(comm, w)), dim3(kLLThreads))

}  // namespace coll_gpu

#endif
