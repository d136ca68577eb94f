/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * What an alltoall among the GPUs of one machine can move at most: every GPU sends a block of B bytes to each
 * of its peers at once, and the slowest GPU's time is the call's floor. Four ways, for B of 1, 16, 64 and 256 MiB
 * (best of 3 runs of 10-50 calls, each call synchronized on every GPU):
 *   ce:   the copy engines, cudaMemcpyPeerAsync, one stream per peer;
 *   push: one kernel per GPU (a block per SM, 512 threads, 4 packs of 16 bytes in flight per thread) storing
 *         into its peers' memory, the blocks shared among the peers (the zero-copy kernel's way);
 *   pull: the same kernel loading from its peers' memory into its own;
 *   mix:  the copy engine to one peer, the kernel's stores to the others.
 * Prints the time and the bytes each GPU sends per second.
 *
 * build and run (GPUs with peer access; N GPUs, optionally the kernel's blocks):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/alltoall-ceiling contrib/alltoall-ceiling.cu && /tmp/alltoall-ceiling 4
 *
 * On 4 H200 (NVLS off), 256 MiB blocks: ce 4,112 us (196 GB/s a GPU), push 2,294 (351), pull 2,577 (313), mix
 * 2,211 (364); 16 MiB: 276, 164, 182, 170 us. On 2 of them (CUDA_VISIBLE_DEVICES=0,1, argument 2), 256 MiB: ce 698
 * us (385 GB/s), push 750 (358), pull 815 (329).
 */
#include <cuda_runtime.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

namespace {

constexpr int kMaxGpus = 8;
constexpr size_t kMaxBlock = (size_t)256 << 20;
enum Mode { kCe, kPush, kPull, kMix, kModes };
const char *const kModeNames[kModes] = {"ce", "push", "pull", "mix"};

double now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

// The kernel's copies: src[k] to dst[k] for each of npeers, n16 packs each.
struct Copies {
  const uint4 *src[kMaxGpus];
  uint4 *dst[kMaxGpus];
  size_t n16;
  int npeers;
};

__global__ void copy_kernel(Copies c) {
  const int k = (int)blockIdx.x % c.npeers, per = (int)gridDim.x / c.npeers, b = (int)blockIdx.x / c.npeers;
  const uint4 *s = c.src[k];
  uint4 *d = c.dst[k];
  const size_t stride = (size_t)per * blockDim.x;
  size_t i = (size_t)b * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < c.n16; i += 4 * stride) {
    const uint4 a0 = s[i], a1 = s[i + stride], a2 = s[i + 2 * stride], a3 = s[i + 3 * stride];
    d[i] = a0;
    d[i + stride] = a1;
    d[i + 2 * stride] = a2;
    d[i + 3 * stride] = a3;
  }
  for (; i < c.n16; i += stride) d[i] = s[i];
}

}  // namespace

int main(int argc, char **argv) {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  if (argc > 1) n = std::atoi(argv[1]);
  int blocks = argc > 2 ? std::atoi(argv[2]) : 0;
  if (n < 2 || n > kMaxGpus) {
    std::printf("usage: %s [GPUS (2-%d)] [BLOCKS]\n", argv[0], kMaxGpus);
    return 2;
  }
  if (blocks <= 0) CHECK(cudaDeviceGetAttribute(&blocks, cudaDevAttrMultiProcessorCount, 0));
  // GPU g's send buffer holds its block for peer p at p * B, its receive buffer peer p's block for it at p * B
  char *send[kMaxGpus], *recv[kMaxGpus];
  cudaStream_t streams[kMaxGpus][kMaxGpus];
  for (int g = 0; g < n; ++g) {
    CHECK(cudaSetDevice(g));
    for (int p = 0; p < n; ++p)
      if (p != g) CHECK(cudaDeviceEnablePeerAccess(p, 0));
    CHECK(cudaMalloc(&send[g], n * kMaxBlock));
    CHECK(cudaMalloc(&recv[g], n * kMaxBlock));
    CHECK(cudaMemset(send[g], g, n * kMaxBlock));
    for (int p = 0; p < n; ++p) CHECK(cudaStreamCreateWithFlags(&streams[g][p], cudaStreamNonBlocking));
  }
  const size_t sizes[] = {(size_t)1 << 20, (size_t)16 << 20, (size_t)64 << 20, kMaxBlock};
  for (int mode = 0; mode < kModes; ++mode)
    for (const size_t B : sizes) {
      const int calls = B >= ((size_t)64 << 20) ? 10 : 50;
      double best = 1e30;
      for (int run = 0; run < 3; ++run) {
        for (int g = 0; g < n; ++g) {
          CHECK(cudaSetDevice(g));
          CHECK(cudaDeviceSynchronize());
        }
        const double t0 = now_us();
        for (int call = 0; call < calls; ++call) {
          for (int g = 0; g < n; ++g) {
            CHECK(cudaSetDevice(g));
            const int ce_peer = mode == kCe ? -2 : mode == kMix ? (g + 1) % n : -1;  // -2: every peer
            Copies c = {};
            c.n16 = B / 16;
            for (int p = 0; p < n; ++p) {
              if (p == g) continue;
              if (ce_peer == -2 || p == ce_peer) {
                CHECK(cudaMemcpyPeerAsync(recv[p] + g * B, p, send[g] + p * B, g, B, streams[g][p]));
              } else if (mode == kPull) {
                c.src[c.npeers] = (const uint4 *)(send[p] + g * B);
                c.dst[c.npeers++] = (uint4 *)(recv[g] + p * B);
              } else {
                c.src[c.npeers] = (const uint4 *)(send[g] + p * B);
                c.dst[c.npeers++] = (uint4 *)(recv[p] + g * B);
              }
            }
            if (c.npeers > 0) copy_kernel<<<blocks / c.npeers * c.npeers, 512, 0, streams[g][g]>>>(c);
            CHECK(cudaGetLastError());
          }
          for (int g = 0; g < n; ++g) {
            CHECK(cudaSetDevice(g));
            CHECK(cudaDeviceSynchronize());
          }
        }
        const double us = (now_us() - t0) / calls;
        if (us < best) best = us;
      }
      std::printf("%d GPUs %-4s block %4zu MiB: %8.1f us %7.1f GB/s sent per GPU\n", n, kModeNames[mode], B >> 20, best,
                  (double)B * (n - 1) / best / 1e3);
    }
  return 0;
}
