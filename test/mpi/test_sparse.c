/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A sparse datatype: 16 bytes of ints over an extent of -e MiB (default 1024): two blocks of two ints, at
 * the start and at the end of the extent. MPI_Allreduce, MPI_Iallreduce and MPI_Bcast on it must give the
 * right ints and leave the bytes around them alone, and (staged or not) cost memory for the data, not for
 * the extent: the process may grow by at most 64 MiB of resident memory (staging the whole extent takes
 * it all, and pinning it takes seconds). The buffers are reserved address space (untouched pages cost
 * nothing); -m KIND puts them in device memory instead (the GPU build).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "test/common/tbuf.h"

static int rank, nranks, failures, checks;
static size_t extent;
static tbuf_kind_t kind = TBUF_HOST;

static void expect(int ok, const char *what) {
  ++checks;
  if (!ok) {
    ++failures;
    fprintf(stderr, "test_sparse: rank %d: FAIL %s\n", rank, what);
  }
}

/* Resident memory of this process, from /proc (kB). */
static long resident_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f != NULL) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Where the type's ints are, as offsets: the first two and the last two of the extent. */
static size_t at(int i) { return i < 2 ? (size_t)i * sizeof(int) : extent - (size_t)(4 - i) * sizeof(int); }
/* The guard words just outside each block, which no call may touch. */
static size_t guard(int i) { return i == 0 ? 2 * sizeof(int) : extent - 3 * sizeof(int); }

/* MPI_SUM over the sparse type (Open MPI takes no predefined op on a derived datatype): each element is
 * 4 ints at the type's offsets. */
static void sparse_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  for (int e = 0; e < *len; ++e)
    for (int i = 0; i < 4; ++i) {
      const size_t off = (size_t)e * extent + at(i);
      *(int *)((char *)inout + off) += *(const int *)((const char *)in + off);
    }
}

static char *reserve(void) {
  if (kind != TBUF_HOST) return tbuf_alloc(kind, extent);
  void *p = mmap(NULL, extent, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) MPI_Abort(MPI_COMM_WORLD, 2);
  return p;
}

static void release(char *p) {
  if (kind != TBUF_HOST)
    tbuf_free(kind, p);
  else
    munmap(p, extent);
}

static void put_int(char *buf, size_t off, int v) { tbuf_put(kind, buf + off, &v, sizeof(v)); }
static int get_int(const char *buf, size_t off) {
  int v;
  tbuf_get(kind, &v, buf + off, sizeof(v));
  return v;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int opt;
  size_t mib = 1024;
  while ((opt = getopt(argc, argv, "e:m:")) != -1) {
    if (opt == 'e') mib = (size_t)atol(optarg);
    if (opt == 'm' && tbuf_parse_kind(optarg, &kind) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  }
  tbuf_select_device(rank);
  alarm(120);
  extent = mib << 20;
  const int blocklens[2] = {2, 2};
  const MPI_Aint displs[2] = {0, (MPI_Aint)(extent - 2 * sizeof(int))};
  MPI_Datatype sparse;
  MPI_Type_create_hindexed(2, blocklens, displs, MPI_INT, &sparse);
  MPI_Type_commit(&sparse);
  MPI_Op sum;
  MPI_Op_create(sparse_sum, 1, &sum);
  uint64_t seed = (uint64_t)time(NULL);
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  char *sbuf = reserve(), *rbuf = reserve();
  const long before = resident_kb();
  double took[3];
  for (int call = 0; call < 3; ++call) {
    int mine[4], want[4];
    for (int i = 0; i < 4; ++i) {
      mine[i] = (int)((seed + (uint64_t)(rank * 7 + i * 131 + call)) % 1000);
      want[i] = 0;
      for (int r = 0; r < nranks; ++r) want[i] += (int)((seed + (uint64_t)(r * 7 + i * 131 + call)) % 1000);
      if (call == 2) want[i] = (int)((seed + (uint64_t)(0 * 7 + i * 131 + call)) % 1000); /* rank 0's */
      put_int(call == 2 ? rbuf : sbuf, at(i), mine[i]);
      if (call != 2) put_int(rbuf, at(i), -1); /* poison */
    }
    for (int g = 0; g < 2; ++g) put_int(rbuf, guard(g), 0x5A5A5A5A);
    const double t0 = MPI_Wtime();
    int rc;
    if (call == 0) {
      rc = MPI_Allreduce(sbuf, rbuf, 1, sparse, sum, MPI_COMM_WORLD);
    } else if (call == 1) {
      MPI_Request req;
      rc = MPI_Iallreduce(sbuf, rbuf, 1, sparse, sum, MPI_COMM_WORLD, &req);
      if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      rc = MPI_Bcast(rbuf, 1, sparse, 0, MPI_COMM_WORLD);
    }
    took[call] = MPI_Wtime() - t0;
    static const char *names[3] = {"MPI_Allreduce", "MPI_Iallreduce", "MPI_Bcast"};
    char what[128];
    snprintf(what, sizeof(what), "%s returned %d", names[call], rc);
    expect(rc == MPI_SUCCESS, what);
    int wrong = 0;
    for (int i = 0; i < 4; ++i) wrong += get_int(rbuf, at(i)) != want[i];
    snprintf(what, sizeof(what), "%s: %d of 4 ints wrong", names[call], wrong);
    expect(wrong == 0, what);
    int touched = 0;
    for (int g = 0; g < 2; ++g) touched += get_int(rbuf, guard(g)) != 0x5A5A5A5A;
    snprintf(what, sizeof(what), "%s wrote %d word(s) beside its blocks", names[call], touched);
    expect(touched == 0, what);
  }
  const long grew = resident_kb() - before;
  char what[160];
  snprintf(what, sizeof(what), "resident memory grew by %ld MiB over 3 calls on a %zu MiB extent (at most 64)",
           grew / 1024, mib);
  expect(grew < 64 * 1024, what);
  if (rank == 0)
    printf("test_sparse: %s; allreduce %.3f s, iallreduce %.3f s, bcast %.3f s\n", what, took[0], took[1], took[2]);
  release(sbuf);
  release(rbuf);
  MPI_Type_free(&sparse);
  MPI_Op_free(&sum);
  int all = 0;
  MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_sparse: %d ranks, %s memory, %d checks, %d failed\n", nranks, tbuf_kind_name(kind), checks, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
