/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Many nonblocking collectives outstanding at once, completed in random order.
 *
 * Each round posts 1 to 12 calls on MPI_COMM_WORLD, drawn at random: Iallreduce, Ibcast, Iallgather,
 * Ireduce, Ireduce_scatter_block, Ireduce_scatter, Ialltoall, Iallgatherv and Ialltoallv (the collectives with a GPU
 * path; those with counts of counts from 0 up, blocks in reverse rank order with gaps between), Igather on
 * host memory and Ibarrier (through the previous module, behind the others: their starts must keep the
 * call order), with blocking MPI_Allreduce calls in between. One rank per round computes (spins) a few
 * milliseconds before it posts, so that the others wait for it. The round completes with MPI_Waitany or
 * MPI_Testsome in whatever order calls finish. Every output is poisoned before the call, inputs are fresh
 * random integers, and every result is compared with the sums computed here.
 *
 * With -c COMMS the calls go on COMMS duplicates of MPI_COMM_WORLD instead (drawn per call, the same on every
 * rank), and each rank posts a round's calls in an order of its own that keeps each communicator's order: the
 * communicators' calls interleave differently on every rank, as MPI allows for nonblocking calls (the
 * blocking MPI_Allreduce calls stay on MPI_COMM_WORLD). Before the rounds each duplicate runs a blocking
 * MPI_Allreduce in turn, and at the end they are freed in a drawn order, with a blocking MPI_Allreduce on each
 * one left after every free. On device memory they share one engine of the GPU path (engine/engine.h): what
 * one communicator's calls hold, another's must not take.
 *
 * usage: test_nonblocking [-m KIND] [-i ROUNDS] [-s SEED] [-b CALLS] [-p STARTS] [-c COMMS] [-G] [-f]
 *   -m  memory kind of the buffers (host; device, managed, pinned, mixed with CUDA)
 *   -G  the GPU path's nonblocking calls must stage nothing (coll_gpu_staged_buffers stays put): with -m
 *       device (persistent requests are left out: they bind staged buffers at init, for a fallback); beyond
 *       8 ranks, where alltoall(v), allgatherv and reduce-scatter of unequal counts stage by design, alltoall(v)
 *       and allgatherv then run on host buffers and reduce-scatter with equal counts; over SHM and across
 *       (virtual) nodes or hosts allgatherv and alltoallv of unequal counts run on host buffers
 *   -b  then one round of CALLS calls (more than the path agreement's 64 ahead of a rank 300 ms late)
 *   -p  then persistent requests of eight collectives with a GPU path, each started STARTS times with new
 *       contents (MPI_Startall, or MPI_Start one by one in a drawn order; MPI_Waitall), and freed
 *   -f  last, a communicator freed with calls outstanding on it (our requests hold it until they complete)
 *   -c  the calls on COMMS duplicates, as above (not with -G: a call whose communicator finds the engine held
 *       by another's is staged)
 * Prints "test_nonblocking: N ranks, KIND memory, R rounds, C checks: F failed".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/mpi/colls.h"

/* after mpi.h, which it needs: MPIX_*_init */
#include <mpi-ext.h>

int rank, nranks;
uint64_t seed = 1;
tbuf_kind_t kind = TBUF_HOST;
long checks, failures;
bool verbose, gpu_path;
/* -G: the calls that stage by design are left off the GPU. Beyond 8 ranks (COLL_GPU_MAX_DIRECT): a reduce-scatter
 * takes equal blocks, an alltoall host memory. Beyond 8 ranks, over the SHM node transport or across (virtual)
 * nodes or hosts, where no zero-copy call runs: calls with counts unlike from rank to rank take host memory. */
bool beyond_direct, counts_staged;
int gap_max_us;

enum { ALLREDUCE, BCAST, ALLGATHER, REDUCE, RSB, RS, ALLTOALL, ALLGATHERV, ALLTOALLV, GATHER, BARRIER, NCALLS };
static const char *names[] = {
    "MPI_Iallreduce",      "MPI_Ibcast",    "MPI_Iallgather",  "MPI_Ireduce",    "MPI_Ireduce_scatter_block",
    "MPI_Ireduce_scatter", "MPI_Ialltoall", "MPI_Iallgatherv", "MPI_Ialltoallv", "MPI_Igather",
    "MPI_Ibarrier"};

#define MAXCALLS 12
#define MAXCOMMS 16

static MPI_Comm comms[MAXCOMMS]; /* where the nonblocking calls go: MPI_COMM_WORLD, or -c's duplicates */
static int ncomms = 1;

typedef struct {
  int what, root;
  size_t count; /* elements per block (ALLREDUCE, REDUCE, BCAST: of the buffer) */
  int rcounts[64];
  int scounts[64], sdispls[64], rdispls[64]; /* ALLGATHERV, ALLTOALLV */
  buf_t s, r;                                /* send and receive buffers of the rank's kind (GATHER: host) */
  int32_t *want;                             /* the expected receive buffer, NULL where none is defined */
  size_t want_n;                             /* its elements */
  MPI_Comm comm;
  MPI_Request req;
  char name[96];
} call_t;

/* The input of rank q in call `id`: element i. */
static int32_t in(uint64_t id, int q, size_t i) { return (int32_t)(rnd(id, (uint64_t)q, i) & 0xffff) - 0x8000; }

static buf_t buf_of(size_t bytes, int host) {
  buf_t b = host ? (buf_t){tbuf_alloc(TBUF_HOST, bytes), malloc(bytes ? bytes : 1), bytes, TBUF_HOST} : buf_new(bytes);
  memset(b.img, POISON, bytes);
  return b;
}

static void fill(buf_t *b, uint64_t id, int q, size_t n) {
  int32_t *v = (int32_t *)b->img;
  for (size_t i = 0; i < n; ++i) v[i] = in(id, q, i);
  tbuf_put(b->k, b->dev, b->img, n * sizeof(int32_t));
}

static void poison(buf_t *b) {
  memset(b->img, POISON, b->bytes);
  tbuf_put(b->k, b->dev, b->img, b->bytes);
}

static int small_counts; /* a burst's calls: up to 4096 elements, no blocking call between them */

static size_t draw_count(uint64_t id) {
  static const size_t sizes[] = {1, 7, 300, 4096, 20000, 70000, 300000};
  return sizes[rnd(id, 0xc0, 0) % (small_counts ? 4 : sizeof(sizes) / sizeof(sizes[0]))];
}

/* The communicator of call `id`. */
static int comm_of(uint64_t id) { return (int)(rnd(id, 0xc7, 0) % (uint64_t)ncomms); }

/* The calls with counts (ALLGATHERV, ALLTOALLV) of layout `lay`, drawn alike on every rank: rank `from` sends rank
 * `to` 0 to k elements (an allgatherv's rank `from` the same to every rank), and every buffer holds its blocks in
 * reverse rank order with a gap of one element after each. */
static int vcount(uint64_t lay, size_t k, int from, int to) {
  return (int)(rnd(lay, 0x5e, (uint64_t)from * 64 + (uint64_t)to) % (k + 1));
}

/* Such a buffer's displacements of `counts`; returns its elements. */
static size_t spread(const int *counts, int n, int *displs) {
  size_t at = 0;
  for (int q = n - 1; q >= 0; --q) {
    displs[q] = (int)at;
    at += (size_t)counts[q] + 1;
  }
  return at;
}

/* Call c's layout `lay` and its buffers (on host memory where such calls stage by design: counts_staged). */
static void counted_alloc(call_t *c, uint64_t lay) {
  const int n = nranks, a2a = c->what == ALLTOALLV;
  for (int q = 0; q < n; ++q) {
    c->scounts[q] = vcount(lay, c->count, rank, a2a ? q : rank);
    c->rcounts[q] = vcount(lay, c->count, q, a2a ? rank : q);
  }
  const size_t sk = a2a ? spread(c->scounts, n, c->sdispls) : (size_t)c->scounts[0];
  const size_t rk = spread(c->rcounts, n, c->rdispls);
  c->s = buf_of(sk * 4, counts_staged);
  c->r = buf_of(rk * 4, counts_staged);
  c->want = malloc(rk * 4 + 4);
  c->want_n = rk;
}

/* Call c's contents `id` (its send buffer, the poisoned receive buffer) and its expected result. */
static void counted_fill(call_t *c, uint64_t lay, uint64_t id) {
  const int n = nranks, a2a = c->what == ALLTOALLV;
  fill(&c->s, id, rank, c->s.bytes / 4);
  poison(&c->r);
  memset(c->want, POISON, c->want_n * 4);
  for (int q = 0; q < n; ++q) {
    size_t from = 0; /* where rank q's block for this rank starts in q's send buffer */
    if (a2a) {
      int counts[64], displs[64];
      for (int d = 0; d < n; ++d) counts[d] = vcount(lay, c->count, q, d);
      spread(counts, n, displs);
      from = (size_t)displs[rank];
    }
    for (int i = 0; i < c->rcounts[q]; ++i) c->want[c->rdispls[q] + i] = in(id, q, from + (size_t)i);
  }
}

/* Posts call `id` (the same draw on every rank). */
static void post(call_t *c, uint64_t id) {
  const int n = nranks;
  const MPI_Comm comm = c->comm = comms[comm_of(id)];
  c->what = (int)(rnd(id, 0xa1, 0) % NCALLS);
  c->root = (int)(rnd(id, 0x2f, 0) % (uint64_t)n);
  c->count = draw_count(id);
  c->want = NULL;
  c->want_n = 0;
  const size_t k = c->count;
  int32_t *w;
  int err = MPI_SUCCESS;
  switch (c->what) {
    case ALLREDUCE:
    case REDUCE:
      c->s = buf_of(k * 4, 0);
      c->r = buf_of(k * 4, 0);
      fill(&c->s, id, rank, k);
      poison(&c->r);
      if (c->what == ALLREDUCE || rank == c->root) {
        c->want = w = calloc(k, 4);
        c->want_n = k;
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < k; ++i) w[i] = (int32_t)((uint32_t)w[i] + (uint32_t)in(id, q, i));
      }
      err = c->what == ALLREDUCE
                ? MPI_Iallreduce(c->s.dev, c->r.dev, (int)k, MPI_INT32_T, MPI_SUM, comm, &c->req)
                : MPI_Ireduce(c->s.dev, c->r.dev, (int)k, MPI_INT32_T, MPI_SUM, c->root, comm, &c->req);
      break;
    case BCAST:
      c->s = buf_of(0, 0);
      c->r = buf_of(k * 4, 0);
      if (rank == c->root)
        fill(&c->r, id, c->root, k);
      else
        poison(&c->r);
      c->want = w = malloc(k * 4);
      c->want_n = k;
      for (size_t i = 0; i < k; ++i) w[i] = in(id, c->root, i);
      err = MPI_Ibcast(c->r.dev, (int)k, MPI_INT32_T, c->root, comm, &c->req);
      break;
    case ALLGATHER:
    case GATHER:
      c->s = buf_of(k * 4, c->what == GATHER);
      c->r = buf_of(k * 4 * n, c->what == GATHER);
      fill(&c->s, id, rank, k);
      poison(&c->r);
      if (c->what == ALLGATHER || rank == c->root) {
        c->want = w = malloc(k * 4 * n);
        c->want_n = k * n;
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < k; ++i) w[q * k + i] = in(id, q, i);
      }
      err = c->what == ALLGATHER
                ? MPI_Iallgather(c->s.dev, (int)k, MPI_INT32_T, c->r.dev, (int)k, MPI_INT32_T, comm, &c->req)
                : MPI_Igather(c->s.dev, (int)k, MPI_INT32_T, c->r.dev, (int)k, MPI_INT32_T, c->root, comm, &c->req);
      break;
    case RSB:
    case RS: {
      size_t total = 0, mine = 0, begin = 0;
      for (int q = 0; q < n; ++q) {
        c->rcounts[q] = c->what == RSB || beyond_direct ? (int)k : (int)(rnd(id, 0x5c, (uint64_t)q) % (k + 1));
        if (q < rank) begin += (size_t)c->rcounts[q];
        total += (size_t)c->rcounts[q];
      }
      mine = (size_t)c->rcounts[rank];
      c->s = buf_of(total * 4, 0);
      c->r = buf_of(mine * 4, 0);
      fill(&c->s, id, rank, total);
      poison(&c->r);
      c->want = w = calloc(mine ? mine : 1, 4);
      c->want_n = mine;
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < mine; ++i) w[i] = (int32_t)((uint32_t)w[i] + (uint32_t)in(id, q, begin + i));
      err = c->what == RSB ? MPI_Ireduce_scatter_block(c->s.dev, c->r.dev, (int)k, MPI_INT32_T, MPI_SUM, comm, &c->req)
                           : MPI_Ireduce_scatter(c->s.dev, c->r.dev, c->rcounts, MPI_INT32_T, MPI_SUM, comm, &c->req);
      break;
    }
    case ALLGATHERV:
    case ALLTOALLV:
      counted_alloc(c, id);
      counted_fill(c, id, id);
      err = c->what == ALLGATHERV ? MPI_Iallgatherv(c->s.dev, c->scounts[0], MPI_INT32_T, c->r.dev, c->rcounts,
                                                    c->rdispls, MPI_INT32_T, comm, &c->req)
                                  : MPI_Ialltoallv(c->s.dev, c->scounts, c->sdispls, MPI_INT32_T, c->r.dev, c->rcounts,
                                                   c->rdispls, MPI_INT32_T, comm, &c->req);
      break;
    case ALLTOALL:
      c->s = buf_of(k * 4 * n, beyond_direct);
      c->r = buf_of(k * 4 * n, beyond_direct);
      fill(&c->s, id, rank, k * n);
      poison(&c->r);
      c->want = w = malloc(k * 4 * n);
      c->want_n = k * n;
      for (int q = 0; q < n; ++q) /* block q: rank q's block `rank` */
        for (size_t i = 0; i < k; ++i) w[q * k + i] = in(id, q, (size_t)rank * k + i);
      err = MPI_Ialltoall(c->s.dev, (int)k, MPI_INT32_T, c->r.dev, (int)k, MPI_INT32_T, comm, &c->req);
      break;
    default:
      c->s = buf_of(0, 1);
      c->r = buf_of(0, 1);
      err = MPI_Ibarrier(comm, &c->req);
  }
  snprintf(c->name, sizeof(c->name), "call %llu: %s of %zu ints, root %d, communicator %d", (unsigned long long)id,
           names[c->what], k, c->root, comm_of(id));
  checks++;
  if (err != MPI_SUCCESS) fail(c->name, "the call returned an error");
}

static void check(call_t *c) {
  if (c->want != NULL) {
    tbuf_get(c->r.k, c->r.img, c->r.dev, c->want_n * 4);
    check_bytes(c->name, c->r.img, c->want, c->want_n * 4);
  }
  tbuf_free(c->s.k, c->s.dev);
  tbuf_free(c->r.k, c->r.dev);
  free(c->s.img);
  free(c->r.img);
  free(c->want);
}

/* A blocking allreduce on comm, checked at once. */
static void blocking_on(MPI_Comm comm, uint64_t id) {
  const size_t k = draw_count(id);
  buf_t s = buf_of(k * 4, 0), r = buf_of(k * 4, 0);
  fill(&s, id, rank, k);
  poison(&r);
  char name[64];
  snprintf(name, sizeof(name), "blocking MPI_Allreduce %llu of %zu ints", (unsigned long long)id, k);
  checks++;
  if (MPI_Allreduce(s.dev, r.dev, (int)k, MPI_INT32_T, MPI_SUM, comm) != MPI_SUCCESS)
    fail(name, "the call returned an error");
  int32_t *w = calloc(k, 4);
  for (int q = 0; q < nranks; ++q)
    for (size_t i = 0; i < k; ++i) w[i] = (int32_t)((uint32_t)w[i] + (uint32_t)in(id, q, i));
  tbuf_get(r.k, r.img, r.dev, k * 4);
  check_bytes(name, r.img, w, k * 4);
  free(w);
  tbuf_free(s.k, s.dev);
  tbuf_free(r.k, r.dev);
  free(s.img);
  free(r.img);
}

/* A blocking allreduce between the nonblocking calls. */
static void blocking(uint64_t id) { blocking_on(MPI_COMM_WORLD, id); }

static void spin_us(long us) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* One round: `ncalls` calls (0: 1 to MAXCALLS, drawn), one rank `late_us` late (0: up to 5 ms, drawn). */
static void round_of(int round, int ncalls, long late_us) {
  call_t *calls = malloc(sizeof(call_t) * (size_t)(ncalls > 0 ? ncalls : MAXCALLS));
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(ncalls > 0 ? ncalls : MAXCALLS));
  const uint64_t base = (uint64_t)round * 1000;
  if (ncalls == 0) ncalls = 1 + (int)(rnd(base, 0x77, 0) % MAXCALLS);
  if (late_us == 0) late_us = (long)(rnd(base, 0x99, 0) % 5000);
  if (rank == round % nranks) spin_us(late_us);      /* this rank computes: late */
  int next[MAXCOMMS] = {0}, left_in[MAXCOMMS] = {0}; /* per communicator: its next call, and how many are left */
  for (int i = 0; i < ncalls; ++i) ++left_in[comm_of(base + (uint64_t)i + 1)];
  for (int i = 0; i < ncalls; ++i) {
    /* this rank's own pick of the communicator whose next call it posts (its order kept) */
    int j = (int)(rnd(base ^ 0x0dd5, (uint64_t)rank, (uint64_t)i) % (uint64_t)ncomms);
    while (left_in[j] == 0) j = (j + 1) % ncomms;
    while (comm_of(base + (uint64_t)next[j] + 1) != j) ++next[j];
    const int at = next[j]++;
    --left_in[j];
    post(&calls[at], base + (uint64_t)at + 1);
    if (!small_counts && rnd(base, 0xb1, (uint64_t)i) % 4 == 0) blocking(base + 500 + (uint64_t)i);
  }
  for (int i = 0; i < ncalls; ++i) reqs[i] = calls[i].req;
  int left = ncalls;
  if (round % 2 == 0) {
    while (left > 0) {
      int at;
      MPI_Waitany(ncalls, reqs, &at, MPI_STATUS_IGNORE);
      if (at == MPI_UNDEFINED) break;
      --left;
    }
  } else {
    while (left > 0) {
      int done, *at = malloc(sizeof(int) * (size_t)ncalls);
      MPI_Testsome(ncalls, reqs, &done, at, MPI_STATUSES_IGNORE);
      free(at);
      if (done == MPI_UNDEFINED) break;
      left -= done;
    }
  }
  for (int i = 0; i < ncalls; ++i) check(&calls[i]);
  free(calls);
  free(reqs);
}

/* Persistent requests of the collectives with a GPU path (MPIX_*_init, made in a random order), all
 * started together `starts` times with new contents each time, checked after each MPI_Waitall. */
static void persistent(int starts) {
  enum { NP = 8 };
  static const int kinds[NP] = {ALLREDUCE, BCAST, ALLGATHER, REDUCE, RSB, ALLTOALL, ALLGATHERV, ALLTOALLV};
  const int n = nranks;
  call_t c[NP];
  MPI_Request reqs[NP];
  for (int j = 0; j < NP; ++j) {
    call_t *p = &c[j];
    p->what = kinds[(j + (int)(rnd(0x9e, 0, 0) % NP)) % NP];
    p->root = (int)(rnd(0x9e, 1, (uint64_t)j) % (uint64_t)n);
    p->count = draw_count(0x9e00 + (uint64_t)j);
    const size_t k = p->count;
    snprintf(p->name, sizeof(p->name), "persistent %s of %zu ints, root %d", names[p->what], k, p->root);
    int err;
    if (p->what == ALLGATHERV || p->what == ALLTOALLV) {
      counted_alloc(p, 0x9e00 + (uint64_t)j);
      err = p->what == ALLGATHERV
                ? MPIX_Allgatherv_init(p->s.dev, p->scounts[0], MPI_INT32_T, p->r.dev, p->rcounts, p->rdispls,
                                       MPI_INT32_T, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[j])
                : MPIX_Alltoallv_init(p->s.dev, p->scounts, p->sdispls, MPI_INT32_T, p->r.dev, p->rcounts, p->rdispls,
                                      MPI_INT32_T, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[j]);
      checks++;
      if (err != MPI_SUCCESS) fail(p->name, "the init call returned an error");
      continue;
    }
    const size_t sk = p->what == ALLREDUCE || p->what == REDUCE || p->what == ALLGATHER ? k
                      : p->what == BCAST                                                ? 0
                                                                                        : k * n;
    const size_t rk = p->what == ALLGATHER || p->what == ALLTOALL ? k * n : k;
    p->s = buf_of(sk * 4, 0);
    p->r = buf_of(rk * 4, 0);
    p->want = malloc(rk * 4 + 4);
    switch (p->what) {
      case ALLREDUCE:
        err = MPIX_Allreduce_init(p->s.dev, p->r.dev, (int)k, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                  &reqs[j]);
        break;
      case REDUCE:
        err = MPIX_Reduce_init(p->s.dev, p->r.dev, (int)k, MPI_INT32_T, MPI_SUM, p->root, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &reqs[j]);
        break;
      case BCAST:
        err = MPIX_Bcast_init(p->r.dev, (int)k, MPI_INT32_T, p->root, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[j]);
        break;
      case ALLGATHER:
        err = MPIX_Allgather_init(p->s.dev, (int)k, MPI_INT32_T, p->r.dev, (int)k, MPI_INT32_T, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &reqs[j]);
        break;
      case RSB:
        err = MPIX_Reduce_scatter_block_init(p->s.dev, p->r.dev, (int)k, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD,
                                             MPI_INFO_NULL, &reqs[j]);
        break;
      default:
        err = MPIX_Alltoall_init(p->s.dev, (int)k, MPI_INT32_T, p->r.dev, (int)k, MPI_INT32_T, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &reqs[j]);
    }
    checks++;
    if (err != MPI_SUCCESS) fail(p->name, "the init call returned an error");
  }
  for (int t = 0; t < starts; ++t) {
    for (int j = 0; j < NP; ++j) {
      call_t *p = &c[j];
      const uint64_t id = 0x50000 + (uint64_t)t * 16 + (uint64_t)j; /* new contents at every start */
      const size_t k = p->count;
      int32_t *w = p->want;
      if (p->what == ALLGATHERV || p->what == ALLTOALLV) {
        counted_fill(p, 0x9e00 + (uint64_t)j, id);
        continue;
      }
      p->want_n = 0;
      switch (p->what) {
        case ALLREDUCE:
        case REDUCE:
          fill(&p->s, id, rank, k);
          if (p->what == ALLREDUCE || rank == p->root) {
            p->want_n = k;
            memset(w, 0, k * 4);
            for (int q = 0; q < nranks; ++q)
              for (size_t i = 0; i < k; ++i) w[i] = (int32_t)((uint32_t)w[i] + (uint32_t)in(id, q, i));
          }
          break;
        case BCAST:
          if (rank == p->root) fill(&p->r, id, p->root, k);
          p->want_n = k;
          for (size_t i = 0; i < k; ++i) w[i] = in(id, p->root, i);
          break;
        case ALLGATHER:
          fill(&p->s, id, rank, k);
          p->want_n = k * nranks;
          for (int q = 0; q < nranks; ++q)
            for (size_t i = 0; i < k; ++i) w[q * k + i] = in(id, q, i);
          break;
        case RSB:
          fill(&p->s, id, rank, k * nranks);
          p->want_n = k;
          memset(w, 0, k * 4);
          for (int q = 0; q < nranks; ++q)
            for (size_t i = 0; i < k; ++i) w[i] = (int32_t)((uint32_t)w[i] + (uint32_t)in(id, q, (size_t)rank * k + i));
          break;
        default:
          fill(&p->s, id, rank, k * nranks);
          p->want_n = k * nranks;
          for (int q = 0; q < nranks; ++q)
            for (size_t i = 0; i < k; ++i) w[q * k + i] = in(id, q, (size_t)rank * k + i);
      }
      if (p->what != BCAST || rank != p->root) poison(&p->r);
    }
    checks++;
    if (t % 2 == 0) {
      if (MPI_Startall(NP, reqs) != MPI_SUCCESS) fail("MPI_Startall of the persistent requests", "an error");
    } else { /* one by one, in an order drawn for this round (the same on every rank) */
      int order[NP];
      for (int j = 0; j < NP; ++j) order[j] = j;
      for (int j = NP - 1; j > 0; --j) {
        const int o = (int)(rnd(0x5a, (uint64_t)t, (uint64_t)j) % (uint64_t)(j + 1)), x = order[j];
        order[j] = order[o];
        order[o] = x;
      }
      for (int j = 0; j < NP; ++j)
        if (MPI_Start(&reqs[order[j]]) != MPI_SUCCESS) fail("MPI_Start of a persistent request", "an error");
    }
    MPI_Waitall(NP, reqs, MPI_STATUSES_IGNORE);
    for (int j = 0; j < NP; ++j) {
      tbuf_get(c[j].r.k, c[j].r.img, c[j].r.dev, c[j].want_n * 4);
      check_bytes(c[j].name, c[j].r.img, c[j].want, c[j].want_n * 4);
    }
  }
  for (int j = 0; j < NP; ++j) {
    MPI_Request_free(&reqs[j]);
    c[j].want_n = 0;
    check(&c[j]);
  }
}

/* A communicator freed while calls on it are outstanding: they complete, with their results. */
static void freed_comm(void) {
  MPI_Comm d;
  MPI_Comm_dup(MPI_COMM_WORLD, &d);
  const size_t k = 4096;
  buf_t s = buf_of(k * 4, 0), r = buf_of(k * 4, 0);
  fill(&s, 0xf4ee, rank, k);
  poison(&r);
  MPI_Request req;
  checks++;
  if (MPI_Iallreduce(s.dev, r.dev, (int)k, MPI_INT32_T, MPI_SUM, d, &req) != MPI_SUCCESS)
    fail("MPI_Iallreduce on a communicator freed next", "the call returned an error");
  MPI_Comm_free(&d);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  int32_t *w = calloc(k, 4);
  for (int q = 0; q < nranks; ++q)
    for (size_t i = 0; i < k; ++i) w[i] = (int32_t)((uint32_t)w[i] + (uint32_t)in(0xf4ee, q, i));
  tbuf_get(r.k, r.img, r.dev, k * 4);
  check_bytes("MPI_Iallreduce on a communicator freed before MPI_Wait", r.img, w, k * 4);
  free(w);
  tbuf_free(s.k, s.dev);
  tbuf_free(r.k, r.dev);
  free(s.img);
  free(r.img);
}

/* -c's duplicates, freed in a drawn order; after each free, a blocking call on each one left. */
static void free_comms(void) {
  int order[MAXCOMMS];
  for (int j = 0; j < ncomms; ++j) order[j] = j;
  for (int j = ncomms - 1; j > 0; --j) {
    const int o = (int)(rnd(0xf7ee, 0, (uint64_t)j) % (uint64_t)(j + 1)), x = order[j];
    order[j] = order[o];
    order[o] = x;
  }
  for (int j = 0; j < ncomms; ++j) {
    MPI_Comm_free(&comms[order[j]]);
    for (int k = j + 1; k < ncomms; ++k) blocking_on(comms[order[k]], 0xf7ee00 + (uint64_t)(j * MAXCOMMS + k));
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int rounds = 20, opt, freeing = 0, burst = 0, starts = 0;
  seed = (uint64_t)time(NULL);
  while ((opt = getopt(argc, argv, "m:i:s:b:p:c:Gf")) != -1) {
    if (opt == 'm' && tbuf_parse_kind(optarg, &kind) != 0) {
      fprintf(stderr, "test_nonblocking: unknown or unbuilt memory kind %s\n", optarg);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (opt == 'i') rounds = atoi(optarg);
    if (opt == 's') seed = strtoull(optarg, NULL, 0);
    if (opt == 'G') gpu_path = true;
    if (opt == 'f') freeing = 1;
    if (opt == 'b') burst = atoi(optarg);
    if (opt == 'p') starts = atoi(optarg);
    if (opt == 'c') ncomms = atoi(optarg);
  }
  if (ncomms < 1 || ncomms > MAXCOMMS || (ncomms > 1 && gpu_path)) {
    fprintf(stderr, "test_nonblocking: -c takes 1 to %d communicators, and not with -G\n", MAXCOMMS);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  beyond_direct = gpu_path && nranks > 8;
  counts_staged = beyond_direct || (gpu_path && (gpu_node_shm() || !one_node()));
  comms[0] = MPI_COMM_WORLD;
  for (int j = 0; ncomms > 1 && j < ncomms; ++j) MPI_Comm_dup(MPI_COMM_WORLD, &comms[j]);
  for (int j = 0; ncomms > 1 && j < ncomms; ++j) blocking_on(comms[j], 0xd0b00 + (uint64_t)j);
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD); /* one draw for all */
  if (gpu_path) staged_count_open();
  const unsigned long long staged0 = gpu_path ? staged_count() : 0;
  for (int round = 0; round < rounds; ++round) round_of(round, 0, 0);
  /* more calls than the path agreement's window ahead of a rank 300 ms late: the others queue the calls
   * past the window and start them from progress, in order */
  small_counts = 1;
  if (burst > 0) round_of(rounds, burst, 300000);
  if (ncomms > 1) free_comms();
  if (freeing) freed_comm();
  if (gpu_path && staged_count() != staged0) {
    char d[96];
    snprintf(d, sizeof(d), "%llu buffers staged", staged_count() - staged0);
    fail("the GPU path's nonblocking calls", d);
  }
  /* last: a persistent request binds staged buffers at init for the starts that may need them */
  if (starts > 0) persistent(starts);
  long all_failures = 0, all_checks = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_nonblocking: %d ranks, %s memory, %d rounds, %ld checks: %ld failed\n", nranks, tbuf_kind_name(kind),
           rounds, all_checks, all_failures);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
