/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's bootstrap and path agreement over a real MPI job, without a GPU: the peer exchange, and the agreement
 * table (one file per job and node): every answer without COLL_GPU_AGREE_UNKNOWN is the OR of that agreement's bits
 * (against MPI_Allreduce(MPI_BOR) on fresh random bits), readers of one agreement get the same answer, and readers
 * reach "every rank posted the goal" only when every rank did; ranks that only post skip the agreements until a reader
 * marks the table, then join; a rank posting to read without waiting gets exactly COLL_GPU_AGREE_WINDOW agreements
 * ahead of a sleeping one, while a rank that only posts never waits; a second instance of a communicator's key starts
 * clean; a late rank is waited for, reported once after the timeout, with the caller's progress hook run meanwhile.
 *
 * usage: test_agree [-N K]
 * -N K: nodes of K consecutive ranks (on one host, or on the hosts of the mini-cluster), each with tables of its
 *       own; the posts of the other nodes' ranks travel as MPI messages (test/mpi/agree_wire.h), as the component
 *       sends them over Open MPI's point-to-point layer.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/agree.h"
#include "engine/bootstrap.h"
#include "test/mpi/mpi_bootstrap.h"

static int rank, nranks, failures;
/* its sends count their failures as EXPECT does: after the counters */
#include "test/mpi/agree_wire.h"

static int node_size; /* -N: ranks per node; 0: one node */

static wire_t wires[8];
static int nwires;

/* The watchdog's report: how often, and whether it named rank 1 alone. */
static int reports, named_rank1;
/* The waits' progress hook: how often it ran. */
static long progress_calls;
static void count_progress(void) { ++progress_calls; }
static void report(void *ctx, const uint8_t *late) {
  (void)ctx;
  ++reports;
  named_rank1 = late[1] == 1;
  for (int r = 0; r < nranks; ++r)
    if (r != 1 && late[r]) named_rank1 = 0;
}

static coll_gpu_agree_t *handle(coll_gpu_agree_table_t *t, uint32_t cid, uint64_t instance) {
  coll_gpu_agree_t *a = agree_handle(t, cid, instance, node_size, nwires < 8 ? &wires[nwires] : NULL);
  if (nwires < 8 && wires[nwires].comm != MPI_COMM_NULL) ++nwires;
  return a;
}

/* Checks K agreements: got[i] is this rank's answer (-1: it did not read), posted[i] its bits. Answers
 * without UNKNOWN are the OR of every rank's bits; readers of one agreement agree on whether it is exactly
 * `goal`, and it is only where every rank posted goal. `strict`: every reader's answer is the same. */
static void check_answers(const char *phase, int K, const int64_t *got, const uint32_t *posted, uint32_t goal,
                          int strict) {
  int64_t *every = malloc(sizeof(int64_t) * (size_t)K * (size_t)nranks);
  uint32_t *bits = malloc(sizeof(uint32_t) * (size_t)K * (size_t)nranks);
  MPI_Allgather(got, K, MPI_INT64_T, every, K, MPI_INT64_T, MPI_COMM_WORLD);
  MPI_Allgather(posted, K, MPI_UINT32_T, bits, K, MPI_UINT32_T, MPI_COMM_WORLD);
  int wrong = 0, split = 0, false_goal = 0, unknown = 0;
  for (int i = 0; i < K; ++i) {
    uint32_t ref = 0;
    int all_goal = 1, some_goal = 0, some_not = 0;
    int64_t first = -1;
    for (int r = 0; r < nranks; ++r) {
      ref |= bits[r * K + i];
      all_goal = all_goal && bits[r * K + i] == goal;
    }
    for (int r = 0; r < nranks; ++r) {
      const int64_t a = every[r * K + i];
      if (a < 0) continue;
      if (a & COLL_GPU_AGREE_UNKNOWN)
        ++unknown;
      else if ((uint32_t)a != ref)
        ++wrong;
      if ((uint32_t)a == goal)
        some_goal = 1;
      else
        some_not = 1;
      if (strict && first >= 0 && a != first) ++split;
      if (first < 0) first = a;
    }
    split += some_goal && some_not;
    false_goal += some_goal && !all_goal;
  }
  EXPECT(wrong == 0 && split == 0 && false_goal == 0,
         "%s: %d answers differ from the OR, %d agreements split, %d reached the goal without every rank", phase, wrong,
         split, false_goal);
  if (rank == 0) printf("test_agree: %s: %d agreements, %d UNKNOWN answers\n", phase, K, unknown);
  free(every);
  free(bits);
}

/* The window, on a communicator every rank has joined: 3 windows of agreements on fresh random bits.
 * Rank 0 posts to read without waiting and reads its answers later (as nonblocking calls will), rank 2
 * only posts (a rank whose own bits decide its path), the others agree; rank 1 sleeps first. Rank 0 gets
 * exactly one window ahead of rank 1, then finds the window full of its own unread agreements; rank 2 posts
 * all of its agreements at once. */
static void window_phase(coll_gpu_agree_t *a, MPI_Comm comm, const coll_gpu_agree_watch_t *watch) {
  enum { K = 3 * COLL_GPU_AGREE_WINDOW };
  uint32_t bits[K];
  int64_t got[K];
  for (int i = 0; i < K; ++i) {
    bits[i] = (uint32_t)(rand() & 0x7ff) | 1u;
    got[i] = -1;
  }
  const uint64_t first = coll_gpu_agree_last(a) + 1;
  int failed_at = -1;
  MPI_Barrier(comm);
  if (rank == 0) {
    int posted = 0, answered = 0;
    while (answered < K) {
      uint64_t n;
      if (posted < K && coll_gpu_agree_try_post(a, bits[posted], 1, &n)) {
        EXPECT(n == first + (uint64_t)posted, "agreement %llu posted as %llu", (unsigned long long)(first + posted),
               (unsigned long long)n);
        ++posted;
        continue;
      }
      if (posted < K && failed_at < 0) {
        failed_at = posted;
        /* the window is full of this rank's own unread agreements (none can be read before rank 1 posts),
         * and a blocking agreement now would wait for this rank itself */
        uint8_t late[64] = {0}, missing[64] = {0}, missing2[64] = {0};
        EXPECT(!coll_gpu_agree_late(a, first + posted, 1, late, missing), "nobody is gone");
        EXPECT(nranks < 2 || late[1] == 1, "rank 1 holds the window up (late %d)", nranks > 1 ? late[1] : -1);
        uint32_t all;
        EXPECT(coll_gpu_agree(a, 1, watch, &all, missing2) == COLL_GPU_INTERNAL_ERROR,
               "a blocking agreement behind this rank's own unread ones fails at once");
        EXPECT(coll_gpu_agree_last(a) == first + (uint64_t)posted - 1, "and posts nothing");
      }
      uint32_t all;
      if (answered < posted && coll_gpu_agree_test(a, first + (uint64_t)answered, &all)) got[answered++] = all;
    }
    EXPECT(nranks < 2 || failed_at == COLL_GPU_AGREE_WINDOW, "the window filled after %d posts, not %d", failed_at,
           COLL_GPU_AGREE_WINDOW);
  } else if (rank == 2) {
    /* it reads nothing: its posts are never kept, and it never waits, even 3 windows ahead of rank 1 */
    const double t0 = MPI_Wtime();
    for (int i = 0; i < K; ++i) coll_gpu_agree_post(a, bits[i]);
    const double took = MPI_Wtime() - t0;
    EXPECT(coll_gpu_agree_last(a) == first + K - 1 && took < 0.9, /* rank 1 reads from 1 s on */
           "a rank that only posts ran %d agreements ahead at once (it posted %llu of them in %.3f s)", K,
           (unsigned long long)(coll_gpu_agree_last(a) - first + 1), took);
  } else {
    if (rank == 1) usleep(1000000); /* long past rank 2's posts, even on a loaded machine (0.32 s seen) */
    for (int i = 0; i < K; ++i) {
      uint8_t missing[64] = {0};
      uint32_t all;
      EXPECT(coll_gpu_agree(a, bits[i], watch, &all, missing) == COLL_GPU_SUCCESS, "agreement %d", i);
      got[i] = all;
    }
  }
  check_answers("window", K, got, bits, 0, 0);
}

/* Readers and ranks that only post, on a table nobody has marked: the others skip agreements until rank 0
 * starts reading (and marks the table), then join at their next call; rank 1 reads from a few agreements
 * later; every rank reads the last 110, and the last 100 (after a barrier: every rank has joined) must all reach
 * the goal. Random pauses shuffle the order of the ranks' calls. */
static void join_phase(coll_gpu_agree_table_t *t, const coll_gpu_agree_watch_t *watch) {
  enum { K = 600, kGoal = 2 };
  coll_gpu_agree_t *a = handle(t, 9, 1);
  uint32_t bits[K];
  int64_t got[K];
  EXPECT(!coll_gpu_agree_table_marked(t), "a fresh table is not marked");
  for (int i = 0; i < K; ++i) {
    const int reads = (rank == 0 && i >= K / 2) || (rank == 1 && i >= K / 2 + 7) || i >= K - 110;
    if (rand() % 4 == 0) usleep((useconds_t)(rand() % 200));
    bits[i] = reads ? kGoal : (uint32_t)(rand() % 2 ? 1 : 5);
    got[i] = -1;
    if (i == K / 2 - 1) {
      EXPECT(!coll_gpu_agree_joined(a) && !coll_gpu_agree_table_marked(t), "ranks that only post skip (agreement %d)",
             i);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    /* every rank has read (and so joined) by now: the last 100 find every rank joined however the ranks are
     * scheduled (on CI's 2 cores ranks 2 and 3 once posted all of theirs before rank 0's first read, joined only
     * at the last 100's first, and 9 of those were answered UNKNOWN, as a rank not yet joined makes them) */
    if (i == K - 100) MPI_Barrier(MPI_COMM_WORLD);
    if (!reads) {
      coll_gpu_agree_post(a, bits[i]);
      continue;
    }
    uint8_t missing[64] = {0};
    uint32_t all;
    EXPECT(coll_gpu_agree(a, bits[i], watch, &all, missing) == COLL_GPU_SUCCESS, "agreement %d", i);
    got[i] = all;
  }
  EXPECT(coll_gpu_agree_joined(a) && coll_gpu_agree_table_marked(t), "every rank joined once a reader marked");
  int reached = 0;
  for (int i = K - 100; i < K; ++i) reached += got[i] == kGoal;
  EXPECT(reached == 100, "%d of the last 100 agreements, where every rank read, reached the goal", reached);
  check_answers("join", K, got, bits, kGoal, 0);
  coll_gpu_agree_destroy(a);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  for (int opt; (opt = getopt(argc, argv, "N:")) != -1;)
    if (opt == 'N') node_size = atoi(optarg);

  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  if (nranks > 64) { /* the size of its arrays of a byte per rank */
    if (rank == 0) fprintf(stderr, "test_agree: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  coll_gpu_bootstrap_t b = {rank, nranks, &comm, mpi_allgather, mpi_bcast, mpi_barrier};

  /* the peer exchange */
  coll_gpu_peer_t me = {.host = coll_gpu_host_id(), .pid = getpid(), .device = rank, .ok = 1};
  coll_gpu_peer_t *peers = calloc(nranks, sizeof(*peers));
  EXPECT(coll_gpu_peers_exchange(&b, &me, peers) == COLL_GPU_SUCCESS, "exchange");
  for (int r = 0; r < nranks; ++r) {
    int pid = peers[r].pid;
    MPI_Bcast(&pid, 1, MPI_INT, r, comm);
    EXPECT(pid == peers[r].pid && peers[r].device == r, "peer %d's info", r);
  }
  for (int r = 0; r < nranks; ++r)  // with nodes, those of other nodes may be on other hosts
    EXPECT(peers[r].host == me.host || (node_size > 0 && r / node_size != rank / node_size), "rank %d on another host",
           r);

  /* the tables: files in a directory of rank 0's, opened by every rank without any exchange but its name */
  char dir[64], path[128], path2[128];
  if (!agree_dir_make(comm, dir)) MPI_Abort(MPI_COMM_WORLD, 2);
  const int node = node_size > 0 ? rank / node_size : 0;
  snprintf(path, sizeof(path), "%s/%s.%d", dir, COLL_GPU_AGREE_TABLE_NAME, node);
  snprintf(path2, sizeof(path2), "%s/second.%d", dir, node);
  coll_gpu_agree_table_t *t = NULL, *t2 = NULL;
  char why[256] = "";
  EXPECT(coll_gpu_agree_table_open(path, &t, why, sizeof(why)) == COLL_GPU_SUCCESS, "open: %s", why);
  EXPECT(coll_gpu_agree_table_open(path2, &t2, why, sizeof(why)) == COLL_GPU_SUCCESS, "open: %s", why);
  struct stat st;
  EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the table is a file of mode 0600");
  srand((unsigned)(time(NULL) ^ (rank * 7919)));
  coll_gpu_agree_watch_t watch = {{0, 300000000ULL, count_progress}, report, NULL};
  if (t != NULL && t2 != NULL) {
    /* every rank reads: agreements against MPI_Allreduce(MPI_BOR) */
    coll_gpu_agree_t *a = handle(t, 7, 1);
    enum { K = 5000 };
    uint32_t *bits = malloc(sizeof(uint32_t) * K);
    int64_t *got = malloc(sizeof(int64_t) * K);
    int bad = 0;
    for (int i = 0; i < K; ++i) {
      uint32_t all = 0, ref = 0;
      uint8_t missing[64] = {0};
      bits[i] = (uint32_t)(rand() % 7) + 1;
      if (coll_gpu_agree(a, bits[i], &watch, &all, missing) != COLL_GPU_SUCCESS) ++bad;
      MPI_Allreduce(&bits[i], &ref, 1, MPI_UINT32_T, MPI_BOR, comm);
      got[i] = all;
      bad += i > 0 && all != ref; /* the first may be UNKNOWN: a rank more than the join wait late */
    }
    EXPECT(bad == 0, "%d of %d agreements differ from MPI_BOR", bad, K);
    check_answers("every rank reads", K, got, bits, 0, 1);
    EXPECT(reports == 0, "no report when nobody is late (%d)", reports);
    free(bits);
    free(got);

    window_phase(a, comm, &watch);
    coll_gpu_agree_destroy(a);

    /* the communicator's next instance: the same entry, nothing of the last instance read */
    a = handle(t, 7, 2);
    int wrong = 0;
    for (int i = 0; i < 200; ++i) {
      uint32_t mine = (uint32_t)(rand() % 7) + 1, all = 0, ref = 0;
      uint8_t missing[64] = {0};
      if (coll_gpu_agree(a, mine, &watch, &all, missing) != COLL_GPU_SUCCESS) ++wrong;
      MPI_Allreduce(&mine, &ref, 1, MPI_UINT32_T, MPI_BOR, comm);
      wrong += i > 0 && all != ref;
    }
    EXPECT(wrong == 0, "%d of 200 agreements of the second instance differ from MPI_BOR", wrong);

    /* late is not dead: rank 1 comes 1.5 s late, 5 times the watchdog's 0.3 s; the others wait for it,
     * report it once, and agree on its bits */
    if (nranks > 1) {
      uint32_t mine = 1u << (rank % 3), all = 0, ref = 0;
      uint8_t missing[64] = {0};
      reports = 0; /* the window phase's sleeping rank may have been reported already */
      if (rank == 1) usleep(1500000);
      progress_calls = 0;
      double t0 = MPI_Wtime();
      coll_gpu_status_t rc = coll_gpu_agree(a, mine, &watch, &all, missing);
      double waited = MPI_Wtime() - t0;
      MPI_Allreduce(&mine, &ref, 1, MPI_UINT32_T, MPI_BOR, comm);
      EXPECT(rc == COLL_GPU_SUCCESS && all == ref, "late rank: rc %d, 0x%x against 0x%x", rc, all, ref);
      if (rank != 1) {
        EXPECT(waited >= 1.0, "waited %.2f s for the late rank", waited);
        EXPECT(reports == 1 && named_rank1, "%d report(s), rank 1 %snamed alone", reports, named_rank1 ? "" : "not ");
        /* every poll, and every pause after 1 ms (sleeps of 50 us): thousands in 1.5 s. On 2 cores busy with a
         * build beside the tests a pause took about 1.8 ms (843 runs in 1.5 s), so the bound asks only for a run
         * every 15 ms: a wait that stopped progressing would not reach it */
        EXPECT(progress_calls >= 100, "the wait ran the progress hook %ld times in %.2f s", progress_calls, waited);
      }
    }
    coll_gpu_agree_destroy(a);
    join_phase(t2, &watch);
  }
  coll_gpu_agree_table_close(t);
  coll_gpu_agree_table_close(t2);
  MPI_Barrier(comm);
  if (node_size == 0 ? rank == 0 : rank % node_size == 0) { /* each node's first rank: its tables */
    unlink(path);
    unlink(path2);
  }
  MPI_Barrier(comm);
  rmdir(dir); /* the last one to look finds it empty; the others find it gone or not empty */
  wire_drain();
  for (int i = 0; i < nwires; ++i) MPI_Comm_free(&wires[i].comm);

  int all_failures = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, comm);
  if (rank == 0) printf("test_agree: %d ranks, %d failed\n", nranks, all_failures);
  free(peers);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
