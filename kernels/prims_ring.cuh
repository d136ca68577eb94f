/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The ring primitives, Simple protocol: one block per channel moves a buffer's parts through its ring's
 * connections, one FIFO slot per step. Every ring collective is a list of steps over them (NCCL's
 * runRing): send, recv, recvReduceSend, recvReduceCopySend, recvCopySend.
 *
 * A channel reaches its neighbours through its two connections (coll_gpu_conn_t in the communicator's
 * device copy, kernels/kernels.h). A send writes into the send connection's FIFO slot (step mod depth),
 * then raises its tail; a receive waits for the receive connection's tail, consumes the slot, then raises
 * its head, which frees the slot. One release fence after the step's data orders both flags. Each
 * channel's step counters (steps sent, steps received) live in this rank's scratch: a kernel reads them
 * when it starts and saves them when it ends, so the host never replays the kernels' arithmetic, and
 * calls whose ranks send and receive different numbers of steps (a broadcast's root) keep them right.
 *
 * On a NET connection (host memory that the network proxy moves) a step of 1 to ll_bytes bytes travels as LL
 * lines instead (common/ll.h): the sender writes its lines and no tail, so it needs no system fence behind
 * them; the receiver polls its lines, every thread its own, instead of the tail and then the slot, so one
 * read of host memory instead of two. Each end of a connection chooses by the step's size alone.
 */
#ifndef COLL_GPU_KERNELS_PRIMS_RING_CUH
#define COLL_GPU_KERNELS_PRIMS_RING_CUH

#include <cuda_runtime.h>

#include "common/ll.h"
#include "kernels/primitives.cuh"

namespace coll_gpu {

// A ring kernel's block: kRingWorkers threads that move each step's data, and a warp that posts its flags
// (RingChannel::step).
constexpr int kRingWorkers = kThreads;
constexpr int kRingThreads = kRingWorkers + 32;

// A barrier of the workers of a ring block only (named barrier 1; __syncthreads is barrier 0).
__device__ __forceinline__ void workers_barrier() { asm volatile("bar.sync 1, %0;" ::"r"(kRingWorkers) : "memory"); }

// What a step does; a step sends what it received (reduced with this rank's data under kReduce), or
// this rank's own data when it receives nothing.
enum { kRecv = 1, kReduce = 2, kCopyOut = 4, kSend = 8 };

// A block's pair of connections: a ring channel's, or the point-to-point ones to one peer and from
// another (the alltoall of more than 2 ranks, kernels/move.cu). Align: kAligned or kUnaligned for a
// kernel per alignment, kAlignRuntime to be told (primitives.cuh).
template <typename T, typename Op, int Align = kAlignRuntime>
struct RingChannel {
  const coll_gpu_work_t &p;
  const bool told;  // kAlignRuntime: whether the call's buffers start on a pack boundary
  const Waiter w;
  const int nranks;
  int pos, next, prev;   // my position in this channel's ring, and my neighbours there
  const uint16_t *ring;  // the ranks in ring order
  uint64_t send_step, recv_step;
  uint64_t *sent, *received;  // the connections' counters in my scratch
  // thread 0: the highest tail and head it has read. A step whose flag they already cover does not read
  // it again (NCCL's connTailCache and connHeadCache): the acquire that saw the value orders the step's
  // loads, through the barrier that follows the waits.
  uint64_t tail_seen = 0, head_seen = 0;
  coll_gpu_conn_t send, recv;
  size_t slot_bytes;

  // The call's ring channel b: the b-th of the channels it runs on (coll_gpu_work_t's rings).
  __device__ RingChannel(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &work, bool aligned_, int b)
      : p(work), told(aligned_), w(comm), nranks(comm.nranks) {
    const coll_gpu_dev_channel_t &c = comm.channels[coll_gpu_work_channel(work.rings, comm.nrings, comm.span, b)];
    pos = c.pos;
    next = c.next;
    prev = c.prev;
    ring = c.ring;
    send = c.send;
    recv = c.recv;
    sent = c.steps;
    received = c.steps + 1;
    send_step = *sent;
    recv_step = *received;
    slot_bytes = comm.layout.slot_bytes;
  }
  // Point-to-point connection `conn` to rank `to` and from rank `from` (no ring: pos is -1).
  __device__ RingChannel(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &work, bool aligned_, int to, int from,
                         int conn)
      : p(work), told(aligned_), w(comm), nranks(comm.nranks), pos(-1), next(to), prev(from), ring(nullptr) {
    const coll_gpu_dev_peer_t &t = comm.peers[to], &f = comm.peers[from];
    send = t.send[conn];
    recv = f.recv[conn];
    sent = t.steps[conn];
    received = f.steps[conn] + 1;
    send_step = *sent;
    recv_step = *received;
    slot_bytes = COLL_GPU_P2P_SLOT_BYTES;
  }

  // Whether a step of `bytes` travels on connection k as LL lines.
  __device__ static bool ll(const coll_gpu_conn_t &k, size_t bytes) {
    return k.ll != nullptr && bytes > 0 && bytes <= k.ll_bytes;
  }

  // Whether the call's buffers start on a pack boundary (load_pack): a constant unless told.
  __device__ bool aligned() const { return call_aligned<Align>(told); }

  // The rank at ring position `at` (any integer, taken mod the ring's length).
  __device__ int rank_at(int at) const { return ring[(at % nranks + nranks) % nranks]; }
  // Hops along this channel's ring from `rank` to me (0: I am `rank`).
  __device__ int hops_from(int rank) const {
    int at = 0;
    while (at < nranks - 1 && ring[at] != rank) ++at;
    return (pos - at + nranks) % nranks;
  }

  // Saves the counters for the channel's next kernel (every thread holds the same; the kernel's end
  // orders the store before that kernel's loads): both, or only the one of the direction this block
  // drives where another block of the kernel drives the other (the 2-rank alltoall).
  __device__ void save(bool sends = true, bool receives = true) {
    if (threadIdx.x == 0) {
      if (sends) *sent = send_step;
      if (receives) *received = recv_step;
    }
  }

  // One step on `bytes` bytes: `in` is this rank's data (read when the step reduces or sends it), `out`
  // where the step's result goes (kCopyOut). False when the host aborted the call.
  //
  // The block's first kRingWorkers threads move the data; its last warp posts the flags (NCCL's Simple
  // has the same split). Thread 0 waits for the step's flags, a barrier of the workers only starts the
  // data, and a barrier of the whole block ends it; then the posting thread's system-scope fence, which
  // waits until every store of the step has reached the peer, runs while the workers already wait for
  // and move the next step, instead of holding the whole block. With LL lines on both connections (or the
  // one the step uses) there is no fence at all.
  template <int Mode>
  __device__ bool step(const char *in, char *out, size_t bytes) {
    // thread 0's wait, told the workers: they read it before the block's barrier below, and thread 0 writes it again
    // (in this channel's next step or another's of the same Mode) only after that barrier. The step's verdict is
    // the barrier's AND of every thread's (a worker whose LL wait the host aborted says no), so that every thread
    // of the block takes the same way on
    __shared__ int go;
    const bool ll_recv = (Mode & kRecv) && ll(recv, bytes), ll_send = (Mode & kSend) && ll(send, bytes);
    int fine = 1;
    if (threadIdx.x < kRingWorkers) {
      if (threadIdx.x == 0) {
        int good = 1;
        if ((Mode & kRecv) && !ll_recv && tail_seen < recv_step + 1)
          good = w.wait_geq(recv.tail, recv_step + 1, prev, &tail_seen);
        if (good && (Mode & kSend) && send_step + 1 > COLL_GPU_RING_SLOTS &&
            head_seen < send_step + 1 - COLL_GPU_RING_SLOTS)
          good = w.wait_geq(send.head, send_step + 1 - COLL_GPU_RING_SLOTS, next, &head_seen);
        go = good;
      }
      workers_barrier();
      fine = go;
      if (fine) {
        if (!ll_recv && !ll_send)
          step_data<Mode>(in, out, bytes);
        else
          fine = step_data_ll<Mode>(in, out, bytes, ll_recv, ll_send);
      }
    }
    if (!__syncthreads_and(fine)) return false;
    if (threadIdx.x == kRingWorkers) {
      const bool tail = (Mode & kSend) && !ll_send;
      // a NET connection's proxy sends the step's bytes, not the slot
      if (tail && send.sizes != nullptr) send.sizes[send_step % COLL_GPU_RING_SLOTS] = bytes;
      // this step's stores and loads, then both flags; a head behind LL lines needs none: the lines' loads
      // are done, their data stored
      if (tail || ((Mode & kRecv) && !ll_recv)) fence_release_sys();
      if (tail) st_relaxed_sys(send.tail, send_step + 1);
      if (Mode & kRecv) st_relaxed_sys(recv.head, recv_step + 1);
    }
    if (Mode & kSend) ++send_step;
    if (Mode & kRecv) ++recv_step;
    return true;
  }

  // A pack's result from what arrived (v) and this rank's own (mine), stored at `out` where the step copies out;
  // what the step sends on.
  template <int Mode>
  __device__ uint4 result(uint4 v, uint4 mine, char *out, int n) const {
    if (!(Mode & kRecv)) v = mine;
    if (Mode & kReduce) v = reduce_pack<T, Op>(v, mine);
    if (Mode & kCopyOut) store_out<T>(aligned(), out, v, n);
    return v;
  }

  // The workers' part of a step: the data.
  template <int Mode>
  __device__ void step_data(const char *in, char *out, size_t bytes) {
    constexpr bool kMine = (Mode & kReduce) || !(Mode & kRecv);
    const char *src = recv.buff + (recv_step % COLL_GPU_RING_SLOTS) * slot_bytes;
    char *dst = send.buff + (send_step % COLL_GPU_RING_SLOTS) * slot_bytes;
    const size_t stride = (size_t)kRingWorkers * kPack;
    for (size_t tile = (size_t)threadIdx.x * kPack; tile < bytes; tile += stride * kUnroll) {
      uint4 v[kUnroll], mine[kUnroll];
      int n[kUnroll];
      tile_packs(tile, stride, bytes, n);
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if (n[k] == 0) continue;
        const size_t i = tile + k * stride;
        if (Mode & kRecv) v[k] = load_slot_pack(src + i, n[k]);
        if (kMine) mine[k] = load_pack(aligned(), in + i, n[k]);
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if (n[k] == 0) continue;
        const size_t i = tile + k * stride;
        v[k] = result<Mode>(v[k], mine[k], out + i, n[k]);
        if (Mode & kSend) *(uint4 *)(dst + i) = v[k];  // a whole pack: the slot has room, the receiver masks
      }
    }
  }

  // The workers' part of a step with LL lines on either connection: a pack a thread at a time (so a warp's
  // 32 packs at a time, common/ll.h's group), its two lines polled in the receive connection's LL slot (ll_recv) or its
  // pack read from the slot, its result written as two lines into the send connection's LL slot (ll_send, thread 0
  // adding the header) or into the slot. False when the host aborted a wait.
  template <int Mode>
  __device__ bool step_data_ll(const char *in, char *out, size_t bytes, bool ll_recv, bool ll_send) {
    constexpr bool kMine = (Mode & kReduce) || !(Mode & kRecv);
    const int rslot = (int)(recv_step % COLL_GPU_RING_SLOTS), sslot = (int)(send_step % COLL_GPU_RING_SLOTS);
    const char *src = recv.buff + rslot * slot_bytes;
    char *dst = send.buff + sslot * slot_bytes;
    const uint4 *rlines = ll_recv ? (const uint4 *)(recv.ll + rslot * coll_gpu_ll_stride(recv.ll_bytes)) + 1 : nullptr;
    uint4 *slines = ll_send ? (uint4 *)(send.ll + sslot * coll_gpu_ll_stride(send.ll_bytes)) + 1 : nullptr;
    const uint32_t rflag = coll_gpu_ll_flag(recv_step), sflag = coll_gpu_ll_flag(send_step);
    if (ll_send && threadIdx.x == 0) ll_store(slines - 1, (uint32_t)bytes, 0, sflag);
    for (size_t i = (size_t)threadIdx.x * kPack; i < bytes; i += (size_t)kRingWorkers * kPack) {
      const int n = (int)coll_gpu_min(kPack, bytes - i);
      const size_t u = i / kPack;
      uint4 v = make_uint4(0, 0, 0, 0), mine = v;
      if ((Mode & kRecv) && ll_recv &&
          !ll_get(rlines + coll_gpu_ll_line(u, 0), rlines + coll_gpu_ll_line(u, 1), rflag, w, prev, &v))
        return false;
      if ((Mode & kRecv) && !ll_recv) v = load_slot_pack(src + i, n);
      if (kMine) mine = load_pack(aligned(), in + i, n);
      v = result<Mode>(v, mine, out + i, n);
      if ((Mode & kSend) && ll_send) ll_put(slines + coll_gpu_ll_line(u, 0), slines + coll_gpu_ll_line(u, 1), v, sflag);
      if ((Mode & kSend) && !ll_send) *(uint4 *)(dst + i) = v;
    }
    return true;
  }

  // A step on elements [begin, begin + count) of the call's buffers, at the same place in both.
  template <int Mode>
  __device__ bool step_at(size_t begin, size_t count) {
    return step<Mode>((const char *)p.sendbuf + begin * sizeof(T), (char *)p.recvbuf + begin * sizeof(T),
                      count * sizeof(T));
  }
};

// A call in which a rank can finish before a peer has begun it (a bcast's root and a reduce's first rank
// only send, and a send needs no freed slot while the FIFO has room) would let that rank reach a one-shot
// or two-shot call two seqs later and write a slot of the parity a slow peer still reads. Such a kernel
// announces its start to every peer, and its block 0 ends only once every peer has announced: so, as in
// the other collectives, no rank finishes a call before every rank has begun it (and so finished the one
// before). One store per peer; the wait is over by the time a large call ends.
// Only on one node (comm.direct): a communicator with NET connections runs no one-shot or two-shot call.
__device__ __forceinline__ void announce_start(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p) {
  if (comm.direct && blockIdx.x == 0 && threadIdx.x < comm.nranks && (int)threadIdx.x != comm.rank)
    st_relaxed_sys(flag_at(comm.peer_scratch[threadIdx.x], Layout(comm.layout).started(comm.rank)), p.seq);
}
// Block 0, before block_done: waits until every peer has announced this call.
__device__ __forceinline__ void await_started(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p,
                                              const Waiter &w) {
  if (!comm.direct || blockIdx.x != 0 || threadIdx.x != 0) return;
  const Layout L(comm.layout);
  for (int s = 0; s < comm.nranks; ++s)
    if (s != comm.rank && !w.wait_geq(flag_at(comm.peer_scratch[comm.rank], L.started(s)), p.seq, s)) return;
}

}  // namespace coll_gpu

#endif
