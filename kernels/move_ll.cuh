/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The direct moves (MPI_Bcast, MPI_Allgather and MPI_Alltoall as bytes), LL, for small messages at any rank
 * count: the body of kernels/move.cu's kernel of one call and of the lingering kernel
 * (kernels/allreduce_oneshot.cu).
 *
 * Every rank writes each peer's part, as LL lines flagged with the call's seq, straight into that peer's
 * one-shot slot for it, and reads its own slots:
 *   step 0: push my part for each peer (bcast root: the buffer; allgather: my block; alltoall: block q
 *           for peer q); copy my own block from sendbuf to recvbuf (allgather, alltoall);
 *   step 1: wait for each peer's lines and keep them (bcast: from the root; allgather and alltoall: in
 *           block s of recvbuf).
 * A rank that has nothing for a peer (a bcast's non-roots, and the root's receive) still writes, and
 * waits for, one token line: so every rank of call seq waits for every other, no rank gets a call ahead,
 * and the slot of seq is free again at seq + 2 (kernels/allreduce_oneshot.cu's rule). The host cuts
 * parts above the slot into calls of their own.
 */
#ifndef COLL_GPU_KERNELS_MOVE_LL_CUH
#define COLL_GPU_KERNELS_MOVE_LL_CUH

#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

// Whether every address a move touches starts on a pack boundary.
__host__ __device__ __forceinline__ bool move_aligned(const void *sendbuf, const void *recvbuf, int coll,
                                                      size_t block) {
  return packs_aligned(sendbuf, recvbuf) && (coll == COLL_GPU_COLL_BCAST || block % kPack == 0);
}

// The part of rank r's buffers a call moves to or from peer q: src/dst and bytes; 0 bytes: a token.
struct Part {
  const char *src;
  char *dst;
  size_t bytes;
};

__device__ __forceinline__ Part send_part(const Call &p, int rank, int q) {
  switch (p.coll) {
    case COLL_GPU_COLL_BCAST:
      return Part{(const char *)p.recvbuf, nullptr, rank == p.root ? p.count : 0};
    case COLL_GPU_COLL_ALLGATHER:
      return Part{(const char *)p.sendbuf, nullptr, p.count};
    default:  // alltoall
      return Part{(const char *)p.sendbuf + (size_t)q * p.block, nullptr, p.count};
  }
}

__device__ __forceinline__ Part recv_part(const Call &p, int rank, int s) {
  if (p.coll == COLL_GPU_COLL_BCAST)
    return Part{nullptr, (char *)p.recvbuf, rank != p.root && s == p.root ? p.count : 0};
  return Part{nullptr, (char *)p.recvbuf + (size_t)s * p.block, p.count};
}

// My own block, copied from sendbuf to recvbuf (allgather, alltoall; nothing when in place or bcast).
__device__ __forceinline__ Part own_part(const Call &p, int rank) {
  const size_t at = (size_t)rank * p.block;
  if (p.coll == COLL_GPU_COLL_ALLGATHER) return Part{(const char *)p.sendbuf, (char *)p.recvbuf + at, p.count};
  if (p.coll == COLL_GPU_COLL_ALLTOALL) return Part{(const char *)p.sendbuf + at, (char *)p.recvbuf + at, p.count};
  return Part{nullptr, nullptr, 0};
}

// Call p on this block's share of the units.
__device__ __forceinline__ void move_call(const coll_gpu_dev_comm_t &c, const Call &p, bool aligned) {
  const int rank = c.rank, nranks = c.nranks;
  const Layout L(c.layout);
  const int parity = (int)(p.seq & 1);
  const uint32_t flag = (uint32_t)p.seq;  // never 0: the engine skips seqs that are 0 mod 2^32
  const size_t units = coll_gpu_div_up(p.count, kPack);
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const Part own = own_part(p, rank);
  const bool copy_own = own.bytes != 0 && own.src != own.dst;

  // step 0: push my part for each peer, copy my own block
  for (size_t u = (size_t)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += stride) {
    for (int k = 1; k < nranks; ++k) {
      const int peer = (rank + k) % nranks;
      const Part s = send_part(p, rank, peer);
      if (s.bytes == 0 && u != 0) continue;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (s.bytes != 0) v = load_pack(aligned, s.src + u * kPack, (int)coll_gpu_min(kPack, s.bytes - u * kPack));
      ll_put((uint4 *)((char *)c.peer_scratch[peer] + L.ll(parity, rank)) + 2 * u, v, flag);
    }
    if (copy_own) {
      const int n = (int)coll_gpu_min(kPack, own.bytes - u * kPack);
      store_pack(aligned, own.dst + u * kPack, load_pack(aligned, own.src + u * kPack, n), n);
    }
  }

  // step 1: keep what each peer pushed
  const Waiter w(c);
  bool alive = true;
  for (size_t u = (size_t)blockIdx.x * blockDim.x + threadIdx.x; alive && u < units; u += stride) {
    for (int k = 1; alive && k < nranks; ++k) {
      const int s = (rank + nranks - k) % nranks;
      const Part r = recv_part(p, rank, s);
      if (r.bytes == 0 && u != 0) continue;
      const uint4 *line = (const uint4 *)((const char *)c.peer_scratch[rank] + L.ll(parity, s)) + 2 * u;
      uint4 v;
      alive = ll_get(line, flag, w, s, &v);
      if (alive && r.bytes != 0)
        store_pack(aligned, r.dst + u * kPack, v, (int)coll_gpu_min(kPack, r.bytes - u * kPack));
    }
  }
}

}  // namespace
}  // namespace coll_gpu

#endif
