/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * What the path agreement (engine/agree.h) costs a call, without a GPU: every rank posts and reads agreements back to
 * back, as blocking calls on device buffers do, beside what MPI itself takes for the same trips on the same ranks:
 * an MPI_Allreduce of 4 bytes, an MPI_Barrier, and one way between rank 0 and the first rank of the next node (half
 * a ping-pong of 16 bytes, a post's size). Each figure is the slowest rank's mean over the rounds, in microseconds.
 *
 * usage: coll_gpu_agree_bench [-N K] [-i ROUNDS]
 * -N K: nodes of K consecutive ranks (on one host, or on the hosts of the mini-cluster: contrib/minicluster.sh), each
 *       with its own table; the posts reach the other nodes' ranks as MPI messages (test/mpi/agree_wire.h), as the
 *       component sends them. Without it, one node: the posts are a table's cache lines only.
 * -i ROUNDS: rounds of each (default 20000), after a tenth of them unmeasured.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/agree.h"
#include "test/mpi/mpi_bootstrap.h"

static int rank, nranks, failures;
/* its sends count their failures as EXPECT does: after the counters */
#include "test/mpi/agree_wire.h"

static MPI_Comm comm;

/* The slowest rank's mean microseconds per round of fn. */
static double timed(void (*fn)(void *), void *ctx, int rounds) {
  for (int i = 0; i < rounds / 10 + 1; ++i) fn(ctx);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < rounds; ++i) fn(ctx);
  double us = (MPI_Wtime() - t0) * 1e6 / rounds, worst;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
  return worst;
}

typedef struct {
  coll_gpu_agree_t *a;
  const coll_gpu_agree_watch_t *watch;
} agree_ctx_t;

static void one_agreement(void *ctx) {
  const agree_ctx_t *c = ctx;
  uint32_t all = 0;
  uint8_t missing[1024] = {0};
  EXPECT(coll_gpu_agree(c->a, 1, c->watch, &all, missing) == COLL_GPU_SUCCESS &&
             (all == 1 || all & COLL_GPU_AGREE_UNKNOWN),
         "an agreement: 0x%x", all);
}

static void one_allreduce(void *ctx) {
  (void)ctx;
  uint32_t mine = 1, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UINT32_T, MPI_BOR, comm);
}

static void one_barrier(void *ctx) {
  (void)ctx;
  MPI_Barrier(comm);
}

static int peer; /* rank 0's partner in the ping-pong: the first rank of the next node */
static void one_ping_pong(void *ctx) {
  (void)ctx;
  uint64_t msg[2] = {0, 0};
  if (rank == 0) {
    MPI_Send(msg, 2, MPI_UINT64_T, peer, 1, comm);
    MPI_Recv(msg, 2, MPI_UINT64_T, peer, 1, comm, MPI_STATUS_IGNORE);
  } else if (rank == peer) {
    MPI_Recv(msg, 2, MPI_UINT64_T, 0, 1, comm, MPI_STATUS_IGNORE);
    MPI_Send(msg, 2, MPI_UINT64_T, 0, 1, comm);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int node_size = 0, rounds = 20000;
  for (int opt; (opt = getopt(argc, argv, "N:i:")) != -1;) {
    if (opt == 'N') node_size = atoi(optarg);
    if (opt == 'i') rounds = atoi(optarg);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  if (nranks > 1024 || rounds < 1 || node_size < 0) {
    if (rank == 0) fprintf(stderr, "usage: coll_gpu_agree_bench [-N K] [-i ROUNDS] (at most 1024 ranks)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int node = node_size > 0 ? rank / node_size : 0;
  peer = node_size > 0 && node_size < nranks ? node_size : (nranks > 1 ? 1 : 0);

  char dir[64], path[128];
  if (!agree_dir_make(comm, dir)) MPI_Abort(MPI_COMM_WORLD, 2);
  snprintf(path, sizeof(path), "%s/%s.%d", dir, COLL_GPU_AGREE_TABLE_NAME, node);
  coll_gpu_agree_table_t *t = NULL;
  char why[256] = "";
  if (coll_gpu_agree_table_open(path, &t, why, sizeof(why)) != COLL_GPU_SUCCESS) {
    fprintf(stderr, "rank %d: the table %s: %s\n", rank, path, why);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  wire_t wire;
  coll_gpu_agree_t *a = agree_handle(t, 11, 1, node_size, &wire);
  /* waits as the component's: spinning 50 us before yielding (coll_gpu_spin_us), no progress hook needed here */
  const coll_gpu_agree_watch_t watch = {{50000, 30000000000ULL, NULL}, NULL, NULL};
  double agree_us = 0;
  if (a != NULL) {
    agree_ctx_t ctx = {a, &watch};
    agree_us = timed(one_agreement, &ctx, rounds);
  }
  const double allreduce_us = timed(one_allreduce, NULL, rounds);
  const double barrier_us = timed(one_barrier, NULL, rounds);
  const double one_way_us = timed(one_ping_pong, NULL, rounds) / 2;
  if (rank == 0) {
    char nodes[64] = "one node";
    if (node_size > 0) snprintf(nodes, sizeof(nodes), "nodes of %d ranks", node_size);
    printf("# coll_gpu agreement benchmark: %d ranks, %s, %d rounds (us per call, the slowest rank's mean)\n", nranks,
           nodes, rounds);
    printf("%-36s %10.2f\n", "agreement, every rank reads", agree_us);
    printf("%-36s %10.2f\n", "MPI_Allreduce, 4 bytes", allreduce_us);
    printf("%-36s %10.2f\n", "MPI_Barrier", barrier_us);
    char label[64];
    snprintf(label, sizeof(label), "one way, rank 0 <-> rank %d, 16 bytes", peer);
    printf("%-36s %10.2f\n", label, one_way_us);
  }
  coll_gpu_agree_destroy(a);
  coll_gpu_agree_table_close(t);
  MPI_Barrier(comm);
  if (node_size == 0 ? rank == 0 : rank % node_size == 0) unlink(path);
  MPI_Barrier(comm);
  rmdir(dir);
  wire_drain();
  if (wire.comm != MPI_COMM_NULL) MPI_Comm_free(&wire.comm);
  int all_failures = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, comm);
  if (rank == 0 && all_failures != 0) printf("coll_gpu_agree_bench: %d failed\n", all_failures);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
