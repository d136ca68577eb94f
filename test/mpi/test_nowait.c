/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Never in the way: legal programs that finish on stock Open MPI finish with coll/gpu loaded, with
 * threads and nonblocking calls, and no call waits for a peer that the program does not wait for.
 *   -T LEVEL  MPI_Init_thread at LEVEL (single, funneled, serialized, multiple), then communicators made
 *             by dup, split, create, create_group, idup and a dup of a dup, before and after a collective
 *             on their parent, each checked with an allreduce
 *   -o        two communicators idup'ed in opposite orders on even and odd ranks
 *   -p SEC    rank 1 comes SEC seconds late; rank 0 calls MPI_Iallreduce on fresh communicators, then sends
 *             rank 1 a message that rank 1 receives before its own MPI_Iallreduce: rank 0's calls must
 *             return at once (each under 50 ms, the median under 100 us)
 *   -b N      rank 0 posts N MPI_Iallreduce before the others post any (they come 300 ms late)
 *   -t N      two threads, each with a communicator of its own, N allreduce calls each (blocking and
 *             nonblocking in turn); needs MPI_THREAD_MULTIPLE
 *   -k N      N rounds of dup, allreduce, free; the last rank kills itself (SIGKILL) at a random point of a
 *             random round (for test/mpi/leftovers.sh, which then looks for what the job left behind)
 * -m KIND picks the memory of the checked calls (host; device, ... in the GPU build). Every result is
 * compared with sums computed here from fresh random inputs, on poisoned outputs. A hang is a failure:
 * an alarm ends the run.
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/common/tbuf.h"

static tbuf_kind_t kind = TBUF_HOST;
static int world_rank, world_size;
static uint64_t seed;
static long checks, failures;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void expect(int ok, const char *what) {
  pthread_mutex_lock(&count_lock);
  ++checks;
  if (!ok) {
    ++failures;
    fprintf(stderr, "test_nowait: rank %d: FAIL %s\n", world_rank, what);
  }
  pthread_mutex_unlock(&count_lock);
}

/* Rank r's input element i of call `call` (values small enough that sums stay exact). */
static int input(uint64_t call, int r, int i) {
  uint64_t x = seed ^ (call * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)r << 40) ^ (uint64_t)i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (int)(x % 100000) - 50000;
}

/* A call's buffers and its expected result. */
typedef struct {
  int count;
  void *sbuf, *rbuf;
  uint64_t call;
} call_t;

static void call_prepare(call_t *c, MPI_Comm comm, int count, uint64_t id) {
  int r;
  MPI_Comm_rank(comm, &r);
  c->count = count;
  c->call = id;
  const size_t bytes = (size_t)count * sizeof(int);
  int *img = malloc(bytes);
  for (int i = 0; i < count; ++i) img[i] = input(id, r, i);
  c->sbuf = tbuf_alloc(kind, bytes);
  c->rbuf = tbuf_alloc(kind, bytes);
  tbuf_put(kind, c->sbuf, img, bytes);
  memset(img, 0xA5, bytes); /* poison */
  tbuf_put(kind, c->rbuf, img, bytes);
  free(img);
}

static void call_check(call_t *c, MPI_Comm comm, const char *what) {
  int n;
  MPI_Comm_size(comm, &n);
  const size_t bytes = (size_t)c->count * sizeof(int);
  int *got = malloc(bytes);
  tbuf_get(kind, got, c->rbuf, bytes);
  int wrong = 0;
  for (int i = 0; i < c->count; ++i) {
    int want = 0;
    for (int r = 0; r < n; ++r) want += input(c->call, r, i);
    wrong += got[i] != want;
  }
  char msg[256];
  snprintf(msg, sizeof(msg), "%s: %d of %d elements wrong", what, wrong, c->count);
  expect(wrong == 0, msg);
  free(got);
  tbuf_free(kind, c->sbuf);
  tbuf_free(kind, c->rbuf);
}

/* One checked allreduce on comm; `id` must be the same on every rank of comm. */
static void allreduce_checked(MPI_Comm comm, uint64_t id, int nonblocking, const char *what) {
  call_t c;
  call_prepare(&c, comm, 64 + (int)(id % 500), id);
  int rc;
  if (nonblocking) {
    MPI_Request req;
    rc = MPI_Iallreduce(c.sbuf, c.rbuf, c.count, MPI_INT, MPI_SUM, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Allreduce(c.sbuf, c.rbuf, c.count, MPI_INT, MPI_SUM, comm);
  }
  expect(rc == MPI_SUCCESS, what);
  call_check(&c, comm, what);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* -T: communicators made every way, from a parent on which a collective ran before (`warm`) or not. */
static void constructions(MPI_Comm parent, int warm, uint64_t base) {
  if (warm) allreduce_checked(parent, base, 0, "the parent's collective");
  MPI_Comm made[7];
  const char *names[7] = {"dup", "dup of the dup", "split", "create", "create_group", "idup", "dup of the idup"};
  MPI_Comm_dup(parent, &made[0]);
  MPI_Comm_dup(made[0], &made[1]);
  int prank;
  MPI_Comm_rank(parent, &prank);
  MPI_Comm_split(parent, prank % 2, -prank, &made[2]);
  MPI_Group group;
  MPI_Comm_group(parent, &group);
  MPI_Comm_create(parent, group, &made[3]);
  MPI_Comm_create_group(parent, group, 7, &made[4]);
  MPI_Group_free(&group);
  MPI_Request req;
  MPI_Comm_idup(parent, &made[5], &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_dup(made[5], &made[6]);
  for (int k = 0; k < 7; ++k) {
    char what[96];
    snprintf(what, sizeof(what), "allreduce on the %s (%s parent)", names[k], warm ? "warm" : "fresh");
    allreduce_checked(made[k], base + 1 + (uint64_t)k, k % 2, what);
  }
  for (int k = 6; k >= 0; --k) MPI_Comm_free(&made[k]);
}

/* -o */
static void idup_orders(void) {
  MPI_Comm x, y, xx, yy;
  MPI_Comm_dup(MPI_COMM_WORLD, &x);
  MPI_Comm_dup(MPI_COMM_WORLD, &y);
  MPI_Request req[2];
  if (world_rank % 2 == 0) {
    MPI_Comm_idup(x, &xx, &req[0]);
    MPI_Comm_idup(y, &yy, &req[1]);
  } else {
    MPI_Comm_idup(y, &yy, &req[1]);
    MPI_Comm_idup(x, &xx, &req[0]);
  }
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  allreduce_checked(xx, 100, 0, "allreduce on X's idup");
  allreduce_checked(yy, 101, 1, "iallreduce on Y's idup");
  MPI_Comm_free(&xx);
  MPI_Comm_free(&yy);
  MPI_Comm_free(&x);
  MPI_Comm_free(&y);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* -p */
enum { kFresh = 5 };
static void nonblocking_then_p2p(double late_s) {
  MPI_Comm comms[kFresh];
  for (int k = 0; k < kFresh; ++k) MPI_Comm_dup(MPI_COMM_WORLD, &comms[k]);
  call_t calls[kFresh];
  MPI_Request reqs[kFresh];
  double took[kFresh];
  for (int k = 0; k < kFresh; ++k) call_prepare(&calls[k], comms[k], 256, 200 + (uint64_t)k);
  if (world_rank == 1) usleep((useconds_t)(late_s * 1e6));
  for (int k = 0; k < kFresh; ++k) {
    int token = k;
    if (world_rank == 1) MPI_Recv(&token, 1, MPI_INT, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const double t0 = now();
    MPI_Iallreduce(calls[k].sbuf, calls[k].rbuf, 256, MPI_INT, MPI_SUM, comms[k], &reqs[k]);
    took[k] = now() - t0;
    if (world_rank == 0) MPI_Send(&token, 1, MPI_INT, 1, k, MPI_COMM_WORLD);
  }
  MPI_Waitall(kFresh, reqs, MPI_STATUSES_IGNORE);
  for (int k = 0; k < kFresh; ++k) call_check(&calls[k], comms[k], "an MPI_Iallreduce followed by point-to-point");
  if (world_rank == 0) {
    char what[160];
    double sorted[kFresh];
    memcpy(sorted, took, sizeof(sorted));
    qsort(sorted, kFresh, sizeof(double), cmp_double);
    snprintf(what, sizeof(what),
             "the first MPI_Iallreduce on a fresh communicator took %.1f us (median of %d, max %.1f us) "
             "with rank 1 %.1f s late",
             sorted[kFresh / 2] * 1e6, kFresh, sorted[kFresh - 1] * 1e6, late_s);
    printf("test_nowait: %s\n", what);
    expect(sorted[kFresh / 2] < 100e-6 && sorted[kFresh - 1] < 50e-3, what);
  }
  for (int k = 0; k < kFresh; ++k) MPI_Comm_free(&comms[k]);
}

/* -b */
static void outstanding(int n) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  call_t *calls = malloc(sizeof(call_t) * (size_t)n);
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)n);
  for (int k = 0; k < n; ++k) {
    calls[k].count = 4;
    calls[k].call = 1000 + (uint64_t)k;
  }
  const size_t bytes = 4 * sizeof(int);
  /* one allocation for all: n small cudaMalloc calls would dominate */
  char *sall = tbuf_alloc(kind, bytes * (size_t)n), *rall = tbuf_alloc(kind, bytes * (size_t)n);
  int *img = malloc(bytes * (size_t)n);
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < 4; ++i) img[k * 4 + i] = input(calls[k].call, world_rank, i);
  tbuf_put(kind, sall, img, bytes * (size_t)n);
  memset(img, 0xA5, bytes * (size_t)n);
  tbuf_put(kind, rall, img, bytes * (size_t)n);
  if (world_rank != 0) usleep(300000);
  const double t0 = now();
  for (int k = 0; k < n; ++k)
    MPI_Iallreduce(sall + bytes * (size_t)k, rall + bytes * (size_t)k, 4, MPI_INT, MPI_SUM, comm, &reqs[k]);
  const double posting = now() - t0;
  MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
  tbuf_get(kind, img, rall, bytes * (size_t)n);
  int wrong = 0;
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < 4; ++i) {
      int want = 0;
      for (int r = 0; r < world_size; ++r) want += input(calls[k].call, r, i);
      wrong += img[k * 4 + i] != want;
    }
  char what[128];
  snprintf(what, sizeof(what), "%d outstanding MPI_Iallreduce: %d elements wrong", n, wrong);
  expect(wrong == 0, what);
  if (world_rank == 0) {
    snprintf(what, sizeof(what), "rank 0 posted %d MPI_Iallreduce in %.3f s, ahead of ranks 300 ms late", n, posting);
    printf("test_nowait: %s\n", what);
    expect(posting < 0.25, what);
  }
  tbuf_free(kind, sall);
  tbuf_free(kind, rall);
  free(img);
  free(reqs);
  free(calls);
  MPI_Comm_free(&comm);
}

/* -t */
typedef struct {
  MPI_Comm comm;
  int calls;
  int id;
} thread_arg_t;

static void *thread_calls(void *p) {
  thread_arg_t *t = p;
  char what[64];
  snprintf(what, sizeof(what), "thread %d's allreduce", t->id);
  for (int i = 0; i < t->calls; ++i) allreduce_checked(t->comm, (uint64_t)t->id << 32 | (uint64_t)i, i % 2, what);
  return NULL;
}

static void threads(int calls) {
  thread_arg_t args[2];
  pthread_t th[2];
  for (int k = 0; k < 2; ++k) {
    MPI_Comm_dup(MPI_COMM_WORLD, &args[k].comm);
    args[k].calls = calls;
    args[k].id = 5 + k;
  }
  for (int k = 0; k < 2; ++k) pthread_create(&th[k], NULL, thread_calls, &args[k]);
  for (int k = 0; k < 2; ++k) pthread_join(th[k], NULL);
  for (int k = 0; k < 2; ++k) MPI_Comm_free(&args[k].comm);
}

/* -k */
static void killed_in_loop(int rounds) {
  const int victim = world_size - 1, at = (int)(seed % (uint64_t)rounds), where = (int)(seed / 7 % 3);
  for (int i = 0; i < rounds; ++i) {
    MPI_Comm comm;
    if (world_rank == victim && i == at && where == 0) raise(SIGKILL);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (world_rank == victim && i == at && where == 1) raise(SIGKILL);
    allreduce_checked(comm, 3000 + (uint64_t)i, i % 2, "an allreduce of the dup/free loop");
    if (world_rank == victim && i == at && where == 2) raise(SIGKILL);
    MPI_Comm_free(&comm);
  }
}

int main(int argc, char **argv) {
  int level = MPI_THREAD_SINGLE, opt, orders = 0, outstanding_n = 0, thread_calls_n = 0, construct = 0, kill_rounds = 0;
  double late_s = -1;
  const char *kind_name = "host";
  while ((opt = getopt(argc, argv, "m:T:op:b:t:k:")) != -1) {
    if (opt == 'k') kill_rounds = atoi(optarg);
    if (opt == 'm') kind_name = optarg;
    if (opt == 'T') {
      construct = 1;
      level = strcmp(optarg, "multiple") == 0     ? MPI_THREAD_MULTIPLE
              : strcmp(optarg, "serialized") == 0 ? MPI_THREAD_SERIALIZED
              : strcmp(optarg, "funneled") == 0   ? MPI_THREAD_FUNNELED
                                                  : MPI_THREAD_SINGLE;
    }
    if (opt == 'o') orders = 1;
    if (opt == 'p') late_s = atof(optarg);
    if (opt == 'b') outstanding_n = atoi(optarg);
    if (opt == 't') thread_calls_n = atoi(optarg);
  }
  if (thread_calls_n > 0) level = MPI_THREAD_MULTIPLE;
  int provided;
  MPI_Init_thread(&argc, &argv, level, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (tbuf_parse_kind(kind_name, &kind) != 0) {
    fprintf(stderr, "test_nowait: unknown or unbuilt memory kind %s\n", kind_name);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  tbuf_select_device(world_rank);
  alarm(240); /* a hang becomes a failure */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^ 0x5DEECE66DULL;
  /* one draw for all, by point-to-point: the communicators below must see no collective before theirs */
  if (world_rank == 0)
    for (int r = 1; r < world_size; ++r) MPI_Send(&seed, 1, MPI_UINT64_T, r, 0, MPI_COMM_WORLD);
  else
    MPI_Recv(&seed, 1, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (provided < level) {
    if (world_rank == 0) printf("test_nowait: this Open MPI provides thread level %d < %d: SKIP\n", provided, level);
    MPI_Finalize();
    return 77;
  }
  if (construct) {
    constructions(MPI_COMM_WORLD, 0, 10);
    constructions(MPI_COMM_WORLD, 1, 20);
  }
  if (orders) idup_orders();
  if (late_s >= 0) nonblocking_then_p2p(late_s);
  if (outstanding_n > 0) outstanding(outstanding_n);
  if (thread_calls_n > 0) threads(thread_calls_n);
  if (kill_rounds > 0) killed_in_loop(kill_rounds);
  long all_failures = 0, all_checks = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (world_rank == 0)
    printf("test_nowait: %d ranks, %s memory, %ld checks, %ld failed\n", world_size, tbuf_kind_name(kind), all_checks,
           all_failures);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
