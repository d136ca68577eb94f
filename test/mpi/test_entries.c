/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The entry points beyond the intra-communicator collectives, against references computed here on
 * poisoned outputs, with fresh random contents for every call:
 *   - persistent collectives (MPIX_*_init): each request started 3 times with new contents, some through
 *     MPI_Startall, then freed inactive; one freed without a start;
 *   - neighborhood collectives (each of the five), blocking, nonblocking and persistent, on a periodic
 *     Cartesian ring and on a distributed graph whose ranks have unequal in- and outdegrees;
 *   - intercommunicator collectives between groups of unequal sizes, with MPI_ROOT and MPI_PROC_NULL;
 *   - MPI_Reduce_local.
 *
 * With -S (where every buffer is staged: device memory, or coll_gpu_force_staging) each call must also
 * have staged exactly the buffers MPI makes significant on this rank, as coll/gpu's MPI_T counter
 * coll_gpu_staged_buffers tells: a buffer handed on unstaged works on host memory, so only this shows it
 * there.
 *
 * usage: test_entries [-m host|device|managed|pinned|pool|vmm|mixed] [-s seed] [-S]
 */
#include <mpi.h>
/* after mpi.h, which it needs: MPIX_*_init */
#include <mpi-ext.h>
#include <time.h>
#include <unistd.h>

#include "test/mpi/colls.h"

int rank, nranks;
uint64_t seed;
tbuf_kind_t kind;
long checks, failures;
bool verbose;

static uint64_t salt; /* a fresh one for every call */

/* A neighborhood test's form of a call, 0 to 2, in words. */
static const char *form_name(int form) { return form == 0 ? "blocking" : form == 1 ? "nonblocking" : "persistent"; }

/* Element i of the block that `from` sends to `to` (-1: to everyone) in the call of this salt. */
static int val(int from, int to, size_t i) {
  return (int)(rnd(salt, (uint64_t)from * 4099 + (uint64_t)(to + 1), i) % 2001) - 1000;
}

static void fill(buf_t *b, int from, int to, size_t first, size_t n) {
  for (size_t i = 0; i < n; ++i) ((int *)b->img)[first + i] = val(from, to, i);
}
static void expect_rc(const char *what, int rc) {
  ++checks;
  if (rc != MPI_SUCCESS) fail(what, "returned an error");
}

/* The staging counter (-S): mark() before a call, staged() after it with the buffers it must have staged. */
static bool counting;
static unsigned long long marked;
static void mark(void) {
  if (counting) marked = staged_count();
}
static void staged(const char *what, int want) {
  if (!counting) return;
  const unsigned long long got = staged_count() - marked;
  ++checks;
  if (got != (unsigned long long)want) {
    char d[96];
    snprintf(d, sizeof(d), "staged %llu buffer(s), expected %d", got, want);
    fail(what, d);
  }
}
/* A buffer of n ints, poisoned on the device and in its image. */
static buf_t ints(size_t n) {
  buf_t b = buf_new(n * sizeof(int));
  buf_push(&b);
  return b;
}
static void poison(buf_t *b) {
  memset(b->img, POISON, b->bytes);
  buf_push(b);
}
static void ref_poison(int *ref, size_t n) { memset(ref, POISON, n * sizeof(int)); }

/* ------------------------------------------------------------------ persistent */

#define N 37 /* elements per block: not a multiple of any vector width */

static void test_persistent(void) {
  const int n = nranks, root = nranks - 1;
  buf_t ars = ints(N), arr = ints(N), bc = ints(N), ags = ints(N), agr = ints((size_t)N * n), ats = ints((size_t)N * n),
        atr = ints((size_t)N * n), rds = ints(N), rdr = ints(N);
  int *ref = malloc(sizeof(int) * N * n);
  MPI_Request req[6];
  mark();
  expect_rc("MPIX_Allreduce_init",
            MPIX_Allreduce_init(ars.dev, arr.dev, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
  expect_rc("MPIX_Bcast_init", MPIX_Bcast_init(bc.dev, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
  expect_rc("MPIX_Allgather_init",
            MPIX_Allgather_init(ags.dev, N, MPI_INT, agr.dev, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]));
  expect_rc("MPIX_Alltoall_init",
            MPIX_Alltoall_init(ats.dev, N, MPI_INT, atr.dev, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req[3]));
  expect_rc("MPIX_Reduce_init",
            MPIX_Reduce_init(rds.dev, rdr.dev, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[4]));
  /* never started: freeing it must release what it holds */
  expect_rc("MPIX_Allreduce_init",
            MPIX_Allreduce_init(ars.dev, arr.dev, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &req[5]));
  staged("persistent inits (staged once, at init)", 2 + 1 + 2 + 2 + (rank == 0 ? 2 : 1) + 2);
  for (int start = 0; start < 3; ++start) {
    salt = rnd(1, start, 0);
    fill(&ars, rank, -1, 0, N);
    buf_push(&ars);
    poison(&arr);
    if (rank == root) {
      fill(&bc, root, -2, 0, N);
      buf_push(&bc);
    } else {
      poison(&bc);
    }
    fill(&ags, rank, -3, 0, N);
    buf_push(&ags);
    poison(&agr);
    for (int d = 0; d < n; ++d) fill(&ats, rank, d, (size_t)d * N, N);
    buf_push(&ats);
    poison(&atr);
    fill(&rds, rank, -4, 0, N);
    buf_push(&rds);
    poison(&rdr);
    /* allreduce and bcast one by one, the rest together */
    mark();
    expect_rc("MPI_Start allreduce", MPI_Start(&req[0]));
    expect_rc("MPI_Wait allreduce", MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    expect_rc("MPI_Start bcast", MPI_Start(&req[1]));
    expect_rc("MPI_Wait bcast", MPI_Wait(&req[1], MPI_STATUS_IGNORE));
    expect_rc("MPI_Startall", MPI_Startall(3, &req[2]));
    expect_rc("MPI_Waitall", MPI_Waitall(3, &req[2], MPI_STATUSES_IGNORE));
    staged("persistent starts (bound at init)", 0);
    char what[64];
    for (int i = 0; i < N; ++i) {
      ref[i] = 0;
      for (int r = 0; r < n; ++r) ref[i] += val(r, -1, i);
    }
    snprintf(what, sizeof(what), "persistent allreduce, start %d", start);
    buf_check(what, &arr, ref);
    for (int i = 0; i < N; ++i) ref[i] = val(root, -2, i);
    snprintf(what, sizeof(what), "persistent bcast, start %d", start);
    buf_check(what, &bc, ref);
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < N; ++i) ref[r * N + i] = val(r, -3, i);
    snprintf(what, sizeof(what), "persistent allgather, start %d", start);
    buf_check(what, &agr, ref);
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < N; ++i) ref[r * N + i] = val(r, rank, i);
    snprintf(what, sizeof(what), "persistent alltoall, start %d", start);
    buf_check(what, &atr, ref);
    if (rank == 0) {
      for (int i = 0; i < N; ++i) {
        ref[i] = 0;
        for (int r = 0; r < n; ++r) ref[i] += val(r, -4, i);
      }
    } else {
      ref_poison(ref, N); /* a non-root's receive buffer is not touched */
    }
    snprintf(what, sizeof(what), "persistent reduce, start %d", start);
    buf_check(what, &rdr, ref);
  }
  for (int i = 0; i < 6; ++i) expect_rc("MPI_Request_free", MPI_Request_free(&req[i]));
  buf_t *all[] = {&ars, &arr, &bc, &ags, &agr, &ats, &atr, &rds, &rdr};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) buf_free(all[i]);
  free(ref);
}

/* ------------------------------------------------------------------ neighborhood */

/* One neighborhood: the ranks a rank receives from and sends to, in the communicator's order. */
typedef struct {
  const char *name;
  MPI_Comm comm;
  int in, out;
  int src[64], dst[64];
} hood_t;

/* The block that `from` sends to its k-th destination d carries val(from, d * 64 + k, .). */
static int block_tag(const hood_t *h, int k) { return h->dst[k] * 64 + k; }
/* Which of a source's destination slots reaches me (no rank appears twice in these neighborhoods). */
static int slot_from(const hood_t *source) {
  for (int k = 0; k < source->out; ++k)
    if (source->dst[k] == rank) return k;
  return -1;
}

/* The neighborhood of rank r in the test's distributed graph: r -> r+1, and 0 -> everyone. */
static void graph_of(int r, hood_t *h) {
  h->in = h->out = 0;
  const int n = nranks;
  if (r == 0) {
    for (int d = 1; d < n; ++d) h->dst[h->out++] = d;
  } else {
    h->dst[h->out++] = (r + 1) % n;
  }
  if (r == 1) {
    h->src[h->in++] = 0;
  } else {
    h->src[h->in++] = (r + n - 1) % n;
    if (r != 0) h->src[h->in++] = 0;
  }
}

/* The Cartesian ring: MPI orders a 1-D periodic neighborhood as (r - 1, r + 1) both ways. */
static void ring_of(int r, hood_t *h) {
  const int n = nranks;
  h->in = h->out = 2;
  h->src[0] = h->dst[0] = (r + n - 1) % n;
  h->src[1] = h->dst[1] = (r + 1) % n;
}

static void test_hood(hood_t *h, void (*of)(int, hood_t *)) {
  char what[128];
  hood_t peer;
  const size_t in = (size_t)h->in, out = (size_t)h->out;
  int *ref = malloc(sizeof(int) * N * (in + 1) * 2);
  /* allgather: my block to everyone I send to; from each source its block */
  for (int form = 0; form < 3; ++form) {
    salt = rnd(2, form, (uint64_t)h->name[0]);
    buf_t s = ints(N), r = ints(N * in);
    fill(&s, rank, -1, 0, N);
    buf_push(&s);
    MPI_Request q;
    mark();
    if (form == 0)
      expect_rc("MPI_Neighbor_allgather", MPI_Neighbor_allgather(s.dev, N, MPI_INT, r.dev, N, MPI_INT, h->comm));
    if (form == 1) {
      expect_rc("MPI_Ineighbor_allgather", MPI_Ineighbor_allgather(s.dev, N, MPI_INT, r.dev, N, MPI_INT, h->comm, &q));
      expect_rc("MPI_Wait", MPI_Wait(&q, MPI_STATUS_IGNORE));
    }
    if (form == 2) {
      expect_rc("MPIX_Neighbor_allgather_init",
                MPIX_Neighbor_allgather_init(s.dev, N, MPI_INT, r.dev, N, MPI_INT, h->comm, MPI_INFO_NULL, &q));
      expect_rc("MPI_Start", MPI_Start(&q));
      expect_rc("MPI_Wait", MPI_Wait(&q, MPI_STATUS_IGNORE));
      expect_rc("MPI_Request_free", MPI_Request_free(&q));
    }
    staged("neighbor_allgather", 2);
    for (size_t i = 0; i < in; ++i)
      for (int e = 0; e < N; ++e) ref[i * N + e] = val(h->src[i], -1, e);
    snprintf(what, sizeof(what), "%s neighbor_allgather (%s)", h->name, form_name(form));
    buf_check(what, &r, ref);
    buf_free(&s);
    buf_free(&r);
  }
  /* alltoall: block k to destination k; from source i the block it meant for me */
  for (int form = 0; form < 3; ++form) {
    salt = rnd(3, form, (uint64_t)h->name[0]);
    buf_t s = ints(N * out), r = ints(N * in);
    for (size_t k = 0; k < out; ++k) fill(&s, rank, block_tag(h, (int)k), k * N, N);
    buf_push(&s);
    MPI_Request q;
    mark();
    if (form == 0)
      expect_rc("MPI_Neighbor_alltoall", MPI_Neighbor_alltoall(s.dev, N, MPI_INT, r.dev, N, MPI_INT, h->comm));
    if (form == 1) {
      expect_rc("MPI_Ineighbor_alltoall", MPI_Ineighbor_alltoall(s.dev, N, MPI_INT, r.dev, N, MPI_INT, h->comm, &q));
      expect_rc("MPI_Wait", MPI_Wait(&q, MPI_STATUS_IGNORE));
    }
    if (form == 2) {
      expect_rc("MPIX_Neighbor_alltoall_init",
                MPIX_Neighbor_alltoall_init(s.dev, N, MPI_INT, r.dev, N, MPI_INT, h->comm, MPI_INFO_NULL, &q));
      for (int start = 0; start < 3; ++start) {
        if (start > 0) { /* new contents for each start */
          salt = rnd(3, form, 100 + start);
          for (size_t k = 0; k < out; ++k) fill(&s, rank, block_tag(h, (int)k), k * N, N);
          buf_push(&s);
        }
        expect_rc("MPI_Start", MPI_Start(&q));
        expect_rc("MPI_Wait", MPI_Wait(&q, MPI_STATUS_IGNORE));
      }
      expect_rc("MPI_Request_free", MPI_Request_free(&q));
    }
    staged("neighbor_alltoall", 2);
    for (size_t i = 0; i < in; ++i) {
      of(h->src[i], &peer);
      const int k = slot_from(&peer);
      for (int e = 0; e < N; ++e) ref[i * N + e] = val(h->src[i], block_tag(&peer, k), e);
    }
    snprintf(what, sizeof(what), "%s neighbor_alltoall (%s)", h->name, form_name(form));
    buf_check(what, &r, ref);
    buf_free(&s);
    buf_free(&r);
  }
  /* the v and w forms: block k of (k % 3) + 1 elements, blocks one element apart, the receive gaps
   * keeping their poison */
  {
    salt = rnd(4, (uint64_t)h->name[0], 0);
    int scount[64], sdispl[64], rcount[64], rdispl[64];
    MPI_Aint sbyte[64], rbyte[64];
    MPI_Datatype types[64];
    size_t at = 0;
    for (size_t k = 0; k < out; ++k, at += 1) {
      scount[k] = (int)(k % 3) + 1;
      sdispl[k] = (int)at;
      sbyte[k] = (MPI_Aint)at * (MPI_Aint)sizeof(int);
      at += (size_t)scount[k];
    }
    const size_t stotal = at;
    at = 0;
    for (size_t i = 0; i < in; ++i, at += 1) {
      of(h->src[i], &peer);
      rcount[i] = slot_from(&peer) % 3 + 1;
      rdispl[i] = (int)at;
      rbyte[i] = (MPI_Aint)at * (MPI_Aint)sizeof(int);
      at += (size_t)rcount[i];
    }
    for (int k = 0; k < 64; ++k) types[k] = MPI_INT;
    const size_t rtotal = at;
    for (int form = 0; form < 6; ++form) { /* v then w, each blocking, nonblocking and persistent */
      const int w = form / 3, how = form % 3;
      salt = rnd(4, (uint64_t)h->name[0], (uint64_t)form + 1);
      buf_t s = ints(stotal), r = ints(rtotal);
      for (size_t k = 0; k < out; ++k) fill(&s, rank, block_tag(h, (int)k), (size_t)sdispl[k], (size_t)scount[k]);
      buf_push(&s);
      MPI_Request q;
      mark();
      if (w == 0 && how == 0)
        expect_rc("MPI_Neighbor_alltoallv",
                  MPI_Neighbor_alltoallv(s.dev, scount, sdispl, MPI_INT, r.dev, rcount, rdispl, MPI_INT, h->comm));
      if (w == 0 && how == 1)
        expect_rc("MPI_Ineighbor_alltoallv",
                  MPI_Ineighbor_alltoallv(s.dev, scount, sdispl, MPI_INT, r.dev, rcount, rdispl, MPI_INT, h->comm, &q));
      if (w == 0 && how == 2)
        expect_rc("MPIX_Neighbor_alltoallv_init",
                  MPIX_Neighbor_alltoallv_init(s.dev, scount, sdispl, MPI_INT, r.dev, rcount, rdispl, MPI_INT, h->comm,
                                               MPI_INFO_NULL, &q));
      if (w == 1 && how == 0)
        expect_rc("MPI_Neighbor_alltoallw",
                  MPI_Neighbor_alltoallw(s.dev, scount, sbyte, types, r.dev, rcount, rbyte, types, h->comm));
      if (w == 1 && how == 1)
        expect_rc("MPI_Ineighbor_alltoallw",
                  MPI_Ineighbor_alltoallw(s.dev, scount, sbyte, types, r.dev, rcount, rbyte, types, h->comm, &q));
      if (w == 1 && how == 2)
        expect_rc("MPIX_Neighbor_alltoallw_init",
                  MPIX_Neighbor_alltoallw_init(s.dev, scount, sbyte, types, r.dev, rcount, rbyte, types, h->comm,
                                               MPI_INFO_NULL, &q));
      if (how == 2) expect_rc("MPI_Start", MPI_Start(&q));
      if (how > 0) expect_rc("MPI_Wait", MPI_Wait(&q, MPI_STATUS_IGNORE));
      if (how == 2) expect_rc("MPI_Request_free", MPI_Request_free(&q));
      staged(w == 0 ? "neighbor_alltoallv" : "neighbor_alltoallw", 2);
      ref_poison(ref, rtotal);
      for (size_t i = 0; i < in; ++i) {
        of(h->src[i], &peer);
        const int k = slot_from(&peer);
        for (int e = 0; e < rcount[i]; ++e) ref[rdispl[i] + e] = val(h->src[i], block_tag(&peer, k), e);
      }
      snprintf(what, sizeof(what), "%s neighbor_alltoall%s (%s)", h->name, w == 0 ? "v" : "w", form_name(how));
      buf_check(what, &r, ref);
      buf_free(&s);
      buf_free(&r);
    }
    /* allgatherv: my block of N to everyone I send to; from source i its block, at rdispl[i], rcount[i] = N */
    for (size_t i = 0; i < in; ++i) {
      rcount[i] = N;
      rdispl[i] = (int)(i * (N + 1));
    }
    const size_t gtotal = in * (N + 1);
    for (int how = 0; how < 3; ++how) {
      salt = rnd(5, how, (uint64_t)h->name[0]);
      buf_t s = ints(N), r = ints(gtotal);
      fill(&s, rank, -1, 0, N);
      buf_push(&s);
      MPI_Request q;
      mark();
      if (how == 0)
        expect_rc("MPI_Neighbor_allgatherv",
                  MPI_Neighbor_allgatherv(s.dev, N, MPI_INT, r.dev, rcount, rdispl, MPI_INT, h->comm));
      if (how == 1)
        expect_rc("MPI_Ineighbor_allgatherv",
                  MPI_Ineighbor_allgatherv(s.dev, N, MPI_INT, r.dev, rcount, rdispl, MPI_INT, h->comm, &q));
      if (how == 2) {
        expect_rc("MPIX_Neighbor_allgatherv_init",
                  MPIX_Neighbor_allgatherv_init(s.dev, N, MPI_INT, r.dev, rcount, rdispl, MPI_INT, h->comm,
                                                MPI_INFO_NULL, &q));
        expect_rc("MPI_Start", MPI_Start(&q));
      }
      if (how > 0) expect_rc("MPI_Wait", MPI_Wait(&q, MPI_STATUS_IGNORE));
      if (how == 2) expect_rc("MPI_Request_free", MPI_Request_free(&q));
      staged("neighbor_allgatherv", 2);
      ref_poison(ref, gtotal);
      for (size_t i = 0; i < in; ++i)
        for (int e = 0; e < N; ++e) ref[rdispl[i] + e] = val(h->src[i], -1, e);
      snprintf(what, sizeof(what), "%s neighbor_allgatherv (%s)", h->name, form_name(how));
      buf_check(what, &r, ref);
      buf_free(&s);
      buf_free(&r);
    }
  }
  free(ref);
}

static void test_neighborhoods(void) {
  /* a ring of 2 names the same rank as both neighbors, which MPI leaves ambiguous for alltoall */
  if (nranks >= 3) {
    hood_t ring = {"Cartesian ring", MPI_COMM_NULL, 0, 0, {0}, {0}};
    int dims[1] = {nranks}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring.comm);
    ring_of(rank, &ring);
    test_hood(&ring, ring_of);
    MPI_Comm_free(&ring.comm);
  }

  hood_t graph = {"distributed graph", MPI_COMM_NULL, 0, 0, {0}, {0}};
  graph_of(rank, &graph);
  /* GCC takes MPI_UNWEIGHTED, a marker address, for an array it would read */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, graph.in, graph.src, MPI_UNWEIGHTED, graph.out, graph.dst,
                                 MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph.comm);
#pragma GCC diagnostic pop
  int in, out, weighted;
  MPI_Dist_graph_neighbors_count(graph.comm, &in, &out, &weighted);
  ++checks;
  if (in != graph.in || out != graph.out) fail("distributed graph", "unexpected degrees");
  test_hood(&graph, graph_of);
  MPI_Comm_free(&graph.comm);
}

/* ------------------------------------------------------------------ intercommunicators */

/* Groups A = ranks [0, a) and B = [a, n) of unequal sizes where n > 2; the root is A's local rank 1
 * (or 0 when A has one rank). */
static void test_intercomm(void) {
  const int n = nranks, a = n > 2 ? n - 1 : 1;
  const int in_a = rank < a, lsize = in_a ? a : n - a, rsize = in_a ? n - a : a;
  const int lrank = in_a ? rank : rank - a, aroot = a > 1 ? 1 : 0;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, in_a, rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? a : 0, 42, &inter);
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  /* world rank of the remote group's local rank r */
  const int rbase = in_a ? a : 0;
  const int root = in_a ? (lrank == aroot ? MPI_ROOT : MPI_PROC_NULL) : aroot;
  int *ref = malloc(sizeof(int) * N * n);
  char what[96];
  (void)lsize;

  /* allreduce: each group gets the sum over the other group */
  salt = rnd(5, 0, 0);
  buf_t s = ints(N), r = ints(N);
  fill(&s, rank, -1, 0, N);
  buf_push(&s);
  mark();
  expect_rc("intercomm MPI_Allreduce", MPI_Allreduce(s.dev, r.dev, N, MPI_INT, MPI_SUM, inter));
  staged("intercomm allreduce", 2);
  for (int e = 0; e < N; ++e) {
    ref[e] = 0;
    for (int q = 0; q < rsize; ++q) ref[e] += val(rbase + q, -1, e);
  }
  buf_check("intercomm allreduce", &r, ref);

  /* bcast from A's root to B; the rest of A untouched */
  salt = rnd(5, 1, 0);
  poison(&r);
  if (root == MPI_ROOT) {
    fill(&r, rank, -2, 0, N);
    buf_push(&r);
  }
  const int rooted = root == MPI_PROC_NULL ? 0 : 1; /* the buffers of a rooted call on this rank */
  mark();
  expect_rc("intercomm MPI_Bcast", MPI_Bcast(r.dev, N, MPI_INT, root, inter));
  staged("intercomm bcast", rooted);
  if (root == MPI_PROC_NULL)
    ref_poison(ref, N);
  else
    for (int e = 0; e < N; ++e) ref[e] = val(aroot, -2, e);
  buf_check("intercomm bcast", &r, ref);

  /* gather from B to A's root */
  salt = rnd(5, 2, 0);
  buf_t g = ints((size_t)N * n);
  fill(&s, rank, -3, 0, N);
  buf_push(&s);
  mark();
  expect_rc("intercomm MPI_Gather", MPI_Gather(s.dev, N, MPI_INT, g.dev, N, MPI_INT, root, inter));
  staged("intercomm gather", rooted);
  ref_poison(ref, (size_t)N * n);
  if (root == MPI_ROOT)
    for (int q = 0; q < rsize; ++q)
      for (int e = 0; e < N; ++e) ref[q * N + e] = val(rbase + q, -3, e);
  snprintf(what, sizeof(what), "intercomm gather (%s)",
           root == MPI_ROOT        ? "root"
           : root == MPI_PROC_NULL ? "proc null"
                                   : "leaf");
  buf_check(what, &g, ref);

  /* scatter from A's root to B */
  salt = rnd(5, 3, 0);
  poison(&r);
  if (root == MPI_ROOT) {
    for (int q = 0; q < rsize; ++q) fill(&g, rank, q, (size_t)q * N, N);
    buf_push(&g);
  }
  mark();
  expect_rc("intercomm MPI_Scatter", MPI_Scatter(g.dev, N, MPI_INT, r.dev, N, MPI_INT, root, inter));
  staged("intercomm scatter", rooted);
  if (in_a)
    ref_poison(ref, N);
  else
    for (int e = 0; e < N; ++e) ref[e] = val(aroot, lrank, e);
  buf_check("intercomm scatter", &r, ref);

  /* reduce from B to A's root */
  salt = rnd(5, 4, 0);
  poison(&r);
  fill(&s, rank, -5, 0, N);
  buf_push(&s);
  mark();
  expect_rc("intercomm MPI_Reduce", MPI_Reduce(s.dev, r.dev, N, MPI_INT, MPI_SUM, root, inter));
  staged("intercomm reduce", rooted);
  if (root == MPI_ROOT)
    for (int e = 0; e < N; ++e) {
      ref[e] = 0;
      for (int q = 0; q < rsize; ++q) ref[e] += val(rbase + q, -5, e);
    }
  else
    ref_poison(ref, N);
  buf_check("intercomm reduce", &r, ref);

  /* allgather: every rank gets the remote group's blocks */
  salt = rnd(5, 5, 0);
  poison(&g);
  fill(&s, rank, -6, 0, N);
  buf_push(&s);
  mark();
  expect_rc("intercomm MPI_Allgather", MPI_Allgather(s.dev, N, MPI_INT, g.dev, N, MPI_INT, inter));
  staged("intercomm allgather", 2);
  ref_poison(ref, (size_t)N * n);
  for (int q = 0; q < rsize; ++q)
    for (int e = 0; e < N; ++e) ref[q * N + e] = val(rbase + q, -6, e);
  buf_check("intercomm allgather", &g, ref);

  /* alltoall: block q to remote rank q */
  salt = rnd(5, 6, 0);
  buf_t t = ints((size_t)N * n);
  poison(&g);
  for (int q = 0; q < rsize; ++q) fill(&t, rank, q, (size_t)q * N, N);
  buf_push(&t);
  mark();
  expect_rc("intercomm MPI_Alltoall", MPI_Alltoall(t.dev, N, MPI_INT, g.dev, N, MPI_INT, inter));
  staged("intercomm alltoall", 2);
  ref_poison(ref, (size_t)N * n);
  for (int q = 0; q < rsize; ++q)
    for (int e = 0; e < N; ++e) ref[q * N + e] = val(rbase + q, lrank, e);
  buf_check("intercomm alltoall", &g, ref);

  buf_free(&s);
  buf_free(&r);
  buf_free(&g);
  buf_free(&t);
  free(ref);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

/* ------------------------------------------------------------------ MPI_Reduce_local */

static void test_reduce_local(void) {
  salt = rnd(6, rank, 0);
  buf_t in = ints(N), io = ints(N);
  fill(&in, rank, 1, 0, N);
  fill(&io, rank, 2, 0, N);
  buf_push(&in);
  buf_push(&io);
  int ref[N];
  for (int e = 0; e < N; ++e) ref[e] = val(rank, 1, e) > val(rank, 2, e) ? val(rank, 1, e) : val(rank, 2, e);
  mark();
  expect_rc("MPI_Reduce_local", MPI_Reduce_local(in.dev, io.dev, N, MPI_INT, MPI_MAX));
  staged("reduce_local", 2);
  buf_check("reduce_local MAX", &io, ref);
  for (int e = 0; e < N; ++e) ref[e] += val(rank, 1, e);
  expect_rc("MPI_Reduce_local", MPI_Reduce_local(in.dev, io.dev, N, MPI_INT, MPI_SUM));
  buf_check("reduce_local SUM", &io, ref);
  buf_free(&in);
  buf_free(&io);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  kind = TBUF_HOST;
  unsigned long long s = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
  if (getenv("TEST_SEED")) s = strtoull(getenv("TEST_SEED"), NULL, 0);
  int opt;
  bool count_staging = false;
  while ((opt = getopt(argc, argv, "m:s:S")) != -1) {
    if (opt == 'S') count_staging = true;
    if (opt == 'm' && tbuf_parse_kind(optarg, &kind) != 0) {
      fprintf(stderr, "unknown or unavailable memory kind '%s'\n", optarg);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (opt == 's') s = strtoull(optarg, NULL, 0);
  }
  MPI_Bcast(&s, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  seed = s;
  tbuf_select_device(rank);
  if (count_staging) {
    staged_count_open();
    counting = true;
  }
  alarm(300); /* a hang becomes a failure */
  test_reduce_local();
  test_persistent();
  test_neighborhoods();
  if (nranks >= 2) test_intercomm();
  long totals[2] = {checks, failures}, all[2];
  MPI_Allreduce(totals, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_entries: %d ranks, %s memory, seed %llu: %ld checks, %ld failed\n", nranks, tbuf_kind_name(kind), s,
           all[0], all[1]);
  MPI_Finalize();
  return all[1] == 0 ? 0 : 1;
}
