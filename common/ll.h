/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * LL over a NET connection: the lines a step travels in between a kernel and its network proxy, in the
 * FIFO's host memory, so that neither side needs a flag behind the data (NCCL's LL protocol on its NET
 * buffers). The kernels write and read them (kernels/prims_ring.cuh), the proxy reads and writes them
 * (proxy/proxy.cc); this is the format both keep.
 *
 * Beside its slots, a NET FIFO has `depth` LL slots of coll_gpu_ll_stride(ll_bytes) bytes each. An LL slot
 * is a header line, then the step's lines. A line is 16 bytes: 8 bytes of data, each 4 of them in an 8-byte
 * word next to the step's flag ({data0, flag, data1, flag} as 32-bit words). A reader that sees the flag in
 * both words of a line has its data, whoever wrote it and however it got there, as long as each 8-byte
 * word is written at once (an aligned 8-byte store; the GPU writes a line in one 16-byte store). A step of
 * `bytes` travels as whole 16-byte packs of data, pack u as two lines: its low 8 bytes in line
 * coll_gpu_ll_line(u, 0), its high 8 in coll_gpu_ll_line(u, 1). The packs of a group of 32 (a warp's, one a
 * thread) have their low lines side by side, then their high lines, so that each of a warp's two stores or
 * loads covers 512 contiguous bytes: over PCIe that is a few large transfers instead of 32 of 16 bytes. With
 * a pack's two lines side by side instead, steps of 2 to 16 KiB took 1.1-2.0x the time of steps in the slot
 * (the allgather across 2 virtual nodes of one rank, on one H200; docs/benchmarks.md).
 *   send side: the kernel writes the step's lines and the header line {bytes, flag, 0, flag}, in any order,
 *     and raises neither tail nor sizes; the proxy sees the header's flag, waits for every line's, and sends
 *     the data. A step in the FIFO's plain slot (raised tail) has no header of its flag.
 *   receive side: the proxy writes every arrived step of at most ll_bytes as lines too (before it raises
 *     the tail), so a kernel may poll the lines instead of the tail and then read the slot.
 * The flag of step s is odd, 2s + 1 in 32 bits: never the zeros of fresh memory, and a line of an earlier
 * step in the same slot holds another flag until 2^31 steps later.
 */
#ifndef COLL_GPU_LL_H
#define COLL_GPU_LL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define COLL_GPU_LL_HD __host__ __device__ __forceinline__
#else
#define COLL_GPU_LL_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes of a line, and of its data. */
#define COLL_GPU_LL_LINE 16
#define COLL_GPU_LL_LINE_DATA 8
/* The most data bytes of an LL step (coll_gpu_net_ll_bytes' bound): below the proxy's synchronous sends (64 KiB
 * over UCX), so that an LL step always goes eagerly, within the receiver's credits. */
#define COLL_GPU_LL_MAX_BYTES (32 << 10)

/* Packs of a group, whose low lines come first, then their high ones. */
#define COLL_GPU_LL_GROUP 32

COLL_GPU_LL_HD uint32_t coll_gpu_ll_flag(uint64_t step) { return (uint32_t)(2 * step + 1); }
/* Packs of a step of `bytes`. */
COLL_GPU_LL_HD size_t coll_gpu_ll_packs(size_t bytes) { return (bytes + 15) / 16; }
/* The line of pack u's low (half 0) or high (half 1) 8 bytes, counted from the first after the header. */
COLL_GPU_LL_HD size_t coll_gpu_ll_line(size_t u, int half) {
  return (u / COLL_GPU_LL_GROUP) * 2 * COLL_GPU_LL_GROUP + (size_t)half * COLL_GPU_LL_GROUP + u % COLL_GPU_LL_GROUP;
}
/* Bytes of an LL slot that holds steps of up to ll_bytes: the header line and every line up to the last pack's
 * high one, on 128-byte lines. */
COLL_GPU_LL_HD size_t coll_gpu_ll_stride(size_t ll_bytes) {
  const size_t packs = coll_gpu_ll_packs(ll_bytes);
  const size_t lines = packs > 0 ? coll_gpu_ll_line(packs - 1, 1) + 1 : 0;
  return (COLL_GPU_LL_LINE * (1 + lines) + 127) & ~(size_t)127;
}

#ifdef __cplusplus
}
#endif

#endif
