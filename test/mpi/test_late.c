/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Late is not dead. Three MPI_Allreduce calls on a dup of MPI_COMM_WORLD with MPI_ERRORS_RETURN:
 *   -l SECONDS  rank 1 reaches the second call that many seconds late; every call must succeed with the
 *               right sum on every rank (the others wait for it; the case checks the watchdog's lines);
 *   -k          rank 1 kills itself (SIGKILL) before the second call; every other rank must get an error
 *               from it, and says so on a line "survivor rank R: error after T s", then leaves without
 *               MPI_Finalize, which the dead rank cannot join.
 *   -n          before the second call every rank starts an MPI_Ibcast of 4 MiB of host memory from rank 1;
 *               rank 1 waits for it before its MPI_Allreduce, the others after theirs. Rank 1's wait needs
 *               the others' progress while they wait for it in MPI_Allreduce: they must drive it.
 * -m KIND picks the memory (host, device, ...), -c COUNT the ints per call.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/common/tbuf.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  tbuf_kind_t kind = TBUF_HOST;
  int late_s = 0, kill_rank = 0, count = 1024, nonblocking = 0, opt;
  while ((opt = getopt(argc, argv, "m:l:knc:")) != -1) {
    if (opt == 'm' && tbuf_parse_kind(optarg, &kind) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    if (opt == 'l') late_s = atoi(optarg);
    if (opt == 'k') kill_rank = 1;
    if (opt == 'c') count = atoi(optarg);
    if (opt == 'n') nonblocking = 1;
  }
  tbuf_select_device(rank);
  alarm(120); /* a hang becomes a failure */
  const size_t bytes = (size_t)count * sizeof(int);
  int *img = malloc(bytes), *want = malloc(bytes);
  void *sbuf = tbuf_alloc(kind, bytes), *rbuf = tbuf_alloc(kind, bytes);
  int failures = 0;
  const size_t nb_bytes = (size_t)4 << 20;
  unsigned char *nb_buf = malloc(nb_bytes);
  MPI_Request nb_req = MPI_REQUEST_NULL;
  for (int call = 0; call < 3; ++call) {
    for (int i = 0; i < count; ++i) img[i] = (rank + 1) * (i + call + 1);
    tbuf_put(kind, sbuf, img, bytes);
    memset(img, 0xA5, bytes);
    tbuf_put(kind, rbuf, img, bytes);
    if (call == 1 && rank == 1 && late_s > 0) sleep((unsigned)late_s);
    if (call == 1 && rank == 1 && kill_rank) raise(SIGKILL);
    if (call == 1 && nonblocking) {
      for (size_t i = 0; i < nb_bytes; ++i) nb_buf[i] = rank == 1 ? (unsigned char)(i * 7 + 3) : 0;
      MPI_Ibcast(nb_buf, (int)nb_bytes, MPI_BYTE, 1, comm, &nb_req);
      if (rank == 1) MPI_Wait(&nb_req, MPI_STATUS_IGNORE);
    }
    const double t0 = MPI_Wtime();
    const int rc = MPI_Allreduce(sbuf, rbuf, count, MPI_INT, MPI_SUM, comm);
    const double took = MPI_Wtime() - t0;
    if (kill_rank && call == 1) {
      char msg[MPI_MAX_ERROR_STRING] = "success";
      int len = 0;
      if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
      printf("%s rank %d: %s after %.1f s\n", rc != MPI_SUCCESS ? "survivor" : "FAIL: survivor", rank,
             rc != MPI_SUCCESS ? "error" : "no error", took);
      fflush(stdout);
      _exit(rc != MPI_SUCCESS ? 0 : 1);
    }
    if (call == 1 && nonblocking) {
      MPI_Wait(&nb_req, MPI_STATUS_IGNORE);
      size_t bad = 0;
      for (size_t i = 0; i < nb_bytes; ++i) bad += nb_buf[i] != (unsigned char)(i * 7 + 3);
      if (bad != 0) {
        fprintf(stderr, "FAIL rank %d: %zu wrong bytes from MPI_Ibcast\n", rank, bad);
        ++failures;
      }
    }
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "FAIL rank %d: call %d returned an error after %.1f s\n", rank, call, took);
      ++failures;
      continue;
    }
    tbuf_get(kind, img, rbuf, bytes);
    for (int i = 0; i < count; ++i) want[i] = nranks * (nranks + 1) / 2 * (i + call + 1);
    if (memcmp(img, want, bytes) != 0) {
      fprintf(stderr, "FAIL rank %d: call %d gave a wrong sum\n", rank, call);
      ++failures;
    }
    if (call == 1 && rank != 1 && late_s > 0) printf("rank %d waited %.1f s for the late rank\n", rank, took);
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_late: %d ranks, %s memory, %d ints: %d failed\n", nranks, tbuf_kind_name(kind), count, all);
  tbuf_free(kind, sbuf);
  tbuf_free(kind, rbuf);
  free(img);
  free(want);
  free(nb_buf);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
