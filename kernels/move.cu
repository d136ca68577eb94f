/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The moves: MPI_Bcast, MPI_Allgather and MPI_Alltoall on the GPUs, as bytes (no type, no op), so one
 * kernel per protocol and alignment serves every datatype.
 *
 * Direct, LL (small messages; any rank count): kernels/move_ll.cuh.
 *
 * Ring, Simple (large messages), over kernels/prims_ring.cuh, each channel a part of the buffer (of each
 * block) in steps of the call's chunk (at most a FIFO slot):
 *   bcast, at distance d from the root along the ring: d = 0 send; 0 < d < n - 1 recvCopySend; d = n - 1
 *   recv (copy out);
 *   allgather: step 0 send my block (and copy it into my recvbuf); steps 1..n-2 recvCopySend the block of
 *   the rank s before me; step n-1 recv the block of the rank after me. Across nodes on rings that take
 *   turns (coll_gpu_work_t's run k): on each ring only the blocks of the ranks at positions 0, k, 2k, ... go
 *   round, each rank taking the steps above of the s that are its place in its node's run mod k, the ring's
 *   blocks sharing the ring's ranks' blocks (one loop serves both: the plain ring is k = 1);
 *   alltoall, 2 ranks: two blocks on each channel, one sending my block for the peer through the
 *   channel's send connection, one receiving (copying out) the peer's block for me through its receive
 *   connection, so that both directions move at once; the receiving block first copies its share of my
 *   own block, while the first step is on its way. That is 2 x the call's channels in blocks (128 at the
 *   defaults): a sender waits only for the peer's receiver of its channel, so the call finishes as long
 *   as each GPU holds more blocks at once than the call has channels; the tuning model keeps the channels
 *   below the fewest multiprocessors among the ranks' GPUs (132 on an H100 or H200).
 * Pairwise, Simple (alltoall of more than 2 ranks, large blocks), over point-to-point connections with
 * their own FIFOs (coll_gpu_dev_peer_t), as the 2-rank alltoall a sending and a receiving block per
 * connection, so that both directions move at once: of the P = (n - 1) C pairs of blocks (C connections
 * per peer), pair b serves peer distance k = 1 + b / C and connection c = b mod C; its sending block b
 * sends part c of my block for rank + k, its receiving block P + b receives part c of rank - k's block for
 * me, a slot at a time, and first copies a share of my own block. Receiving block P + b of rank + k is the
 * one that receives what sending block b sends; as for 2 ranks, a GPU must hold all the call's blocks at
 * once (the tuning model bounds them where ranks share a GPU). The pairwise allgather (across nodes of 3 to
 * COLL_GPU_MAX_DIRECT ranks, small blocks) is the same kernel, every sending block sending my one block to its
 * peer: one step where the ring takes n - 1.
 * A bcast's root only sends: it announces its start and waits for every peer's (prims_ring.cuh).
 *
 * Bruck, Simple (allgather across nodes of 3 to COLL_GPU_MAX_DIRECT ranks, small blocks), over connection 0 of the
 * point-to-point ones, in one block: a rank first copies its own block into place, then at step k (distance d = 2^k,
 * while d < n) sends the m = min(d, n - d) blocks it holds from its own on (rank .. rank + m - 1, mod n) to rank - d
 * and receives into place the m blocks rank + d holds from its own on. After the steps every rank holds them all,
 * each where it belongs in the receive buffer, so no rotation follows. A step moves runs of blocks: where blocks lie
 * back to back (no gap between them), the blocks up to the last rank and those from rank 0 on, else each block alone,
 * each run in slots; the sender and the receiver of a step cut the same blocks alike. A rank sends a slot and
 * receives one in turn: had it sent all of a step before receiving, a step of more slots than the FIFO holds
 * (COLL_GPU_RING_SLOTS) would leave every rank waiting for room its receiver frees only after its own sends (the
 * kernel test found that). A step's peers differ from every other step's (the distances 2^k are distinct below n).
 *
 * Zero-copy, Simple (one node, the engine's choice: coll_gpu_work_t's zc_parts and zc, every peer's receive
 * buffer mapped here; the alltoall of large blocks, and allgatherv and alltoallv of any counts): no FIFO; each rank
 * writes its block for peer q (zc[q]: from its send buffer, or its own block of its receive buffer for an allgatherv
 * in place) straight into q's receive buffer, where q wants it. Block 0 first announces the call to every peer
 * (started, prims_ring.cuh). The call's blocks are n groups of P = zc_parts parts (P the same on every rank, the
 * blocks' bytes not): group 0 copies the parts of this rank's own block; group k > 0 serves peer q = rank + k, its
 * block b waiting until q has announced the call (q's receive buffer is q's to give from its kernel's start, which
 * comes after the work queued before on q's stream), writing part b of my block for q into q's receive buffer, then,
 * its stores fenced, raising copied[rank][b] in q's scratch to seq; then it waits for copied[rank - k][b] in
 * mine: the part rank - k writes into my receive buffer. So a rank's call ends once every peer has written
 * into its receive buffer, and none writes there before the call has begun on it.
 * With copy engines (zc_engines; 2 ranks, where they move more than the SMs' stores, engine/zero_copy.h): the same
 * protocol with one part a peer, in three kernels around the copies. zc_enter announces the call and waits for
 * every peer's announcement; the copy stream, after it, copies each peer's block with cudaMemcpyAsync while zc_own
 * copies my own on the SMs; zc_leave, after both, raises copied[rank][0] in each peer's scratch and waits for each
 * peer's copied[q][0] in mine.
 */
#include <cuda_runtime.h>

#include "kernels/move_ll.cuh"
#include "kernels/prims_ring.cuh"

namespace coll_gpu {
namespace {

__global__ void __launch_bounds__(kLLThreads)
    move_ll(const __grid_constant__ coll_gpu_dev_comm_t c, const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  move_call(c, call_of(p), aligned);
  block_done(c.status, p.seq);
}

// A block's copy of `bytes` from src to dst, kUnroll packs in flight per thread (tile_packs).
__device__ void block_copy(bool aligned, const char *src, char *dst, size_t bytes) {
  const size_t stride = (size_t)blockDim.x * kPack;
  for (size_t tile = (size_t)threadIdx.x * kPack; tile < bytes; tile += kUnroll * stride) {
    int n[kUnroll];
    tile_packs(tile, stride, bytes, n);
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      if (n[k] > 0) v[k] = load_pack(aligned, src + tile + k * stride, n[k]);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      if (n[k] > 0) store_pack(aligned, dst + tile + k * stride, v[k], n[k]);
  }
}

template <int Align>
__global__ void __launch_bounds__(kRingThreads) move_ring(const __grid_constant__ coll_gpu_dev_comm_t comm,
                                                          const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  using Bytes = uint8_t;
  // the 2-rank alltoall runs two blocks per channel: blocks [0, C) send, [C, 2C) receive
  const bool halves = p.coll == COLL_GPU_COLL_ALLTOALL;
  const int nch = halves ? (int)gridDim.x / 2 : (int)gridDim.x, ch = (int)blockIdx.x % nch;
  const bool sender = (int)blockIdx.x < nch;
  RingChannel<Bytes, OpSum<Bytes>, Align> c(comm, p, aligned, ch);
  const int n = c.nranks;
  const size_t slot = p.chunk;   // bytes per step
  int share = ch, shares = nch;  // the allgather on every ring (p.run): the blocks of my ring share its ranks' blocks
  if (p.run > 0) coll_gpu_work_ring_share(p.rings, comm.nrings, comm.span, nch, ch, &share, &shares);
  const coll_gpu_range_t part = coll_gpu_part(p.count, shares, share, kPack);
  const char *in = (const char *)p.sendbuf;
  char *out = (char *)p.recvbuf;
  bool ok = true;
  if (p.coll == COLL_GPU_COLL_BCAST) {
    announce_start(comm, p);
    const int d = c.hops_from(p.root);
    for (size_t off = part.begin; ok && off < part.begin + part.count; off += slot) {
      const size_t len = coll_gpu_min(slot, part.begin + part.count - off);
      if (d == 0)  // the root: push the buffer to the next GPU
        ok = c.template step<kSend>(out + off, nullptr, len);
      else if (d < n - 1)  // keep what arrived and push it on
        ok = c.template step<kRecv | kCopyOut | kSend>(nullptr, out + off, len);
      else  // the last GPU of the chain: keep it
        ok = c.template step<kRecv | kCopyOut>(nullptr, out + off, len);
    }
  } else if (p.coll == COLL_GPU_COLL_ALLGATHER) {
    // the blocks of the ranks at positions 0, k, 2k, ... go round the ring, n - 1 hops each: on the plain ring
    // (k = 1) every rank's; on rings that take turns (k = p.run) those of the ranks that start their node's run
    // on this one. A rank i places into its run (mod k) pushes its own block (i = 0), then receives the blocks
    // s = i (mod k) hops from their start and pushes each on, but the one n - 1 hops from it (i = k - 1: the
    // block of the rank after me), which it only keeps
    auto block = [&](int ring_pos) { return out + (size_t)c.rank_at(ring_pos) * p.block; };
    const int k = p.run > 0 ? p.run : 1, i = c.pos % k;
    for (size_t off = part.begin; ok && off < part.begin + part.count; off += slot) {
      const size_t len = coll_gpu_min(slot, part.begin + part.count - off);
      if (i == 0) ok = c.template step<kSend | kCopyOut>(in + off, block(c.pos) + off, len);
      for (int s = i == 0 ? k : i; ok && s < n - 1; s += k)
        ok = c.template step<kRecv | kCopyOut | kSend>(nullptr, block(c.pos - s) + off, len);
      if (ok && i == k - 1) ok = c.template step<kRecv | kCopyOut>(nullptr, block(c.pos + 1) + off, len);
    }
  } else {  // alltoall, 2 ranks: the peer is both next and previous
    const size_t mine = (size_t)comm.rank * p.block, theirs = (size_t)c.next * p.block;
    if (!sender && in + mine != out + mine)  // while the first step is on its way: my own block
      block_copy(c.aligned(), in + mine + part.begin, out + mine + part.begin, part.count);
    for (size_t off = part.begin; ok && off < part.begin + part.count; off += slot) {
      const size_t len = coll_gpu_min(slot, part.begin + part.count - off);
      if (sender)  // push my block for the peer
        ok = c.template step<kSend>(in + theirs + off, nullptr, len);
      else  // keep the peer's block for me
        ok = c.template step<kRecv | kCopyOut>(nullptr, out + theirs + off, len);
    }
  }
  if (p.coll == COLL_GPU_COLL_BCAST) await_started(comm, p, c.w);
  if (halves)
    c.save(sender, !sender);
  else
    c.save();
  block_done(c.w.status, p.seq);
}

template <int Align>
__global__ void __launch_bounds__(kRingThreads) move_p2p(const __grid_constant__ coll_gpu_dev_comm_t comm,
                                                         const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  const int n = comm.nranks, pairs = (int)gridDim.x / 2, conns = pairs / (n - 1);
  const bool sender = (int)blockIdx.x < pairs;
  const int b = (int)blockIdx.x % pairs, k = 1 + b / conns, conn = b % conns;
  const int to = (comm.rank + k) % n, from = (comm.rank + n - k) % n;
  RingChannel<uint8_t, OpSum<uint8_t>, Align> c(comm, p, aligned, to, from, conn);
  const char *in = (const char *)p.sendbuf;
  char *out = (char *)p.recvbuf;
  const bool gather = p.coll == COLL_GPU_COLL_ALLGATHER;
  const size_t mine = (size_t)comm.rank * p.block, mine_in = gather ? 0 : mine;
  if (!sender && in + mine_in != out + mine) {  // while the first step is on its way: my share of my own block
    const coll_gpu_range_t own = coll_gpu_part(p.count, pairs, b, kPack);
    block_copy(c.aligned(), in + mine_in + own.begin, out + mine + own.begin, own.count);
  }
  const coll_gpu_range_t part = coll_gpu_part(p.count, conns, conn, kPack);
  const char *src = in + (gather ? 0 : (size_t)to * p.block);
  char *dst = out + (size_t)from * p.block;
  bool ok = true;
  for (size_t off = part.begin; ok && off < part.begin + part.count; off += c.slot_bytes) {
    const size_t len = coll_gpu_min(c.slot_bytes, part.begin + part.count - off);
    if (sender)
      ok = c.template step<kSend>(src + off, nullptr, len);
    else
      ok = c.template step<kRecv | kCopyOut>(nullptr, dst + off, len);
  }
  c.save(sender, !sender);
  block_done(c.w.status, p.seq);
}

// Bruck's slots of one side of a step: the m blocks from block `first` on (mod n) of the receive buffer, as runs of
// blocks back to back, each in slots of at most `slot` bytes.
struct BruckSlots {
  const coll_gpu_work_t &p;
  const int n, first, m;
  const size_t slot;
  char *const out;
  int j = 0;       // the blocks before the current run
  size_t off = 0;  // bytes of the current run already handed out
  // The next slot: its place in the receive buffer and its bytes; false when the blocks are done.
  __device__ bool next(char **at, size_t *len) {
    while (j < m) {
      const int b = (first + j) % n, run = p.count == p.block ? coll_gpu_min(m - j, n - b) : 1;
      const size_t bytes = (size_t)(run - 1) * p.block + p.count;
      if (off < bytes) {
        *at = out + (size_t)b * p.block + off;
        *len = coll_gpu_min(slot, bytes - off);
        off += *len;
        return true;
      }
      j += run;
      off = 0;
    }
    return false;
  }
};

template <int Align>
__global__ void __launch_bounds__(kRingThreads) move_bruck(const __grid_constant__ coll_gpu_dev_comm_t comm,
                                                           const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  const int n = comm.nranks, me = comm.rank;
  char *out = (char *)p.recvbuf;
  const char *in = (const char *)p.sendbuf;
  if (in != out + (size_t)me * p.block)
    block_copy(call_aligned<Align>(aligned), in, out + (size_t)me * p.block, p.count);
  __syncthreads();  // my block in place before a step sends it
  bool ok = true;
  for (int d = 1; ok && d < n; d *= 2) {
    const int m = coll_gpu_min(d, n - d), to = (me + n - d) % n, from = (me + d) % n;
    RingChannel<uint8_t, OpSum<uint8_t>, Align> c(comm, p, aligned, to, from, 0);
    const size_t slot = p.chunk > 0 && p.chunk < c.slot_bytes ? p.chunk : c.slot_bytes;
    BruckSlots tx{p, n, me, m, slot, out}, rx{p, n, from, m, slot, out};
    // a slot sent, then one received, in turn: a step larger than the FIFO then never waits for a peer that waits
    // for it (each side of a step has as many slots as the other side's peer cuts)
    for (bool sends = true, receives = true; ok && (sends || receives);) {
      char *at;
      size_t len;
      if (sends && (sends = tx.next(&at, &len))) ok = c.template step<kSend>(at, nullptr, len);
      if (ok && receives && (receives = rx.next(&at, &len))) ok = c.template step<kRecv | kCopyOut>(nullptr, at, len);
    }
    c.save();
    __syncthreads();  // the step's verdicts read before the next step's channel writes them
  }
  block_done(comm.status, p.seq);
}

// A zero-copy block's part `part` of `parts`, copied (16-byte loads and stores where both ends allow).
__device__ void zc_copy(const coll_gpu_zc_t &z, int parts, int part) {
  const coll_gpu_range_t r = coll_gpu_part(z.bytes, parts, part, kPack);
  const char *src = (const char *)z.src;
  char *dst = (char *)z.dst;
  if (src != dst) block_copy(packs_aligned(src, dst), src + r.begin, dst + r.begin, r.count);
}

__global__ void __launch_bounds__(kRingThreads)
    move_zero_copy(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p) {
  const int n = comm.nranks, parts = p.zc_parts;
  const int k = (int)blockIdx.x / parts, part = (int)blockIdx.x % parts;
  announce_start(comm, p);
  const Waiter w(comm);
  const Layout L(comm.layout);
  if (k == 0) {  // my own block
    zc_copy(p.zc[comm.rank], parts, part);
    block_done(comm.status, p.seq);
    return;
  }
  const int to = (comm.rank + k) % n, from = (comm.rank + n - k) % n;
  __shared__ int ok;
  if (threadIdx.x == 0)
    ok = w.wait_geq(flag_at(comm.peer_scratch[comm.rank], L.started(to)), p.seq, to);  // to's buffer is its call's
  __syncthreads();
  if (ok) {
    zc_copy(p.zc[to], parts, part);
    __syncthreads();
    if (threadIdx.x == 0) {
      fence_release_sys();  // the part's stores, then its flag
      st_relaxed_sys(flag_at(comm.peer_scratch[to], L.copied(comm.rank, part)), p.seq);
      w.wait_geq(flag_at(comm.peer_scratch[comm.rank], L.copied(from, part)), p.seq, from);
    }
  }
  __syncthreads();
  block_done(comm.status, p.seq);
}

__global__ void zc_enter(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p) {
  announce_start(comm, p);
  const Waiter w(comm);
  const int q = (int)threadIdx.x;
  if (q < comm.nranks && q != comm.rank)
    w.wait_geq(flag_at(comm.peer_scratch[comm.rank], Layout(comm.layout).started(q)), p.seq, q);
}

__global__ void __launch_bounds__(kRingThreads) zc_own(const __grid_constant__ coll_gpu_zc_t z) {
  zc_copy(z, (int)gridDim.x, (int)blockIdx.x);
}

__global__ void zc_leave(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p) {
  const Waiter w(comm);
  const Layout L(comm.layout);
  const int q = (int)threadIdx.x;
  if (q < comm.nranks && q != comm.rank) {
    fence_release_sys();  // the copies ended before this kernel began; its flag goes after them
    st_relaxed_sys(flag_at(comm.peer_scratch[q], L.copied(comm.rank, 0)), p.seq);
    w.wait_geq(flag_at(comm.peer_scratch[comm.rank], L.copied(q, 0)), p.seq, q);
  }
  block_done(comm.status, p.seq);
}

}  // namespace

// The pairwise alltoall's connections per peer: the call's channels shared among the peers.
static int p2p_conns(int nranks, const coll_gpu_work_t &p) {
  return (int)coll_gpu_min(coll_gpu_max(p.nchannels / (nranks - 1), 1), COLL_GPU_P2P_CONNS);
}

static bool pairwise(int nranks, const coll_gpu_work_t &p) {
  if (p.algo == COLL_GPU_ALGO_PAIRWISE) return p.coll == COLL_GPU_COLL_ALLGATHER;
  return p.algo == COLL_GPU_ALGO_RING && p.coll == COLL_GPU_COLL_ALLTOALL && nranks > 2;
}

int move_blocks(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p) {
  if (p.algo == COLL_GPU_ALGO_ONESHOT) return ll_blocks(p.count, comm.max_blocks);
  if (p.zc_parts > 0) return p.zc_engines ? 1 : comm.nranks * p.zc_parts;
  // alltoall: a sending and a receiving block on each channel (2 ranks) or connection (pairwise)
  if (pairwise(comm.nranks, p)) return 2 * (comm.nranks - 1) * p2p_conns(comm.nranks, p);
  if (p.algo == COLL_GPU_ALGO_BRUCK) return 1;
  return p.coll == COLL_GPU_COLL_ALLTOALL ? 2 * p.nchannels : p.nchannels;
}

// The pairwise kernel of an alltoall or allgather (pairwise).
static int p2p_launch(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p, bool aligned, cudaStream_t stream) {
  if (aligned)
    move_p2p<kAligned><<<move_blocks(comm, p), kRingThreads, 0, stream>>>(comm, p, true);
  else
    move_p2p<kUnaligned><<<move_blocks(comm, p), kRingThreads, 0, stream>>>(comm, p, false);
  return (int)cudaGetLastError();
}

int move_launch(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p, cudaStream_t stream) {
  const bool aligned = move_aligned(p.sendbuf, p.recvbuf, p.coll, p.block);
  switch (p.algo) {
    case COLL_GPU_ALGO_ONESHOT:
      move_ll<<<move_blocks(comm, p), kLLThreads, 0, stream>>>(comm, p, aligned);
      break;
    case COLL_GPU_ALGO_RING:
      if (p.zc_parts > 0) {
        if (!comm.direct || p.zc_parts > COLL_GPU_ZC_PARTS || p.zc_engines) return (int)cudaErrorInvalidValue;
        move_zero_copy<<<move_blocks(comm, p), kRingThreads, 0, stream>>>(comm, p);
        break;
      }
      if (pairwise(comm.nranks, p)) return p2p_launch(comm, p, aligned, stream);
      if (aligned)
        move_ring<kAligned><<<move_blocks(comm, p), kRingThreads, 0, stream>>>(comm, p, true);
      else
        move_ring<kUnaligned><<<move_blocks(comm, p), kRingThreads, 0, stream>>>(comm, p, false);
      break;
    case COLL_GPU_ALGO_PAIRWISE:
      if (p.coll != COLL_GPU_COLL_ALLGATHER || comm.nranks < 3 || comm.nranks > COLL_GPU_MAX_DIRECT)
        return (int)cudaErrorInvalidValue;
      return p2p_launch(comm, p, aligned, stream);
    case COLL_GPU_ALGO_BRUCK:
      if (p.coll != COLL_GPU_COLL_ALLGATHER || comm.nranks < 3 || comm.nranks > COLL_GPU_MAX_DIRECT)
        return (int)cudaErrorInvalidValue;
      if (aligned)
        move_bruck<kAligned><<<1, kRingThreads, 0, stream>>>(comm, p, true);
      else
        move_bruck<kUnaligned><<<1, kRingThreads, 0, stream>>>(comm, p, false);
      break;
    default:
      return (int)cudaErrorInvalidValue;
  }
  return (int)cudaGetLastError();
}

int move_zc_engines(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p, cudaStream_t stream,
                    cudaStream_t copy_stream, cudaEvent_t ready, cudaEvent_t copied) {
  if (!comm.direct || !p.zc_engines || p.zc_parts < 1 || p.zc_parts > COLL_GPU_ZC_PARTS || comm.nranks > 32)
    return (int)cudaErrorInvalidValue;
  zc_enter<<<1, 32, 0, stream>>>(comm, p);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaEventRecord(ready, stream);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(copy_stream, ready, 0);
  for (int q = 0; q < comm.nranks && err == cudaSuccess; ++q)
    if (q != comm.rank && p.zc[q].bytes > 0)
      err = cudaMemcpyAsync(p.zc[q].dst, p.zc[q].src, p.zc[q].bytes, cudaMemcpyDeviceToDevice, copy_stream);
  if (err == cudaSuccess) err = cudaEventRecord(copied, copy_stream);
  const coll_gpu_zc_t &own = p.zc[comm.rank];
  if (err == cudaSuccess && own.bytes > 0 && own.src != own.dst) {
    zc_own<<<p.zc_parts, kRingThreads, 0, stream>>>(own);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaStreamWaitEvent(stream, copied, 0);
  if (err != cudaSuccess) return (int)err;  // no flag says a block was copied that may not have been
  zc_leave<<<1, 32, 0, stream>>>(comm, p);
  return (int)cudaGetLastError();
}

}  // namespace coll_gpu
