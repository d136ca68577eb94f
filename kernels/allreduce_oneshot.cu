/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The lingering one-shot kernel (kernels/kernels.h, coll_gpu_dev_status_t): it serves the call it was
 * launched with, then block 0 polls host memory for the next and hands each call it takes (or the order
 * to exit) to the other blocks as an LL record in this rank's scratch. Only block 0 decides, so every
 * block serves the same calls. One kernel serves the direct calls of allreduce and reduce (the one-shot
 * body of kernels/allreduce_oneshot.cuh) and of reduce-scatter (kernels/reduce_scatter_ll.cuh) for every type and
 * op, and of bcast, allgather and alltoall (kernels/move_ll.cuh).
 */
#include "kernels/allreduce_oneshot.cuh"
#include "kernels/cuda_status.h"
#include "kernels/move_ll.cuh"
#include "kernels/reduce_scatter_ll.cuh"

namespace coll_gpu {
namespace {

// A call record: COLL_GPU_LINGER_WORDS words, each 32 bits of the call (low half) next to its ticket
// (high half), so its 16-byte parts are LL lines flagged with the ticket. Lanes 0-7 of a warp each hold
// one part (words 2l and 2l + 1), so one memory round trip reads it all. Word 7 holds the type (bits
// 0-7), the op (8-15), the collective (20-23) and the root (24-31); bits 16 and 17 say what to do (the
// host sets kRecExit alone to make the kernel leave at once). Words 8-9 hold Call's block; a
// reduce-scatter's there are its blocks' distance (equal blocks), or with kRecCounts words 8 to 15 hold
// each rank's count, the blocks one after another from sendbuf.
enum : uint32_t { kRecServe = 0, kRecLast = 1u << 16, kRecExit = 1u << 17, kRecCounts = 1u << 18 };
constexpr int kRecParts = COLL_GPU_LINGER_WORDS / 2;
constexpr unsigned kRecLanes = (1u << kRecParts) - 1;
static_assert(kRecParts * kPack <= kLine, "a record fits the scratch line before the LL slots");

// Lanes 0-7: true on each when every part of the record carries ticket.
__device__ bool read_record(const void *rec, uint32_t ticket, uint32_t &d0, uint32_t &d1) {
  return __all_sync(kRecLanes, ll_load((const char *)rec + threadIdx.x * kPack, ticket, &d0, &d1));
}

// Lanes 0-7 of block 0: the host's call `ticket`, or the decision to exit; word 7 (lane 3's d1) says
// which (kRec*).
__device__ void leader_next(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p, uint32_t ticket, uint32_t &d0,
                            uint32_t &d1) {
  coll_gpu_dev_status_t *st = comm.status;
  const uint64_t deadline = global_timer() + comm.linger_ns;
  while (!read_record((const void *)st->call, ticket, d0, d1)) {
    if (!__shfl_sync(kRecLanes, global_timer() >= deadline, 0)) continue;
    // say so, then look once more: the host either sees this or posted before this look
    if (threadIdx.x == 0) {
      st_relaxed_sys((uint64_t *)&st->leaving, p.instance);
      __threadfence_system();
    }
    __syncwarp(kRecLanes);
    if (read_record((const void *)st->call, ticket, d0, d1)) {
      if (threadIdx.x == 3) d1 |= kRecLast;
      break;
    }
    d1 = kRecExit;
    return;
  }
  __threadfence_system();  // acquire: the buffers as the host left them when it posted
}

// Lanes 0-7 of the other blocks: block 0's record for `ticket`. Block 0 writes one for every ticket
// within linger_ns plus a call, and a call's waits end only when they are served or the host aborts them:
// so does this wait.
__device__ void follower_next(const coll_gpu_dev_comm_t &comm, const void *rec, uint32_t ticket, uint32_t &d0,
                              uint32_t &d1) {
  for (int spins = 1; !read_record(rec, ticket, d0, d1); ++spins) {
    if (spins % kSpinsPerCheck == 0 && __shfl_sync(kRecLanes, comm.status->abort != 0, 0)) {
      d1 = kRecExit;
      return;
    }
  }
  __threadfence();  // acquire, as block 0 did
}

__device__ Call decode(const uint32_t (&d)[COLL_GPU_LINGER_WORDS]) {
  return Call{(const char *)((uint64_t)d[1] << 32 | d[0]),
              (char *)((uint64_t)d[3] << 32 | d[2]),
              d[4],
              (uint64_t)d[9] << 32 | d[8],
              (uint64_t)d[6] << 32 | d[5],
              (int)((d[7] >> 20) & 0xf),
              (int)(d[7] & 0xff),
              (int)((d[7] >> 8) & 0xff),
              (int)(d[7] >> 24)};
}

template <typename T, typename Op>
__device__ __noinline__ void linger_typed(const coll_gpu_dev_comm_t &p, const Call &c) {
  // a copy of the call per alignment (the constant folds into each): the one-shot kernel is latency-bound,
  // and one copy with the run-time test took 4.5 us instead of 4.0 for 1 KiB (coll_gpu_kernel_bench -n 2
  // -a oneshot on one H100); it is one file, so the copies cost the build little
  if (packs_aligned(c.sendbuf, c.recvbuf))
    oneshot_call<T, Op>(p, c, true);
  else
    oneshot_call<T, Op>(p, c, false);
}

// A reduce-scatter's blocks: rank q's elements of sendbuf.
struct RsBlocks {
  coll_gpu_range_t block[COLL_GPU_MAX_DIRECT];
};

// The blocks of the call the kernel was launched with.
__device__ RsBlocks rs_of(const coll_gpu_work_t &p) {
  RsBlocks b;
  for (int q = 0; q < COLL_GPU_MAX_DIRECT; ++q) b.block[q] = rs_block(p, q);
  return b;
}

// The blocks of record d (call c): equal ones c.block elements apart, or with kRecCounts each rank's count, one
// block after another.
__device__ RsBlocks rs_decode(const uint32_t (&d)[COLL_GPU_LINGER_WORDS], const Call &c) {
  RsBlocks b;
  const bool counted = (d[7] & kRecCounts) != 0;
  size_t at = 0;
  for (int q = 0; q < COLL_GPU_MAX_DIRECT; ++q) {
    b.block[q] = counted ? coll_gpu_range_t{at, d[8 + q]} : coll_gpu_range_t{(size_t)q * c.block, c.count};
    at += b.block[q].count;
  }
  return b;
}

template <typename T, typename Op>
__device__ __noinline__ void linger_rs(const coll_gpu_dev_comm_t &p, const Call &c, const RsBlocks &rs) {
  bool aligned = packs_aligned(c.sendbuf, c.recvbuf);
  for (int q = 0; q < p.nranks; ++q) aligned = aligned && rs.block[q].begin * sizeof(T) % kPack == 0;
  const auto block = [&](int q) { return rs.block[q]; };
  reduce_scatter_call<T, Op>(p, c.sendbuf, c.recvbuf, c.seq, block, aligned);
}

__device__ __noinline__ void linger_move(const coll_gpu_dev_comm_t &p, const Call &c) {
  if (move_aligned(c.sendbuf, c.recvbuf, c.coll, c.block))
    move_call(p, c, true);
  else
    move_call(p, c, false);
}

__device__ void linger_serve(const coll_gpu_dev_comm_t &p, const Call &c, const RsBlocks &rs) {
  if (c.coll == COLL_GPU_COLL_REDUCE_SCATTER)
    COLL_GPU_DISPATCH_BYTEWISE(linger_rs, , (coll_gpu_dtype_t)c.type, (coll_gpu_redop_t)c.op, p, c, rs);
  if (c.coll != COLL_GPU_COLL_ALLREDUCE && c.coll != COLL_GPU_COLL_REDUCE) return linger_move(p, c);
  COLL_GPU_DISPATCH_BYTEWISE(linger_typed, , (coll_gpu_dtype_t)c.type, (coll_gpu_redop_t)c.op, p, c);
}

__global__ void __launch_bounds__(kLLThreads)
    oneshot_linger(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p) {
  __shared__ uint32_t next[COLL_GPU_LINGER_WORDS];
  char *rec = (char *)comm.peer_scratch[comm.rank] + Layout(comm.layout).linger_call();
  Call c = call_of(p);
  RsBlocks rs;  // a reduce-scatter's
  if (c.coll == COLL_GPU_COLL_REDUCE_SCATTER) rs = rs_of(p);
  uint32_t what = kRecServe;
  for (uint32_t ticket = p.ticket;; ticket = ticket + 1 == 0 ? 1 : ticket + 1) {
    linger_serve(comm, c, rs);
    block_done(comm.status, c.seq);
    if (what & kRecLast) break;
    if (threadIdx.x < kRecParts) {
      uint32_t d0, d1;
      if (blockIdx.x == 0) {
        leader_next(comm, p, ticket, d0, d1);
        if (gridDim.x > 1) ll_store(rec + threadIdx.x * kPack, d0, d1, ticket);
      } else {
        follower_next(comm, rec, ticket, d0, d1);
      }
      next[2 * threadIdx.x] = d0;
      next[2 * threadIdx.x + 1] = d1;
    }
    __syncthreads();  // lanes 0-4 write `next` again only after the next block_done barrier
    uint32_t d[COLL_GPU_LINGER_WORDS];
#pragma unroll
    for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k) d[k] = next[k];
    what = d[7] & (kRecLast | kRecExit);
    if (what & kRecExit) break;
    c = decode(d);
    if (c.coll == COLL_GPU_COLL_REDUCE_SCATTER) rs = rs_decode(d, c);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) st_release_sys((uint64_t *)&comm.status->exited, p.instance);
}

}  // namespace

int oneshot_blocks(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &w) {
  return ll_blocks(w.count * coll_gpu_dtype_size(w.type), comm.max_blocks);
}

}  // namespace coll_gpu

extern "C" coll_gpu_status_t coll_gpu_linger_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w,
                                                    void *stream) {
  if (w->instance == 0) return coll_gpu_kernels_fail(COLL_GPU_INTERNAL_ERROR, "a lingering kernel without an instance");
  const coll_gpu_work_t b = coll_gpu::bytewise(*w);
  coll_gpu::oneshot_linger<<<coll_gpu_work_blocks(comm, w), coll_gpu::kLLThreads, 0, (cudaStream_t)stream>>>(*comm, b);
  return coll_gpu_cuda_status(cudaGetLastError());
}

extern "C" coll_gpu_status_t coll_gpu_linger_post(coll_gpu_dev_status_t *status, uint32_t ticket,
                                                  const coll_gpu_work_t *p) {
  const size_t width = coll_gpu::bytewise_width(p->type, p->op);  // as coll_gpu::bytewise
  const uint32_t type = width == 1 ? (uint32_t)p->type : (uint32_t)COLL_GPU_UINT8;
  const uint64_t send = (uint64_t)(uintptr_t)p->sendbuf, recv = (uint64_t)(uintptr_t)p->recvbuf;
  const bool rs = p->coll == COLL_GPU_COLL_REDUCE_SCATTER, counted = rs && p->each == 0;
  size_t at = 0;  // a reduce-scatter's blocks of their own counts: each that has elements after the ones before
  for (int q = 0; counted && q < COLL_GPU_MAX_DIRECT; ++q) {
    const coll_gpu_range_t b = p->blocks[q];
    if ((b.count != 0 && b.begin != at) || b.count * width > UINT32_MAX)
      return coll_gpu_kernels_fail(COLL_GPU_INTERNAL_ERROR,
                                   "a reduce-scatter for the lingering kernel whose blocks do not follow each other");
    at += b.count;
  }
  // a reduce-scatter's distance between blocks, in elements as its count (Call's block)
  const uint64_t block = rs ? p->each * width : p->block;
  const uint32_t how = type | (uint32_t)p->op << 8 | (uint32_t)p->coll << 20 | (uint32_t)p->root << 24 |
                       (counted ? (uint32_t)coll_gpu::kRecCounts : 0u);
  uint32_t d[COLL_GPU_LINGER_WORDS] = {(uint32_t)send,
                                       (uint32_t)(send >> 32),
                                       (uint32_t)recv,
                                       (uint32_t)(recv >> 32),
                                       (uint32_t)(p->count * width),
                                       (uint32_t)p->seq,
                                       (uint32_t)(p->seq >> 32),
                                       how,
                                       (uint32_t)block,
                                       (uint32_t)(block >> 32)};
  for (int q = 0; counted && q < COLL_GPU_MAX_DIRECT; ++q) d[8 + q] = (uint32_t)(p->blocks[q].count * width);
  for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k) status->call[k] = (uint64_t)ticket << 32 | d[k];
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return COLL_GPU_SUCCESS;
}

extern "C" void coll_gpu_linger_stop(coll_gpu_dev_status_t *status, uint32_t ticket) {
  for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k)
    status->call[k] = (uint64_t)ticket << 32 | (k == 7 ? (uint32_t)coll_gpu::kRecExit : 0u);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
