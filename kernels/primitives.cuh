/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Device-side building blocks shared by the allreduce algorithms: the scratch layout, system-scope
 * flags, waits the host can abort, 16-byte packs (vector loads when aligned, byte loads when not) and LL lines.
 */
#ifndef COLL_GPU_KERNELS_PRIMITIVES_CUH
#define COLL_GPU_KERNELS_PRIMITIVES_CUH

#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/partition.h"
#include "kernels/reduce_ops.cuh"

namespace coll_gpu {

constexpr int kPack = 16;           // bytes of one vector load or store
constexpr int kLine = 128;          // cache line: every flag gets its own, so polls do not share lines
constexpr int kThreads = 512;       // threads per block of the two-shot kernel; the workers of a ring block
constexpr int kLLThreads = 256;     // threads per block for the LL one-shot
constexpr int kSpinsPerCheck = 64;  // polls between two reads of the global timer
constexpr int kUnroll = 4;          // packs each thread keeps in flight: one load per pack would leave a block
                                    // latency-bound at about 8 KiB per memory round trip

// Scratch layout (kernels/kernels.h). Flags first, each on its own line:
//   tail[ch]: ring steps posted to us by the previous rank; head[ch]: ring slots freed by the next rank;
//   flag[phase][sender][block]: the seq of the last one-shot/two-shot phase a sender completed.
struct Layout {
  coll_gpu_scratch_layout_t l;
  COLL_GPU_HD explicit Layout(const coll_gpu_scratch_layout_t &layout) : l(layout) {}
  COLL_GPU_HD static size_t align(size_t x) { return (x + 255) & ~(size_t)255; }
  // the direct algorithms' parts (LL lines, two-shot slots, point-to-point) exist for at most
  // COLL_GPU_MAX_DIRECT ranks; a larger communicator runs the rings only
  COLL_GPU_HD bool direct() const { return l.nranks <= COLL_GPU_MAX_DIRECT; }
  COLL_GPU_HD size_t tail(int ch) const { return (size_t)ch * kLine; }
  COLL_GPU_HD size_t head(int ch) const { return (size_t)(COLL_GPU_MAX_CHANNELS + ch) * kLine; }
  COLL_GPU_HD size_t flag(int phase, int sender, int block) const {
    return (size_t)(2 * COLL_GPU_MAX_CHANNELS + (phase * COLL_GPU_MAX_DIRECT + sender) * 2 * COLL_GPU_MAX_CHANNELS +
                    block) *
           kLine;
  }
  // started[sender]: the last seq a sender began of the calls that end without hearing from every rank
  // (kernels/prims_ring.cuh, announce_start)
  COLL_GPU_HD size_t started(int sender) const { return flag(2, 0, 0) + (size_t)sender * kLine; }
  // copied[sender][part]: the last seq whose part `part` a sender has written into this rank's receive buffer
  // (the zero-copy alltoall, kernels/move.cu)
  COLL_GPU_HD size_t copied(int sender, int part) const {
    return started(COLL_GPU_MAX_DIRECT) + ((size_t)sender * COLL_GPU_ZC_PARTS + part) * kLine;
  }
  // a rank's own copied[rank][*] lines are never a peer's flag: the first counts the blocks of its zero-copy
  // reduce-scatter that have read their inputs (kernels/reduce.cuh)
  COLL_GPU_HD size_t zc_reads(int rank) const { return copied(rank, 0); }
  COLL_GPU_HD size_t flags_end() const { return copied(COLL_GPU_MAX_DIRECT, 0); }
  // this rank's use only: each ring channel's step counters (kernels/prims_ring.cuh), and the call block 0
  // of a lingering one-shot kernel hands to its other blocks
  COLL_GPU_HD size_t steps(int ch) const { return align(flags_end()) + (size_t)ch * 2 * sizeof(uint64_t); }
  COLL_GPU_HD size_t linger_call() const { return align(steps(COLL_GPU_MAX_CHANNELS)); }
  // LL: two 16-byte lines carry one 16-byte unit of data
  COLL_GPU_HD size_t ll_lines() const { return direct() ? l.ll_bytes / 8 : 0; }
  COLL_GPU_HD size_t ll(int parity, int sender) const {
    return linger_call() + kLine + ((size_t)parity * l.nranks + sender) * ll_lines() * kPack;
  }
  COLL_GPU_HD size_t ll_end() const { return ll(2, 0); }
  // two-shot: per parity, a reduce-scatter region and an all-gather region, each nranks slots
  // a chunk is at most bytes / nranks plus one element plus a pack of rounding (kernels/partition.h)
  COLL_GPU_HD size_t ts_slot() const { return direct() ? align(l.twoshot_bytes / l.nranks + 4 * kPack) : 0; }
  COLL_GPU_HD size_t ts(int parity, int region, int sender) const {
    return align(ll_end()) + (((size_t)parity * 2 + region) * l.nranks + sender) * ts_slot();
  }
  COLL_GPU_HD size_t ts_end() const { return ts(2, 0, 0); }
  COLL_GPU_HD size_t fifo(int ch, int slot) const {
    return align(ts_end()) + ((size_t)ch * COLL_GPU_RING_SLOTS + slot) * l.slot_bytes;
  }
  // this rank's use only: its connections as its kernels see them (coll_gpu_dev_conns_t), then the ring orders
  // (rings[ring][position], 16-bit)
  COLL_GPU_HD size_t conns() const { return align(fifo(l.nchannels, 0)); }
  COLL_GPU_HD size_t rings() const { return conns() + sizeof(coll_gpu_dev_conns_t); }
  COLL_GPU_HD size_t rings_end() const { return rings() + (size_t)COLL_GPU_MAX_RINGS * l.nranks * sizeof(uint16_t); }
  // point-to-point, with more than 2 ranks: tail[sender][c] (steps a sender posted to us on its connection c),
  // head[receiver][c] (slots a receiver freed of our connection c to it), each on its own line; the step
  // counters [peer][c] (this rank's use only); the FIFOs [sender][c][slot]
  COLL_GPU_HD bool p2p() const { return l.nranks > 2 && direct(); }
  COLL_GPU_HD size_t p2p_tail(int sender, int c) const {
    return align(rings_end()) + (size_t)(sender * COLL_GPU_P2P_CONNS + c) * kLine;
  }
  COLL_GPU_HD size_t p2p_head(int receiver, int c) const {
    return p2p_tail(COLL_GPU_MAX_DIRECT, 0) + (size_t)(receiver * COLL_GPU_P2P_CONNS + c) * kLine;
  }
  COLL_GPU_HD size_t p2p_steps(int peer, int c) const {
    return p2p_head(COLL_GPU_MAX_DIRECT, 0) + (size_t)(peer * COLL_GPU_P2P_CONNS + c) * 2 * sizeof(uint64_t);
  }
  COLL_GPU_HD size_t p2p_fifo(int sender, int c, int slot) const {
    return align(p2p_steps(COLL_GPU_MAX_DIRECT, 0)) +
           ((size_t)(sender * COLL_GPU_P2P_CONNS + c) * COLL_GPU_RING_SLOTS + slot) * COLL_GPU_P2P_SLOT_BYTES;
  }
  COLL_GPU_HD size_t total() const { return p2p() ? p2p_fifo(l.nranks, 0, 0) : rings_end(); }
};

#ifdef __CUDACC__

__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(uint64_t *p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// One release for several flags: a fence, then relaxed stores (a release store each would make every
// store after the first wait for the one before it to reach its peer).
__device__ __forceinline__ void fence_release_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ __forceinline__ void st_relaxed_sys(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t global_timer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A wait that only the host ends (kernels/kernels.h: late is not dead). Every kSpinsPerCheck polls it
// reads the global timer; once the kernel has run kAbortCheckNs it also reads the host's abort word (a
// host-memory load, about 1 us, so not in the first microseconds every call spends in its waits), and
// past timeout_ns it flags the peer it waits for in the communicator's waiting bytes (and status->waited).
constexpr uint64_t kAbortCheckNs = 1000000;
struct Waiter {
  uint64_t check_from, report_from;
  coll_gpu_dev_status_t *status;
  volatile uint8_t *waiting;
  __device__ explicit Waiter(const coll_gpu_dev_comm_t &comm) : status(comm.status), waiting(comm.waiting) {
    check_from = global_timer() + kAbortCheckNs;
    report_from = check_from - kAbortCheckNs + comm.timeout_ns;
  }
  // True when the host aborted the call: the wait must end.
  __device__ bool expired(int spins, int peer) const {
    if (spins % kSpinsPerCheck != 0) return false;
    const uint64_t t = global_timer();
    if (t < check_from) return false;
    if (t >= report_from && !waiting[peer]) {
      waiting[peer] = 1;
      status->waited = 1;
    }
    if (status->abort == 0) return false;
    status->error = COLL_GPU_KERR_ABORTED;
    __threadfence_system();  // the host reads these once it sees done, which block_done orders at gpu scope only
    return true;
  }
  // Waits until *flag >= value, leaving the value it saw in *seen; false when the host aborted the call.
  __device__ bool wait_geq(const uint64_t *flag, uint64_t value, int peer, uint64_t *seen) const {
    uint64_t v;
    for (int spins = 1; (v = ld_acquire_sys(flag)) < value; ++spins)
      if (expired(spins, peer)) return false;
    *seen = v;
    return true;
  }
  __device__ bool wait_geq(const uint64_t *flag, uint64_t value, int peer) const {
    uint64_t seen;
    return wait_geq(flag, value, peer, &seen);
  }
};

__device__ __forceinline__ uint64_t *flag_at(void *base, size_t off) { return (uint64_t *)((char *)base + off); }

// Whether both buffers start on a pack boundary (the kernels' vector path).
__device__ __host__ __forceinline__ bool packs_aligned(const void *a, const void *b) {
  return ((uintptr_t)a % kPack) == 0 && ((uintptr_t)b % kPack) == 0;
}

// How a kernel knows whether the call's buffers are pack-aligned: fixed, in a copy of the kernel per
// alignment (kAligned, kUnaligned), or told at run time (kAlignRuntime: one kernel, half the kernels to
// compile). On one H100 (coll_gpu_kernel_bench -n 2) the run-time test made the ring allreduce 0.5-1.7%
// and the two-shot 2-2.6% slower, and the rings of the moves 0.1-1.4% at 8-64 MiB (allgather 678 -> 687
// us at 64 MiB): those keep a copy per alignment (the moves' ring is one kernel in all). The ring of
// reduce and reduce-scatter cost 1.0-1.2% and 0.4% (reduce 423 -> 428 us at 64 MiB), but a copy per
// alignment there made each generated reduce unit take 25-75% longer to compile (nvcc on reduce_f32 and
// reduce_u8a), which the 2-core build cannot spare: they take the run-time test, as do the direct LL
// kernels of the moves and reductions, where it cost nothing measurable.
enum { kAlignRuntime = 0, kAligned = 1, kUnaligned = 2 };
template <int Align>
__device__ __forceinline__ bool call_aligned(bool told) {
  return Align == kAlignRuntime ? told : Align == kAligned;
}

// The first n bytes (n <= 16) at p, and the rest zero, as a pack; and the first n bytes of a pack stored at
// p. Byte by byte, but with the pack in registers. Taking its address (a char pointer into it) put every
// pack of the kernels on the stack: each 16-byte load was followed by a store of its register to the
// stack, which waits for the data, so a thread had one load in flight instead of kUnroll (or 2 kUnroll).
// On 2 H200 the ring allgather of 256 MiB took 1068 us that way and 819 without (cuobjdump -sass showed
// the LDG.E.128 / STL.128 pairs; ptxas -v a 16-byte stack frame in every kernel, none now).
template <bool kVolatile = false>
__device__ __forceinline__ uint4 load_bytes(const char *p, int n) {
  uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < kPack; ++i)
    if (i < n) {
      const uint32_t b = kVolatile ? ((const volatile uint8_t *)p)[i] : ((const uint8_t *)p)[i];
      w[i / 4] |= b << (8 * (i % 4));
    }
  return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ void store_bytes(char *p, uint4 v, int n) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < kPack; ++i)
    if (i < n) p[i] = (char)(w[i / 4] >> (8 * (i % 4)));
}

// 16 bytes of data: a vector load when the call's buffers are pack-aligned (`aligned`, the same for every
// thread) and the pack is whole, byte loads otherwise (unaligned buffers, or n < 16 at a buffer end).
__device__ __forceinline__ uint4 load_pack(bool aligned, const char *p, int n) {
  if (aligned && n == kPack) return *(const uint4 *)p;
  return load_bytes(p, n);
}
__device__ __forceinline__ void store_pack(bool aligned, char *p, uint4 v, int n) {
  if (aligned && n == kPack)
    *(uint4 *)p = v;
  else
    store_bytes(p, v, n);
}

// The bytes of each of this thread's packs in one tile of a block's range [0, len), 0 past its end. A
// tile holds kUnroll packs per thread, interleaved so that each k is one coalesced sweep of the block;
// stride is the block's threads times kPack, and pack k starts at tile + k * stride.
__device__ __forceinline__ void tile_packs(size_t tile, size_t stride, size_t len, int (&n)[kUnroll]) {
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const size_t i = tile + k * stride;
    n[k] = i < len ? (int)coll_gpu_min(kPack, len - i) : 0;
  }
}

// The first n bytes (0 < n <= 16) of the pack at p in a FIFO slot, the rest zero: one volatile vector load
// whatever n, as a slot holds whole packs (its steps start at pack boundaries and it is a multiple of 16
// bytes long). Byte loads of a pack's end cost a round trip each through a NET FIFO's host memory: on one
// H200, an 8-byte bcast over the network proxy took 29 us against 20 at 16 bytes.
__device__ __forceinline__ uint4 load_slot_pack(const char *p, int n) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  if (n < kPack) {
    uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int keep = n - 4 * j;  // bytes of word j to keep
      w[j] = keep >= 4 ? w[j] : keep <= 0 ? 0u : w[j] & ((1u << (8 * keep)) - 1u);
    }
    v = make_uint4(w[0], w[1], w[2], w[3]);
  }
  return v;
}

// 16 bytes that a peer wrote into our scratch: volatile loads, never an L1 line from an earlier use.
__device__ __forceinline__ uint4 load_peer_pack(const char *p, int n) {
  return n == kPack ? load_slot_pack(p, kPack) : load_bytes<true>(p, n);
}

// Applies op elementwise on the 16/sizeof(T) elements of two packs.
template <typename T, typename Op>
__device__ __forceinline__ uint4 reduce_pack(uint4 a, uint4 b) {
  static_assert(kPack % sizeof(T) == 0, "element sizes divide the pack");
  union U {
    uint4 v;
    T e[kPack / sizeof(T)];
    __device__ U() {}
  } x, y;
  x.v = a;
  y.v = b;
  Op op;
#pragma unroll
  for (int i = 0; i < (int)(kPack / sizeof(T)); ++i) x.e[i] = op(x.e[i], y.e[i]);
  return x.v;
}

// LL: a 16-byte line holds 8 data bytes, each 4 next to a copy of the flag; one 16-byte store makes
// data and flags visible together, so a reader that sees both flags sees the data.
__device__ __forceinline__ void ll_store(void *line, uint32_t d0, uint32_t d1, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(line), "r"(d0), "r"(flag), "r"(d1), "r"(flag)
               : "memory");
}
__device__ __forceinline__ bool ll_load(const void *line, uint32_t flag, uint32_t *d0, uint32_t *d1) {
  uint32_t f0, f1;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(*d0), "=r"(f0), "=r"(*d1), "=r"(f1)
               : "l"(line)
               : "memory");
  return f0 == flag && f1 == flag;
}
// One 16-byte unit of data as two LL lines, its low 8 bytes in lo and its high 8 in hi; side by side (lines,
// lines + 1) in the direct kernels' slots, a warp's lows then its highs in a NET FIFO's (common/ll.h).
__device__ __forceinline__ void ll_put(uint4 *lo, uint4 *hi, uint4 v, uint32_t flag) {
  ll_store(lo, v.x, v.y, flag);
  ll_store(hi, v.z, v.w, flag);
}
__device__ __forceinline__ void ll_put(uint4 *lines, uint4 v, uint32_t flag) { ll_put(lines, lines + 1, v, flag); }
// Waits for both lines of a unit that `peer` writes; false when the host aborted the call. Both loads are
// in flight at once: the peer writes the two lines together, so one round trip usually finds both.
__device__ __forceinline__ bool ll_get(const uint4 *lo_line, const uint4 *hi_line, uint32_t flag, const Waiter &w,
                                       int peer, uint4 *v) {
  bool lo = ll_load(lo_line, flag, &v->x, &v->y), hi = ll_load(hi_line, flag, &v->z, &v->w);
  for (int spins = 1; !(lo && hi); ++spins) {
    if (w.expired(spins, peer)) return false;
    if (!lo) lo = ll_load(lo_line, flag, &v->x, &v->y);
    if (!hi) hi = ll_load(hi_line, flag, &v->z, &v->w);
  }
  return true;
}
__device__ __forceinline__ bool ll_get(const uint4 *lines, uint32_t flag, const Waiter &w, int peer, uint4 *v) {
  return ll_get(lines, lines + 1, flag, w, peer, v);
}

// Blocks of a direct LL kernel for `bytes` per part: a thread per 16-byte unit up to the block limit;
// the done[] words bound the grid.
inline int ll_blocks(size_t bytes, int most) {
  const size_t units = coll_gpu_div_up(bytes, kPack);
  const size_t cap = most > 0 && most < 2 * COLL_GPU_MAX_CHANNELS ? (size_t)most : 2 * COLL_GPU_MAX_CHANNELS;
  return (int)coll_gpu_min(coll_gpu_max(coll_gpu_div_up(units, kLLThreads), 1), cap);
}

// The bytes of an element that are data: the pair types with a hole (MPI_DOUBLE_INT, MPI_LONG_INT: 4 bytes
// after the index; MPI_SHORT_INT: 2 bytes after the value) must leave the receive buffer's hole alone.
template <typename T>
struct Hole {
  static constexpr int begin = 0, end = 0;  // no hole
};
template <>
struct Hole<DoubleInt> {
  static constexpr int begin = 12, end = 16;
};
template <>
struct Hole<LongInt> {
  static constexpr int begin = 12, end = 16;
};
template <>
struct Hole<ShortInt> {
  static constexpr int begin = 2, end = 4;
};

// Stores a result pack into the receive buffer; for types with a hole, the hole keeps its bytes.
template <typename T>
__device__ __forceinline__ void store_out(bool aligned, char *p, uint4 v, int n) {
  if (Hole<T>::end > Hole<T>::begin) {  // byte b of the pack is bits 8 (b % 4) of word b / 4
    const uint4 old = load_pack(aligned, p, n);
    uint32_t d[4] = {v.x, v.y, v.z, v.w};
    const uint32_t o[4] = {old.x, old.y, old.z, old.w};
#pragma unroll
    for (int e = 0; e < kPack; e += (int)sizeof(T))
#pragma unroll
      for (int b = e + Hole<T>::begin; b < e + Hole<T>::end; ++b) {
        const uint32_t mask = 0xffu << (8 * (b % 4));
        d[b / 4] = (d[b / 4] & ~mask) | (o[b / 4] & mask);
      }
    v = make_uint4(d[0], d[1], d[2], d[3]);
  }
  store_pack(aligned, p, v, n);
}

// A call as the kernels run it: BAND, BOR and BXOR of a wider integer type become the same op on its
// bytes (uint8_t, count and blocks in bytes), so that their kernels exist once (COLL_GPU_DISPATCH_BYTEWISE,
// which every launch uses). The results are the same bits.
inline size_t bytewise_width(coll_gpu_dtype_t type, coll_gpu_redop_t op) {  // 1: runs as it is
  const bool bits = op == COLL_GPU_BAND || op == COLL_GPU_BOR || op == COLL_GPU_BXOR;
  return bits && type <= COLL_GPU_UINT64 ? coll_gpu_dtype_size(type) : 1;
}
inline coll_gpu_work_t bytewise(const coll_gpu_work_t &p) {
  coll_gpu_work_t q = p;
  const size_t width = bytewise_width(p.type, p.op);
  if (width == 1) return q;
  q.type = COLL_GPU_UINT8;
  q.count *= width;
  q.each *= width;
  for (int r = 0; r < COLL_GPU_MAX_DIRECT; ++r) {
    q.blocks[r].begin *= width;
    q.blocks[r].count *= width;
  }
  return q;
}

// Reduce-scatter: rank q's elements of sendbuf (coll_gpu_work_t's blocks, or its equal blocks of `each`).
__device__ __host__ __forceinline__ coll_gpu_range_t rs_block(const coll_gpu_work_t &p, int q) {
  return p.each != 0 ? coll_gpu_range_t{(size_t)q * p.each, p.count} : p.blocks[q];
}

// One call as the direct (one-shot, LL) bodies read it: a kernel of one call takes it from its work, a
// lingering kernel (allreduce_oneshot.cu) the later ones from the host's records.
struct Call {
  const char *sendbuf;
  char *recvbuf;
  size_t count;  // elements (the moves: bytes)
  size_t block;  // allgather and alltoall: bytes from one rank's block to the next in the buffers; reduce-scatter
                 // of equal blocks: elements from one rank's block to the next in sendbuf (coll_gpu_work_t's each)
  uint64_t seq;
  int coll, type, op, root;
};
__device__ __forceinline__ Call call_of(const coll_gpu_work_t &p) {
  const size_t block = p.coll == COLL_GPU_COLL_REDUCE_SCATTER ? p.each : p.block;
  return Call{(const char *)p.sendbuf, (char *)p.recvbuf, p.count, block, p.seq, p.coll, p.type, p.op, p.root};
}

// Tells the host this block is done. The block's results are device memory that the host only reads
// through CUDA work it issues after it sees the word, work that runs on this GPU: a gpu-scope fence by
// every thread, then the barrier, order them before the word for every such reader. A system-scope
// release instead costs about 1.5 us per call on the H200 machines (an empty kernel and a host spin on
// its word: 8.1 us with __threadfence_system before the store, 6.6 us without). The error words are
// made visible system-wide where they are written (Waiter::expired).
__device__ __forceinline__ void block_done(coll_gpu_dev_status_t *status, uint64_t seq) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) st_relaxed_sys((uint64_t *)&status->done[blockIdx.x], seq);
}

// The algorithms, one file each. One-shot, two-shot and ring (allreduce_oneshot.cuh,
// allreduce_twoshot.cuh, allreduce_ring.cuh) are a kernel per type and op, behind their typed launchers,
// which the files that kernels/generate.sh writes instantiate a few at a time so that the build runs them
// in parallel; the lingering one-shot (allreduce_oneshot.cu) is one kernel for every type and op. Every
// kernel gets the communicator and the call's work by value.
int oneshot_blocks(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w);
// Defines typed launcher `name`: call w with Kernel<T, Op, kAligned or kUnaligned> for the call's buffers.
#define COLL_GPU_DEFINE_TYPED(name, Kernel, grid, block)                                     \
  template <typename T, typename Op>                                                         \
  int name(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream) { \
    if (packs_aligned(w.sendbuf, w.recvbuf))                                                 \
      Kernel<T, Op, kAligned><<<grid, block, 0, stream>>>(comm, w, true);                    \
    else                                                                                     \
      Kernel<T, Op, kUnaligned><<<grid, block, 0, stream>>>(comm, w, false);                 \
    return (int)cudaGetLastError();                                                          \
  }
template <typename T, typename Op>
int oneshot_typed(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream);
template <typename T, typename Op>
int twoshot_typed(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream);
template <typename T, typename Op>
int ring_typed(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream);
template <typename T, typename Op>
int tree_typed(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream);
// The moves (kernels/move.cu): bcast, allgather and alltoall.
int move_launch(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream);
int move_blocks(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w);
int move_zc_engines(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream,
                    cudaStream_t copy_stream, cudaEvent_t ready, cudaEvent_t copied);
// Reduce and reduce-scatter (kernels/reduce.cuh): direct LL and ring, per type and op.
template <typename T, typename Op>
int reduce_typed(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w, cudaStream_t stream);
int reduce_blocks(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w);

#endif  // __CUDACC__

}  // namespace coll_gpu

#endif
