/*
 * MPI_Allreduce latency and bandwidth, OSU style, on host or CUDA device buffers.
 *
 * usage: coll_gpu_allreduce_bench [-d host|cuda] [-m MIN] [-M MAX] [-i ITERS] [-c]
 *   -d  buffer memory (default cuda when built with CUDA, else host)
 *   -m, -M  smallest and largest message in bytes (default 8 and 64 MiB), doubling
 *   -i  iterations per size (default 1000 up to 1 MiB, 100 above); a tenth of them warm up first
 *   -c  validate every size (float sums of small integers: exact)
 * Prints per size the average latency (the slowest rank's mean), algbw = size / time and
 * busbw = algbw * 2 (n - 1) / n, as nccl-tests defines them.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/common/tbuf.h"

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
  int opt;
  while ((opt = getopt(argc, argv, "d:m:M:i:c")) != -1) {
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
      default:
        if (rank == 0) fprintf(stderr, "usage: %s [-d host|cuda] [-m MIN] [-M MAX] [-i ITERS] [-c]\n", argv[0]);
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
  if (rank == 0) {
    printf("# coll/gpu allreduce benchmark: %d ranks, %s memory, MPI_FLOAT MPI_SUM%s\n", n, tbuf_kind_name(kind),
           check ? ", validated" : "");
    printf("%-12s %16s %12s %12s %8s\n", "# Size(B)", "Avg lat(us)", "algbw(GB/s)", "busbw(GB/s)", "check");
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
    if (rank == 0) {
      double algbw = bytes / worst / 1e3;
      printf("%-12zu %16.2f %12.2f %12.2f %8s\n", bytes, worst, algbw, algbw * 2 * (n - 1) / n,
             check ? (bad ? "FAIL" : "ok") : "-");
      fflush(stdout);
    }
  }
  tbuf_free(kind, s);
  tbuf_free(kind, r);
  free(hs);
  free(hr);
  MPI_Finalize();
  return bad_total == 0 ? 0 : 1;
}
