/*
 * MPI_Allreduce latency and bandwidth, OSU style, on host or CUDA device buffers.
 *
 * usage: coll_gpu_allreduce_bench [-d host|cuda] [-m MIN] [-M MAX] [-i ITERS] [-c] [-O ROUNDS]
 *   -d  buffer memory (default cuda when built with CUDA, else host)
 *   -m, -M  smallest and largest message in bytes (default 8 and 64 MiB), doubling
 *   -i  iterations per size (default 1000 up to 1 MiB, 100 above); a tenth of them warm up first
 *   -c  validate every size (float sums of small integers: exact)
 *   -O  overhead of coll/gpu instead: MIN-byte allreduces on a communicator created with coll/gpu and
 *       one created without it (coll_gpu_enable set false through MPI_T in between), timed in
 *       alternation for ROUNDS rounds of ITERS calls in this one process, so that drift and
 *       placement hit both alike; prints both medians and their ratio
 * Prints per size the average latency (the slowest rank's mean), algbw = size / time and
 * busbw = algbw * 2 (n - 1) / n, as nccl-tests defines them. When built with NCCL and run on CUDA
 * buffers, each size also runs ncclAllReduce on the same buffers (each call followed by a stream
 * synchronize, as OSU's NCCL benchmarks do) and prints NCCL's latency, busbw and the ratio ours/NCCL.
 */
#include "config.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/common/tbuf.h"

#if defined(TEST_WITH_CUDA) && defined(COLL_GPU_HAVE_NCCL)
#include <nccl.h>
#define WITH_NCCL 1

static ncclComm_t nccl_comm;
static cudaStream_t nccl_stream;

static void nccl_init(int rank, int n) {
  ncclUniqueId id;
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  TBUF_CHECK(cudaStreamCreate(&nccl_stream));
  if (ncclCommInitRank(&nccl_comm, n, id, rank) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Mean microseconds per ncclAllReduce + stream synchronize, the slowest rank's. */
static double nccl_time(void *s, void *r, int count, int iters) {
  for (int i = 0; i < iters / 10 + 1; ++i) {
    ncclAllReduce(s, r, count, ncclFloat, ncclSum, nccl_comm, nccl_stream);
    cudaStreamSynchronize(nccl_stream);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    ncclAllReduce(s, r, count, ncclFloat, ncclSum, nccl_comm, nccl_stream);
    cudaStreamSynchronize(nccl_stream);
  }
  double us = (MPI_Wtime() - t0) * 1e6 / iters, worst;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
#else
#define WITH_NCCL 0
#endif

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sets coll_gpu_enable through MPI_T; returns 0, or -1 when coll/gpu is not loaded. */
static int set_enable(int on) {
  int index, count;
  MPI_T_cvar_handle h;
  if (MPI_T_cvar_get_index("coll_gpu_enable", &index) != MPI_SUCCESS) return -1;
  if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) return -1;
  int rc = MPI_T_cvar_write(h, &on);
  MPI_T_cvar_handle_free(&h);
  return rc == MPI_SUCCESS ? 0 : -1;
}

/* The -O mode: host-path overhead of the component, A/B in one process. */
static int overhead(void *s, void *r, size_t bytes, int rounds, int iters, int rank) {
  int provided;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_Comm with, without;
  MPI_Comm_dup(MPI_COMM_WORLD, &with);
  int rc = set_enable(0);
  MPI_Comm_dup(MPI_COMM_WORLD, &without);
  if (rc == 0) set_enable(1);
  MPI_T_finalize();
  if (rc != 0) {
    if (rank == 0) printf("coll/gpu is not loaded (no coll_gpu_enable variable): nothing to compare\n");
    return 1;
  }
  int count = (int)(bytes / sizeof(float));
  double *t[2] = {calloc(rounds, sizeof(double)), calloc(rounds, sizeof(double))};
  MPI_Comm comms[2] = {with, without};
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < iters / 10 + 1; ++i) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comms[k]);
  for (int round = 0; round < rounds; ++round) {
    for (int j = 0; j < 2; ++j) {
      int k = (round + j) % 2; /* alternate which goes first */
      MPI_Barrier(comms[k]);
      double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comms[k]);
      double us = (MPI_Wtime() - t0) * 1e6 / iters;
      MPI_Allreduce(&us, &t[k][round], 1, MPI_DOUBLE, MPI_MAX, comms[k]);
    }
  }
  if (rank == 0) {
    double ratio[rounds];
    for (int i = 0; i < rounds; ++i) ratio[i] = t[0][i] / t[1][i];
    qsort(t[0], rounds, sizeof(double), cmp_double);
    qsort(t[1], rounds, sizeof(double), cmp_double);
    qsort(ratio, rounds, sizeof(double), cmp_double);
    printf("# %zu-byte MPI_Allreduce, %d rounds of %d calls, alternating\n", bytes, rounds, iters);
    printf("with coll/gpu:    median %.3f us (min %.3f)\n", t[0][rounds / 2], t[0][0]);
    printf("without coll/gpu: median %.3f us (min %.3f)\n", t[1][rounds / 2], t[1][0]);
    printf("ratio with/without: median of per-round ratios %.3f (quartiles %.3f %.3f)\n", ratio[rounds / 2],
           ratio[rounds / 4], ratio[3 * rounds / 4]);
  }
  free(t[0]);
  free(t[1]);
  MPI_Comm_free(&with);
  MPI_Comm_free(&without);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
#ifdef TEST_WITH_CUDA
  tbuf_kind_t kind = TBUF_DEVICE;
#else
  tbuf_kind_t kind = TBUF_HOST;
#endif
  size_t min = 8, max = (size_t)64 << 20;
  int iters_arg = 0;
  bool check = false;
  int rounds = 0;
  int opt;
  while ((opt = getopt(argc, argv, "d:m:M:i:cO:")) != -1) {
    switch (opt) {
      case 'd':
        if (strcmp(optarg, "cuda") == 0) optarg = "device";
        if (tbuf_parse_kind(optarg, &kind) != 0) {
          if (rank == 0) fprintf(stderr, "memory '%s' is not available in this build\n", optarg);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        break;
      case 'm':
        min = strtoull(optarg, NULL, 0);
        break;
      case 'M':
        max = strtoull(optarg, NULL, 0);
        break;
      case 'i':
        iters_arg = atoi(optarg);
        break;
      case 'c':
        check = true;
        break;
      case 'O':
        rounds = atoi(optarg);
        break;
      default:
        if (rank == 0)
          fprintf(stderr, "usage: %s [-d host|cuda] [-m MIN] [-M MAX] [-i ITERS] [-c] [-O ROUNDS]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (min < sizeof(float)) min = sizeof(float);
#ifdef TEST_WITH_CUDA
  int ndev = 0;
  TBUF_CHECK(cudaGetDeviceCount(&ndev));
  TBUF_CHECK(cudaSetDevice(rank % ndev));
#endif
  float *hs = malloc(max), *hr = malloc(max);
  void *s = tbuf_alloc(kind, max), *r = tbuf_alloc(kind, max);
  if (rounds > 0) {
    int rc = overhead(s, r, min, rounds, iters_arg > 0 ? iters_arg : 100000, rank);
    tbuf_free(kind, s);
    tbuf_free(kind, r);
    free(hs);
    free(hr);
    MPI_Finalize();
    return rc;
  }
  int nccl = 0;
#if WITH_NCCL
  nccl = kind == TBUF_DEVICE;
  if (nccl) nccl_init(rank, n);
#endif
  if (rank == 0) {
    printf("# coll/gpu allreduce benchmark: %d ranks, %s memory, MPI_FLOAT MPI_SUM%s%s\n", n, tbuf_kind_name(kind),
           check ? ", validated" : "", nccl ? "; NCCL on the same buffers" : "");
    printf("%-12s %16s %12s %12s %8s", "# Size(B)", "Avg lat(us)", "algbw(GB/s)", "busbw(GB/s)", "check");
    if (nccl) printf(" %14s %12s %10s", "NCCL lat(us)", "NCCL busbw", "ours/NCCL");
    printf("\n");
  }
  int bad_total = 0;
  for (size_t bytes = min; bytes <= max; bytes *= 2) {
    int count = (int)(bytes / sizeof(float));
    int iters = iters_arg > 0 ? iters_arg : bytes <= (1 << 20) ? 1000 : 100;
    for (int i = 0; i < count; ++i) hs[i] = (float)(rank + 1 + i % 7);
    tbuf_put(kind, s, hs, (size_t)count * sizeof(float));
    for (int i = 0; i < iters / 10 + 1; ++i) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) * 1e6 / iters, worst;
    MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (check) {
      tbuf_get(kind, hr, r, (size_t)count * sizeof(float));
      for (int i = 0; i < count; ++i) bad += hr[i] != (float)(n * (n + 1) / 2 + n * (i % 7));
      int all;
      MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      bad = all;
      bad_total += bad;
    }
    double nccl_us = 0;
#if WITH_NCCL
    if (nccl) nccl_us = nccl_time(s, r, count, iters);
#endif
    if (rank == 0) {
      double algbw = bytes / worst / 1e3;
      printf("%-12zu %16.2f %12.2f %12.2f %8s", bytes, worst, algbw, algbw * 2 * (n - 1) / n,
             check ? (bad ? "FAIL" : "ok") : "-");
      if (nccl) printf(" %14.2f %12.2f %10.2f", nccl_us, bytes / nccl_us / 1e3 * 2 * (n - 1) / n, worst / nccl_us);
      printf("\n");
      fflush(stdout);
    }
  }
#if WITH_NCCL
  if (nccl) ncclCommDestroy(nccl_comm);
#endif
  tbuf_free(kind, s);
  tbuf_free(kind, r);
  free(hs);
  free(hr);
  MPI_Finalize();
  return bad_total == 0 ? 0 : 1;
}
