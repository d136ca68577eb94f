/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * MPI_Reduce and MPI_Reduce_scatter(_block) on the GPUs: per type and op, behind typed launchers that the
 * files kernels/generate.sh writes instantiate a few at a time.
 *
 * Direct, LL (small messages; any rank count): reduce runs the one-shot allreduce's body
 * (kernels/allreduce_oneshot.cuh), which also serves it from the lingering kernel; reduce-scatter its body in
 * kernels/reduce_scatter_ll.cuh.
 *
 * Across nodes, small allreduces and reduce-scatters (the engine's COLL_GPU_ALGO_ALLGATHER): after an allgather of
 * every rank's whole input into the engine's memory, reduce_gathered reduces the blocks (a reduce-scatter: this rank's
 * block of each input) in rank order, with no peer.
 *
 * Zero-copy (one node, large blocks): reduce-scatter reads its block of every rank's send buffer straight from
 * there (reduce_scatter_zero_copy below).
 *
 * Ring, Simple (large messages), over kernels/prims_ring.cuh, each channel a part of the buffer (of each
 * block) in steps of the call's chunk (at most a FIFO slot):
 *   reduce, at distance d from the root along the ring: d = 1 send my data; 1 < d send on what arrived,
 *   reduced with mine (recvReduceSend); d = 0, the root: reduce what arrived with mine, keep it
 *   (recvReduceCopy). A chain's first rank only sends: the kernel announces its start and waits for every
 *   peer's (prims_ring.cuh);
 *   reduce-scatter (NCCL's ring): step 0 send the block of the rank before me; steps 1..n-2 recvReduceSend
 *   the block of the rank s + 1 before me; step n-1 recvReduceCopy my own block into recvbuf. Blocks of
 *   different lengths (MPI_Reduce_scatter) take steps of 0 bytes past their end, so every rank takes the
 *   same steps. Across nodes on rings that take turns (coll_gpu_work_t's run k): on each ring only the
 *   blocks of the ranks at positions k - 1, 2k - 1, ... are reduced along it, each rank taking the steps
 *   above of the s that are its place in its node's run mod k, the ring's blocks sharing the ring's ranks'
 *   blocks (one loop serves both: the plain ring is k = 1).
 */
#ifndef COLL_GPU_KERNELS_REDUCE_CUH
#define COLL_GPU_KERNELS_REDUCE_CUH

#include <cuda_runtime.h>

#include "kernels/prims_ring.cuh"
#include "kernels/reduce_scatter_ll.cuh"

namespace coll_gpu {
namespace {

template <typename T, typename Op>
__global__ void __launch_bounds__(kLLThreads)
    reduce_scatter_direct(const __grid_constant__ coll_gpu_dev_comm_t c, const __grid_constant__ coll_gpu_work_t p,
                          bool aligned) {
  reduce_scatter_call<T, Op>(
      c, (const char *)p.sendbuf, (char *)p.recvbuf, p.seq, [&](int q) { return rs_block(p, q); }, aligned);
  block_done(c.status, p.seq);
}

template <typename T, typename Op>
__global__ void __launch_bounds__(kRingThreads) reduce_ring(const __grid_constant__ coll_gpu_dev_comm_t comm,
                                                            const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  RingChannel<T, Op> c(comm, p, aligned, blockIdx.x);
  const int n = c.nranks;
  const size_t pack = kPack / sizeof(T);
  const size_t slot = p.chunk / sizeof(T);  // elements per step
  const char *in = (const char *)p.sendbuf;
  char *out = (char *)p.recvbuf;
  bool ok = true;
  if (p.coll == COLL_GPU_COLL_REDUCE) {
    announce_start(comm, p);
    const int d = c.hops_from(p.root);
    const coll_gpu_range_t part = coll_gpu_part(p.count, gridDim.x, blockIdx.x, pack);
    for (size_t off = part.begin; ok && off < part.begin + part.count; off += slot) {
      const size_t at = off * sizeof(T), bytes = coll_gpu_min(slot, part.begin + part.count - off) * sizeof(T);
      if (d == 1)  // the chain's first rank: push my data
        ok = c.template step<kSend>(in + at, nullptr, bytes);
      else if (d != 0)  // add mine to what arrived, push it on
        ok = c.template step<kRecv | kReduce | kSend>(in + at, nullptr, bytes);
      else  // the root: add mine, keep it
        ok = c.template step<kRecv | kReduce | kCopyOut>(in + at, out + at, bytes);
    }
    await_started(comm, p, c.w);
  } else {  // reduce-scatter
    // this channel's part of the block at ring position `pos`, from element off of the part: where it
    // starts in sendbuf, where in the part, and its length (0 past the part's end)
    struct Seg {
      size_t send, at, count;
    };
    // on every ring (p.run): the blocks of my ring share its ranks' blocks
    int share = (int)blockIdx.x, shares = (int)gridDim.x;
    if (p.run > 0) coll_gpu_work_ring_share(p.rings, comm.nrings, comm.span, shares, share, &share, &shares);
    auto seg = [&](int pos, size_t off) {
      const coll_gpu_range_t block = rs_block(p, c.rank_at(pos));
      const coll_gpu_range_t part = coll_gpu_part(block.count, shares, share, pack);
      const size_t b = coll_gpu_min(off, part.count);
      return Seg{block.begin + part.begin + b, part.begin + b, coll_gpu_min(slot, part.count - b)};
    };
    size_t longest = p.each != 0 ? coll_gpu_part(p.count, shares, share, pack).count : 0;
    for (int q = 0; p.each == 0 && q < n; ++q)
      longest = coll_gpu_max(longest, coll_gpu_part(rs_block(p, q).count, shares, share, pack).count);
    // the blocks of the ranks at positions k - 1, 2k - 1, ... are reduced along the ring, from the rank after
    // their owner, n - 1 hops each: on the plain ring (k = 1) every rank's; on rings that take turns (k = p.run)
    // those of the ranks that end their node's run on this one. A rank i places into its run (mod k) takes the
    // ones s = i (mod k) hops from their start: s = 0 sends my part of it, 0 < s < n - 1 adds mine to what
    // arrived and pushes it on, s = n - 1 is my own block, complete here: kept
    const int k = p.run > 0 ? p.run : 1, i = c.pos % k;
    for (size_t off = 0; ok && off < longest; off += slot) {
      for (int s = i; ok && s < n; s += k) {
        const Seg g = seg(c.pos - 1 - s, off);
        if (s == 0)
          ok = c.template step<kSend>(in + g.send * sizeof(T), nullptr, g.count * sizeof(T));
        else if (s < n - 1)
          ok = c.template step<kRecv | kReduce | kSend>(in + g.send * sizeof(T), nullptr, g.count * sizeof(T));
        else
          ok = c.template step<kRecv | kReduce | kCopyOut>(in + g.send * sizeof(T), out + g.at * sizeof(T),
                                                           g.count * sizeof(T));
      }
    }
  }
  c.save();
  block_done(c.w.status, p.seq);
}

// Zero-copy reduce-scatter (one node, the engine's choice: coll_gpu_work_t's zc_parts and zc, every peer's send
// buffer mapped here, zc[q] this rank's block of rank q's input): no FIFO. The call's n x zc_parts blocks each take a
// part of this rank's block: each waits until every peer has announced the call (a peer's send buffer is its to give
// from its kernel's start, which comes after the work queued before on its stream), then reads its part of every
// rank's input, kRsUnroll packs of each at once (every rank's loads in flight together: on 4 H200 a thread that
// loaded one rank after another, two in flight, took 1.09-1.15x the ring's time from 2 MiB), and writes the
// reduction in rank order into recvbuf. Each block, its loads done, counts itself in zc_reads of my scratch; the last
// to count raises copied[rank][0] in every peer's scratch to seq and waits for every peer's copied[q][0] in mine: so a
// rank's call ends only once no peer reads its send buffer any more.
constexpr int kRsUnroll = 2;  // packs of each rank's input a thread loads at once
template <typename T, typename Op>
__global__ void __launch_bounds__(kRingThreads)
    reduce_scatter_zero_copy(const __grid_constant__ coll_gpu_dev_comm_t comm,
                             const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  const int n = comm.nranks, rank = comm.rank, q = (int)threadIdx.x;
  announce_start(comm, p);
  const Waiter w(comm);
  const Layout L(comm.layout);
  __shared__ int ok, last;
  if (threadIdx.x == 0) ok = 1;
  __syncthreads();
  if (q < n && q != rank && !w.wait_geq(flag_at(comm.peer_scratch[rank], L.started(q)), p.seq, q)) ok = 0;
  __syncthreads();
  if (ok) {
    const coll_gpu_range_t r = coll_gpu_part(p.zc[rank].bytes, gridDim.x, blockIdx.x, kPack);
    char *out = (char *)p.recvbuf + r.begin;
    const size_t stride = (size_t)blockDim.x * kPack;
    for (size_t tile = (size_t)threadIdx.x * kPack; tile < r.count; tile += kRsUnroll * stride) {
      int m[kRsUnroll];
#pragma unroll
      for (int k = 0; k < kRsUnroll; ++k)
        m[k] = tile + k * stride < r.count ? (int)coll_gpu_min(kPack, r.count - tile - k * stride) : 0;
      uint4 v[COLL_GPU_MAX_DIRECT][kRsUnroll];
#pragma unroll
      for (int s = 0; s < COLL_GPU_MAX_DIRECT; ++s)
#pragma unroll
        for (int k = 0; k < kRsUnroll; ++k)
          if (s < n && m[k] > 0)
            v[s][k] = load_pack(aligned, (const char *)p.zc[s].src + r.begin + tile + k * stride, m[k]);
#pragma unroll
      for (int k = 0; k < kRsUnroll; ++k) {
        uint4 acc = v[0][k];
#pragma unroll
        for (int s = 1; s < COLL_GPU_MAX_DIRECT; ++s)
          if (s < n) acc = reduce_pack<T, Op>(acc, v[s][k]);
        if (m[k] > 0) store_out<T>(aligned, out + tile + k * stride, acc, m[k]);
      }
    }
  }
  __syncthreads();  // every load of this block has returned
  if (threadIdx.x == 0) {
    unsigned long long *reads = (unsigned long long *)flag_at(comm.peer_scratch[rank], L.zc_reads(rank));
    last = atomicAdd(reads, 1ull) == gridDim.x - 1;
    if (last) atomicExch(reads, 0ull);  // every block of the call has counted itself: the next call counts from 0
  }
  __syncthreads();
  if (last && q < n && q != rank) {
    fence_release_sys();
    st_relaxed_sys(flag_at(comm.peer_scratch[q], L.copied(rank, 0)), p.seq);
    w.wait_geq(flag_at(comm.peer_scratch[rank], L.copied(q, 0)), p.seq, q);
  }
  block_done(comm.status, p.seq);
}

// An allreduce or reduce-scatter across nodes after its allgather (COLL_GPU_ALGO_ALLGATHER, the engine's): the first
// block to reduce lies at sendbuf, rank q's p.block bytes (a whole input) after rank q - 1's; each thread reduces its
// packs over the blocks in rank order into recvbuf, so every rank's result (an allreduce's) is the same bit for bit.
// No peer takes part: the allgather before it on the stream has brought every block.
template <typename T, typename Op>
__global__ void __launch_bounds__(kLLThreads) reduce_gathered(const __grid_constant__ coll_gpu_dev_comm_t c,
                                                              const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  const size_t bytes = p.count * sizeof(T), stride = (size_t)gridDim.x * blockDim.x;
  const char *in = (const char *)p.sendbuf;
  for (size_t u = (size_t)blockIdx.x * blockDim.x + threadIdx.x; u * kPack < bytes; u += stride) {
    const int n = (int)coll_gpu_min(kPack, bytes - u * kPack);
    uint4 acc = load_pack(aligned, in + u * kPack, n);
    for (int q = 1; q < c.nranks; ++q)
      acc = reduce_pack<T, Op>(acc, load_pack(aligned, in + (size_t)q * p.block + u * kPack, n));
    store_out<T>(aligned, (char *)p.recvbuf + u * kPack, acc, n);
  }
  block_done(c.status, p.seq);
}

// Whether every address a call touches starts on a pack boundary.
__host__ bool reduce_aligned(int nranks, const coll_gpu_work_t &p) {
  if (!packs_aligned(p.sendbuf, p.recvbuf)) return false;
  if (p.algo == COLL_GPU_ALGO_ALLGATHER) return p.block % kPack == 0;  // each gathered block
  if (p.coll != COLL_GPU_COLL_REDUCE_SCATTER) return true;
  for (int q = 0; p.zc_parts > 0 && q < nranks; ++q)  // zero-copy: this rank's block of every rank's input
    if (!packs_aligned(p.zc[q].src, p.recvbuf)) return false;
  if (p.zc_parts > 0) return true;
  if (p.each != 0) return p.each * coll_gpu_dtype_size(p.type) % kPack == 0;  // every block at q * each
  for (int q = 0; q < nranks; ++q)
    if (rs_block(p, q).begin * coll_gpu_dtype_size(p.type) % kPack != 0) return false;
  return true;
}

}  // namespace

// instantiated in kernels/inst/reduce_*.cu
template <typename T, typename Op>
int reduce_typed(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p, cudaStream_t stream) {
  const bool aligned = reduce_aligned(comm.nranks, p);
  if (p.zc_parts > 0 && (p.coll != COLL_GPU_COLL_REDUCE_SCATTER || !comm.direct || p.zc_parts > COLL_GPU_ZC_PARTS))
    return (int)cudaErrorInvalidValue;
  if (p.zc_parts > 0)
    reduce_scatter_zero_copy<T, Op><<<reduce_blocks(comm, p), kRingThreads, 0, stream>>>(comm, p, aligned);
  else if (p.algo == COLL_GPU_ALGO_ONESHOT && p.coll == COLL_GPU_COLL_REDUCE_SCATTER)  // reduce: oneshot_typed
    reduce_scatter_direct<T, Op><<<reduce_blocks(comm, p), kLLThreads, 0, stream>>>(comm, p, aligned);
  else if (p.algo == COLL_GPU_ALGO_ALLGATHER)
    reduce_gathered<T, Op><<<p.nchannels, kLLThreads, 0, stream>>>(comm, p, aligned);
  else if (p.algo == COLL_GPU_ALGO_RING)
    reduce_ring<T, Op><<<p.nchannels, kRingThreads, 0, stream>>>(comm, p, aligned);
  else
    return (int)cudaErrorInvalidValue;
  return (int)cudaGetLastError();
}

}  // namespace coll_gpu

#endif
