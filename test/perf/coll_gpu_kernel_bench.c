/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Time per call of the collective kernels alone, with N ranks simulated in one process on the GPUs present
 * (round-robin, peer access between them): no MPI, no host work per call. Each rank's calls are
 * captured into a CUDA graph and the graphs launched one after another; the graphs of 2k calls take
 * longer than those of k by k calls, and that difference is what is reported, so the launches' skew
 * (the first rank's kernels wait for the last rank's) cancels. The figure is the kernel time plus the
 * gap between kernels of a stream, as in nccl-tests' back-to-back launches. It tells how the
 * kernels scale with the rank count where fewer GPUs than ranks are at hand: ranks sharing a GPU reach
 * each other through its L2 and HBM, not NVLink, and share its multiprocessors, so the figures are for
 * comparing kernels, not for comparing with NCCL.
 *
 * usage: coll_gpu_kernel_bench [-C COLL] [-n RANKS] [-a oneshot|twoshot|ring] [-m MIN] [-M MAX] [-c CHANNELS]
 *                              [-i ITERS]
 *   COLL: allreduce (the default), bcast, allgather, alltoall, reduce or reduce_scatter, as MPI_FLOAT MPI_SUM
 *   where it reduces, from root 0 where it has one. Sizes are bytes per block for allgather, alltoall and
 *   reduce-scatter (a rank's part of the result), of the buffer for the others.
 *   CHANNELS 0 (the default) takes the tuning model's; either is capped so that every rank's blocks fit
 *   on its GPU at once (the kernels of ranks spin for each other).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/tune.h"
#include "kernels/kernels.h"
#include "test/common/kernels_check.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The simulated ranks. */
static int nranks, ndev;
static coll_gpu_scratch_layout_t layout;
static void *scratch[COLL_GPU_MAX_DIRECT], *status_dev[COLL_GPU_MAX_DIRECT], *stream[COLL_GPU_MAX_DIRECT];
static coll_gpu_dev_status_t *status[COLL_GPU_MAX_DIRECT];
static uint8_t *waiting[COLL_GPU_MAX_DIRECT];
static void *waiting_dev[COLL_GPU_MAX_DIRECT];
static char *buf[COLL_GPU_MAX_DIRECT];
static coll_gpu_dev_comm_t comm[COLL_GPU_MAX_DIRECT]; /* each rank's, connections uploaded; one ring in rank order */
static uint64_t seq;

/* Microseconds from launching every rank's graph of `calls` calls of p to the end of the last. Each
 * rank's buffer holds a send and a receive buffer of `half` bytes. */
static double run_graphs(coll_gpu_work_t p, size_t half, int calls) {
  cudaGraphExec_t exec[COLL_GPU_MAX_DIRECT];
  for (int r = 0; r < nranks; ++r) {
    CHECK(cudaSetDevice(r % ndev));
    CHECK(cudaStreamBeginCapture((cudaStream_t)stream[r], cudaStreamCaptureModeThreadLocal));
    for (int it = 0; it < calls; ++it) {
      p.sendbuf = buf[r];
      p.recvbuf = buf[r] + half;
      p.seq = seq + 1 + (uint64_t)it;
      KCHECK(coll_gpu_work_launch(&comm[r], &p, stream[r]));
    }
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture((cudaStream_t)stream[r], &g));
    CHECK(cudaGraphInstantiate(&exec[r], g, 0));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphUpload(exec[r], (cudaStream_t)stream[r]));
    KCHECK(coll_gpu_stream_sync(stream[r]));
  }
  seq += (uint64_t)calls;
  const double t0 = now_us();
  for (int r = 0; r < nranks; ++r) {
    CHECK(cudaSetDevice(r % ndev));
    CHECK(cudaGraphLaunch(exec[r], (cudaStream_t)stream[r]));
  }
  for (int r = 0; r < nranks; ++r) {
    CHECK(cudaSetDevice(r % ndev));
    KCHECK(coll_gpu_stream_sync(stream[r]));
  }
  const double t = now_us() - t0;
  for (int r = 0; r < nranks; ++r) CHECK(cudaGraphExecDestroy(exec[r]));
  return t;
}

int main(int argc, char **argv) {
  int n = 8, nch_opt = 0, iters = 100;
  size_t min = 8, max = 1 << 20;
  coll_gpu_algo_t algo = COLL_GPU_ALGO_TWOSHOT;
  int coll = COLL_GPU_COLL_ALLREDUCE;
  for (int o; (o = getopt(argc, argv, "C:n:a:m:M:c:i:")) != -1;) {
    switch (o) {
      case 'C':
        for (coll = 0; coll < COLL_GPU_NCOLLS && strcmp(optarg, coll_gpu_coll_name((coll_gpu_coll_t)coll)) != 0;)
          ++coll;
        break;
      case 'n':
        n = atoi(optarg);
        break;
      case 'a':
        algo = strcmp(optarg, "oneshot") == 0   ? COLL_GPU_ALGO_ONESHOT
               : strcmp(optarg, "twoshot") == 0 ? COLL_GPU_ALGO_TWOSHOT
               : strcmp(optarg, "ring") == 0    ? COLL_GPU_ALGO_RING
                                                : COLL_GPU_NALGOS;
        break;
      case 'm':
        min = strtoull(optarg, NULL, 0);
        break;
      case 'M':
        max = strtoull(optarg, NULL, 0);
        break;
      case 'c':
        nch_opt = atoi(optarg);
        break;
      case 'i':
        iters = atoi(optarg);
        break;
      default:
        algo = COLL_GPU_NALGOS;
    }
  }
  coll_gpu_tune_config_t tune = {{0}, {0}, nch_opt, 16, 512 << 10, 16 << 20, 0};
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    tune.algorithm[k] = (int)algo;
    tune.protocol[k] = -1;
  }
  const int runs = coll_gpu_coll_has(coll, algo);
  /* one launch of a direct kernel takes one slot of the scratch, as an allreduce's does, whatever the collective */
  if (coll == COLL_GPU_NCOLLS || !runs || n < 2 || n > COLL_GPU_MAX_DIRECT || min < 4 || min > max || iters < 1 ||
      !coll_gpu_tune_fits(&tune, COLL_GPU_COLL_ALLREDUCE, algo, n, max)) {
    fprintf(stderr,
            "usage: %s [-C allreduce|bcast|allgather|alltoall|reduce|reduce_scatter] [-n RANKS 2-%d]\n"
            "       [-a oneshot|twoshot|ring] [-m MIN >= 4] [-M MAX] [-c CHANNELS] [-i ITERS]\n"
            "MAX is at most 512 KiB for oneshot and 16 MiB for twoshot; twoshot is allreduce's, and alltoall's\n"
            "ring is pairwise beyond 2 ranks\n",
            argv[0], COLL_GPU_MAX_DIRECT);
    return 2;
  }
  /* allgather, alltoall and reduce-scatter buffers hold a block per rank */
  const int per_rank =
      coll == COLL_GPU_COLL_ALLGATHER || coll == COLL_GPU_COLL_ALLTOALL || coll == COLL_GPU_COLL_REDUCE_SCATTER;
  const size_t half = per_rank ? (size_t)n * max : max;
  nranks = n;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("# no CUDA device here: nothing to time\n");
    return 0;
  }
  if (ndev > n) ndev = n;
  int sms = 1 << 30;
  for (int d = 0; d < ndev; ++d) {
    int s = 0, can = 1;
    CHECK(cudaDeviceGetAttribute(&s, cudaDevAttrMultiProcessorCount, d));
    if (s < sms) sms = s;
    CHECK(cudaSetDevice(d));
    for (int e = 0; e < ndev && can; ++e) {
      if (e == d) continue;
      CHECK(cudaDeviceCanAccessPeer(&can, d, e));
      cudaError_t err = can ? cudaDeviceEnablePeerAccess(e, 0) : cudaSuccess;
      if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) CHECK(err);
    }
    if (!can) ndev = 1; /* then every rank on GPU 0 */
  }
  const int budget = sms / ((n + ndev - 1) / ndev); /* blocks per rank that fit with every other rank's */

  layout = (coll_gpu_scratch_layout_t){n, tune.oneshot_max_bytes, tune.twoshot_max_bytes, 512 << 10, tune.max_channels};
  for (int r = 0; r < n; ++r) {
    CHECK(cudaSetDevice(r % ndev));
    KCHECK(coll_gpu_dev_alloc(&scratch[r], coll_gpu_scratch_bytes(&layout)));
    KCHECK(coll_gpu_host_mapped_alloc((void **)&status[r], &status_dev[r], sizeof(coll_gpu_dev_status_t)));
    KCHECK(coll_gpu_host_mapped_alloc((void **)&waiting[r], &waiting_dev[r], (size_t)n));
    KCHECK(coll_gpu_stream_create(&stream[r], 1));
    KCHECK(coll_gpu_dev_alloc((void **)&buf[r], 2 * half));
  }
  uint16_t ring[COLL_GPU_MAX_DIRECT];
  for (int i = 0; i < n; ++i) ring[i] = (uint16_t)i;
  for (int r = 0; r < n; ++r) {
    CHECK(cudaSetDevice(r % ndev));
    static coll_gpu_dev_conns_t conns;
    KCHECK(coll_gpu_dev_comm_setup(&comm[r], &conns, r, n, &layout, scratch, 1, 1, ring,
                                   (coll_gpu_dev_status_t *)status_dev[r], (volatile uint8_t *)waiting_dev[r],
                                   30ULL * 1000 * 1000 * 1000, 0));
    coll_gpu_dev_ipc_conns(&comm[r], &conns, scratch);
    KCHECK(coll_gpu_dev_comm_upload(&comm[r], &conns, 1, ring));
  }
  printf("# coll/gpu %s kernels: %d ranks simulated on %d GPU(s), %s, MPI_FLOAT MPI_SUM, %d calls\n",
         coll_gpu_coll_name((coll_gpu_coll_t)coll), n, ndev, coll_gpu_algo_name(algo), iters);
  printf("# %-14s %8s %12s\n", "Size(B)", "blocks", "us/call");
  for (size_t bytes = min; bytes <= max; bytes *= 2) {
    coll_gpu_choice_t ch = coll_gpu_tune_choose(&tune, (coll_gpu_coll_t)coll, n, bytes);
    if (ch.nchannels > budget) ch.nchannels = budget;
    coll_gpu_work_t p;
    memset(&p, 0, sizeof(p));
    p.coll = (coll_gpu_coll_t)coll;
    p.count = bytes / 4;
    p.type = COLL_GPU_FLOAT;
    p.op = COLL_GPU_SUM;
    if (coll == COLL_GPU_COLL_BCAST || coll == COLL_GPU_COLL_ALLGATHER || coll == COLL_GPU_COLL_ALLTOALL) {
      p.count = bytes; /* the moves copy bytes */
      p.type = COLL_GPU_UINT8;
    }
    p.block = bytes;
    for (int q = 0; q < n; ++q) p.blocks[q] = (coll_gpu_range_t){(size_t)q * (bytes / 4), bytes / 4};
    p.algo = algo;
    p.nchannels = ch.nchannels;
    const int blocks = coll_gpu_work_blocks(&comm[0], &p);
    if (blocks > budget) {
      printf("  %-14zu %8d %12s\n", bytes, blocks, "(too many blocks to share the GPU)");
      continue;
    }
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      double t[2];
      for (int twice = 0; twice < 2; ++twice) t[twice] = run_graphs(p, half, iters << twice);
      if (t[1] - t[0] < best) best = t[1] - t[0];
    }
    best /= iters;
    printf("  %-14zu %8d %12.2f\n", bytes, blocks, best);
  }
  for (int r = 0; r < n; ++r) {
    CHECK(cudaSetDevice(r % ndev));
    KCHECK(coll_gpu_stream_destroy(stream[r]));
    KCHECK(coll_gpu_host_mapped_free(status[r]));
    KCHECK(coll_gpu_host_mapped_free(waiting[r]));
    KCHECK(coll_gpu_dev_free(scratch[r]));
    KCHECK(coll_gpu_dev_free(buf[r]));
  }
  return 0;
}
