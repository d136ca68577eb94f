/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The direct reduce-scatter (MPI_Reduce_scatter(_block)), LL, for small messages at any rank count: the body of
 * kernels/reduce.cuh's kernel of one call and of the lingering kernel (kernels/allreduce_oneshot.cu), which serves
 * the calls of equal blocks. As the direct moves, every rank writes each peer's part, as LL lines flagged with the
 * call's seq, into that peer's one-shot slot for it:
 *   step 0: push block q for each peer q;
 *   step 1: reduce my block over every rank in rank order (my own data from sendbuf, the peers' from my
 *           slots) and write it to recvbuf.
 * A rank with nothing for a peer (a block of 0 elements) writes and waits for one token line, so every
 * rank of call seq waits for every other and the slot of seq is free again at seq + 2
 * (allreduce_oneshot.cu's rule). The host cuts parts above the slot into calls of their own.
 */
#ifndef COLL_GPU_KERNELS_REDUCE_SCATTER_LL_CUH
#define COLL_GPU_KERNELS_REDUCE_SCATTER_LL_CUH

#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

// Call seq on this block's share of the units: block(q) is rank q's range of elements of `in` (sendbuf), this
// rank's result goes to `out` (recvbuf).
template <typename T, typename Op, typename Blocks>
__device__ __forceinline__ void reduce_scatter_call(const coll_gpu_dev_comm_t &c, const char *in, char *out,
                                                    uint64_t seq, Blocks block, bool aligned) {
  const int rank = c.rank, nranks = c.nranks;
  const Layout L(c.layout);
  const int parity = (int)(seq & 1);
  const uint32_t flag = (uint32_t)seq;  // never 0: the engine skips seqs that are 0 mod 2^32
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t units = 1;  // a token at least
  for (int q = 0; q < nranks; ++q) units = coll_gpu_max(units, coll_gpu_div_up(block(q).count * sizeof(T), kPack));

  // step 0: push my part for each peer
  for (size_t u = first; u < units; u += stride) {
    for (int k = 1; k < nranks; ++k) {
      const int peer = (rank + k) % nranks;
      const coll_gpu_range_t part = block(peer);
      const size_t bytes = part.count * sizeof(T);
      if (bytes == 0 ? u != 0 : u * kPack >= bytes) continue;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (bytes != 0)
        v = load_pack(aligned, in + part.begin * sizeof(T) + u * kPack, (int)coll_gpu_min(kPack, bytes - u * kPack));
      ll_put((uint4 *)((char *)c.peer_scratch[peer] + L.ll(parity, rank)) + 2 * u, v, flag);
    }
  }

  // step 1: reduce my part over every rank in rank order (or take each peer's token)
  const coll_gpu_range_t mine = block(rank);
  const size_t bytes = mine.count * sizeof(T);
  const char *own = in + mine.begin * sizeof(T);
  const Waiter w(c);
  bool alive = true;
  for (size_t u = first; alive && u < coll_gpu_max(coll_gpu_div_up(bytes, kPack), 1); u += stride) {
    const int n = bytes == 0 ? 0 : (int)coll_gpu_min(kPack, bytes - u * kPack);
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (int s = 0; alive && s < nranks; ++s) {
      uint4 v = make_uint4(0, 0, 0, 0);
      if (s == rank) {
        if (n != 0) v = load_pack(aligned, own + u * kPack, n);
      } else {
        const uint4 *line = (const uint4 *)((const char *)c.peer_scratch[rank] + L.ll(parity, s)) + 2 * u;
        alive = ll_get(line, flag, w, s, &v);
      }
      acc = s == 0 ? v : reduce_pack<T, Op>(acc, v);
    }
    if (alive && n != 0) store_out<T>(aligned, out + u * kPack, acc, n);
  }
}

}  // namespace
}  // namespace coll_gpu

#endif
