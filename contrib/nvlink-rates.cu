/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * What the NVLink between GPU 0 and GPU 1 carries when multiprocessors copy over it, by thread blocks,
 * the ceiling the ring kernels work against. Three copies of 256 MiB, each block a contiguous part of it
 * in steps of `chunk` bytes, 512 threads, 4 (or 8) 16-byte packs in flight per thread, and with chunk > 0
 * what a ring step adds: a block barrier, a system-scope fence and a flag store after every step:
 *   push: GPU 0 loads its memory and stores into GPU 1's (the ring kernels' sends);
 *   pull: GPU 1 loads GPU 0's memory and stores into its own;
 *   local: GPU 1 copies within its memory, with plain, volatile (the FIFO loads), .cg and relaxed loads
 *          (a receiver's copy out of its FIFO);
 * and the copy engine (cudaMemcpyPeerAsync) for reference. Prints GB/s per block count.
 *
 * build and run (2 GPUs with peer access):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/nvlink-rates contrib/nvlink-rates.cu && /tmp/nvlink-rates
 *
 * On 2 H200 (NVLS off): copy engine 390 GB/s; push 350 GB/s from 16 blocks without steps, 309 (16 blocks)
 * to 353 (64) and 368 (128) with a fence every 64 KiB, 341-370 with one every 512 KiB; pull like push
 * without steps but 197 (16 blocks) to 365 (64) with 64 KiB steps; a local copy with plain loads 28 GB/s
 * per block (451 GB/s with 16 blocks, 64 KiB steps). So one direction carries about 355-370 GB/s from
 * the multiprocessors whatever the block count above 16, and NCCL's ring broadcast (24 blocks) reaches
 * 354. (The local rows with volatile, .cg and relaxed loads came after that run and have not run yet.)
 */
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

enum { kPlain, kVolatile, kCg, kRelaxed };

template <int Load>
__device__ __forceinline__ uint4 load(const uint4 *p) {
  uint4 v;
  if (Load == kPlain) return *p;
  if (Load == kVolatile)
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  if (Load == kCg)
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  if (Load == kRelaxed)
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  return v;
}

// Each block copies its part of n packs in steps of `step` packs (0: one step), Unroll packs in flight
// per thread; with a flag, each step ends as a ring step does: barrier, fence, flag.
template <int Unroll, int Load>
__global__ void copy(const uint4 *src, uint4 *dst, size_t n, size_t step, uint64_t *flag) {
  const size_t per = (n + gridDim.x - 1) / gridDim.x, begin = per * blockIdx.x;
  const size_t end = begin + per < n ? begin + per : n;
  if (step == 0) step = end - begin;
  for (size_t s = begin; s < end; s += step) {
    const size_t e = s + step < end ? s + step : end;
    for (size_t i = s + threadIdx.x; i < e; i += (size_t)blockDim.x * Unroll) {
      uint4 v[Unroll];
#pragma unroll
      for (int k = 0; k < Unroll; ++k)
        if (i + (size_t)k * blockDim.x < e) v[k] = load<Load>(src + i + (size_t)k * blockDim.x);
#pragma unroll
      for (int k = 0; k < Unroll; ++k)
        if (i + (size_t)k * blockDim.x < e) dst[i + (size_t)k * blockDim.x] = v[k];
    }
    if (flag != nullptr) {
      __syncthreads();
      if (threadIdx.x == 0) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(flag + 16 * blockIdx.x), "l"((uint64_t)s) : "memory");
      }
    }
  }
}

constexpr size_t kBytes = (size_t)256 << 20, kPacks = kBytes / 16;
constexpr int kThreads = 512;

// GB/s of fn run 10 times on `device`, after one warm-up run.
template <typename Fn>
static double rate(int device, Fn fn) {
  CHECK(cudaSetDevice(device));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  fn();
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(a));
  for (int i = 0; i < 10; ++i) fn();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return (double)kBytes * 10 / (ms * 1e-3) / 1e9;
}

template <int Unroll, int Load>
static void row(const char *what, int device, const uint4 *src, uint4 *dst, size_t chunk, uint64_t *flag) {
  static const int blocks[] = {16, 24, 32, 48, 64, 96, 128};
  std::printf("%-22s chunk %6zu:", what, chunk);
  for (int nb : blocks) {
    const double g = rate(device, [&] {
      copy<Unroll, Load><<<nb, kThreads>>>(src, dst, kPacks, chunk / 16, chunk != 0 ? flag : nullptr);
      CHECK(cudaGetLastError());
    });
    std::printf(" %d:%.0f", nb, g);
  }
  std::printf("\n");
}

int main() {
  int ndev = 0;
  CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 2) {
    std::printf("needs 2 GPUs, found %d\n", ndev);
    return 1;
  }
  uint4 *src0, *src1, *dst1;
  uint64_t *flags1;
  CHECK(cudaSetDevice(1));
  CHECK(cudaDeviceEnablePeerAccess(0, 0));
  CHECK(cudaMalloc(&src1, kBytes));
  CHECK(cudaMalloc(&dst1, kBytes));
  CHECK(cudaMalloc(&flags1, 1 << 20));
  CHECK(cudaMemset(src1, 1, kBytes));
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceEnablePeerAccess(1, 0));
  CHECK(cudaMalloc(&src0, kBytes));
  CHECK(cudaMemset(src0, 1, kBytes));
  std::printf("GB/s by thread blocks, 256 MiB from GPU 0 to GPU 1\n");
  std::printf("copy engine push: %.0f\n", rate(0, [&] { CHECK(cudaMemcpyPeerAsync(dst1, 1, src0, 0, kBytes)); }));
  for (size_t chunk : {(size_t)0, (size_t)65536, (size_t)524288}) {
    row<4, kPlain>("push, 4 in flight", 0, src0, dst1, chunk, flags1);
    row<8, kPlain>("push, 8 in flight", 0, src0, dst1, chunk, flags1);
    row<4, kPlain>("pull, 4 in flight", 1, src0, dst1, chunk, flags1);
    row<8, kPlain>("pull, 8 in flight", 1, src0, dst1, chunk, flags1);
  }
  for (size_t chunk : {(size_t)65536, (size_t)524288}) {
    row<4, kPlain>("local, plain loads", 1, src1, dst1, chunk, flags1);
    row<4, kVolatile>("local, volatile loads", 1, src1, dst1, chunk, flags1);
    row<4, kCg>("local, .cg loads", 1, src1, dst1, chunk, flags1);
    row<4, kRelaxed>("local, relaxed loads", 1, src1, dst1, chunk, flags1);
  }
  return 0;
}
