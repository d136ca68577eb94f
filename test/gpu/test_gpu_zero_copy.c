/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The zero-copy calls' buffers (engine/ipc_cache.h): MPI_Alltoall, MPI_Allgather and MPI_Reduce_scatter_block (int
 * sums, exact), blocking, nonblocking and persistent in turn, on device memory, every block checked and the bytes
 * around the receive buffer left poisoned; a reduce-scatter's peers read its send buffer, so each rank poisons its
 * input as soon as its call returns, one rank comes late to each, and the results must still be right:
 *   - sub-allocations of one large cudaMalloc at random offsets, odd ones included, as a caching allocator
 *     hands them out (the allocation mapped once, the offsets told per call);
 *   - a receive buffer freed and allocated again between calls, its new contents poisoned afresh (a new
 *     allocation at the same address must get a new mapping: an old one would write into memory that is no
 *     longer the buffer);
 *   - more allocations in turn than coll_gpu_zero_copy_map_bytes holds, when the case sets it low (the
 *     mappings of earlier calls closed, those of the current call kept);
 * then MPI_Alltoallv and MPI_Ialltoallv of counts that disagree (an erroneous program: disagree() below).
 * Run with coll_gpu_zero_copy_min_bytes low enough for the blocks drawn (the cases set 1): whether the calls
 * went zero-copy the verbose lines tell (the cases count them).
 *
 * usage: test_gpu_zero_copy [-i CALLS] [-s SEED]
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test/common/tbuf.h"

/* after mpi.h, which it needs: MPIX_*_init */
#include <mpi-ext.h>

#define POISON 0xA5
#define GUARD 64

static int rank, nranks;
static long checks, failures;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Byte i of the block rank `from` sends to rank `to` in call `call`. */
static unsigned char byte_of(uint64_t seed, int call, int from, int to, size_t i) {
  return (unsigned char)(mix(seed ^ ((uint64_t)call << 40) ^ ((uint64_t)from << 24) ^ ((uint64_t)to << 16)) + i * 7);
}

static void fail(const char *what, const char *detail) {
  ++failures;
  if (failures <= 10) fprintf(stderr, "[rank %d] FAIL %s: %s\n", rank, what, detail);
}

/* An alltoall (or with `gather` an allgather) of `block` bytes a block, done when this returns: blocking (form 0),
 * nonblocking (1) or persistent (2). */
static int start(int gather, int form, const char *send, char *recv, size_t block) {
  const int k = (int)block;
  const MPI_Comm w = MPI_COMM_WORLD;
  if (form == 0)
    return gather ? MPI_Allgather(send, k, MPI_BYTE, recv, k, MPI_BYTE, w)
                  : MPI_Alltoall(send, k, MPI_BYTE, recv, k, MPI_BYTE, w);
  MPI_Request req;
  int err = form == 1 ? (gather ? MPI_Iallgather(send, k, MPI_BYTE, recv, k, MPI_BYTE, w, &req)
                                : MPI_Ialltoall(send, k, MPI_BYTE, recv, k, MPI_BYTE, w, &req))
            : gather  ? MPIX_Allgather_init(send, k, MPI_BYTE, recv, k, MPI_BYTE, w, MPI_INFO_NULL, &req)
                      : MPIX_Alltoall_init(send, k, MPI_BYTE, recv, k, MPI_BYTE, w, MPI_INFO_NULL, &req);
  if (err == MPI_SUCCESS && form == 2) err = MPI_Start(&req);
  if (err == MPI_SUCCESS) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  if (form == 2 && req != MPI_REQUEST_NULL) MPI_Request_free(&req);
  return err;
}

/* Whether the GUARD bytes on each side of `span` bytes from h + GUARD kept their poison (a check). */
static void guards_kept(const char *what, const unsigned char *h, size_t span) {
  ++checks;
  for (size_t i = 0; i < GUARD; ++i)
    if (h[i] != POISON || h[GUARD + span + i] != POISON) {
      fail(what, "a byte beside the receive buffer was written");
      return;
    }
}

/* Int i of rank `from`'s input to reduce-scatter call `call`: small enough that the sum of every rank's is exact. */
static int32_t int_of(uint64_t seed, int call, int from, size_t i) {
  return (int32_t)(mix(seed ^ ((uint64_t)call << 40) ^ ((uint64_t)from << 24) ^ (i << 1)) % 200001) - 100000;
}

/* An MPI_Reduce_scatter_block (MPI_INT32_T, MPI_SUM) of `count` ints a block, done when this returns: blocking (form
 * 0), nonblocking (1) or persistent (2). */
static int start_rs(int form, const int32_t *send, int32_t *recv, int count) {
  if (form == 0) return MPI_Reduce_scatter_block(send, recv, count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Request req;
  int err = form == 1 ? MPI_Ireduce_scatter_block(send, recv, count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD, &req)
                      : MPIX_Reduce_scatter_block_init(send, recv, count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD,
                                                       MPI_INFO_NULL, &req);
  if (err == MPI_SUCCESS && form == 2) err = MPI_Start(&req);
  if (err == MPI_SUCCESS) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  if (form == 2 && req != MPI_REQUEST_NULL) MPI_Request_free(&req);
  return err;
}

/* A reduce-scatter call of `room` / nranks bytes a block at most (whole ints, one at least) from send to recv, whose
 * receive block is checked against the sums taken here and whose other `room` - block bytes, and the guards, must
 * keep their poison. The rank `call` mod nranks comes late (1 ms); every rank poisons its send buffer as soon as its
 * call returns, before the others have checked theirs: a peer still reading it would sum poison. */
static void one_rs(const char *what, uint64_t seed, int call, char *send, char *recv, size_t room) {
  const size_t count = room / (size_t)nranks / 4 > 0 ? room / (size_t)nranks / 4 : 1, all = count * (size_t)nranks;
  int32_t *in = malloc(all * 4);
  for (size_t i = 0; i < all; ++i) in[i] = int_of(seed, call, rank, i);
  TBUF_CHECK(cudaMemcpy(send, in, all * 4, cudaMemcpyHostToDevice));
  const size_t span = room > count * 4 ? room : count * 4;
  unsigned char *h = malloc(span + 2 * GUARD);
  memset(h, POISON, span + 2 * GUARD);
  TBUF_CHECK(cudaMemcpy(recv - GUARD, h, span + 2 * GUARD, cudaMemcpyHostToDevice));
  if (rank == call % nranks) usleep(1000);
  ++checks;
  if (start_rs(call % 3, (const int32_t *)send, (int32_t *)recv, (int)count) != MPI_SUCCESS)
    fail(what, "returned an error");
  TBUF_CHECK(cudaMemset(send, POISON, all * 4));
  TBUF_CHECK(cudaMemcpy(h, recv - GUARD, span + 2 * GUARD, cudaMemcpyDeviceToHost));
  guards_kept(what, h, span);
  ++checks;
  for (size_t i = count * 4; i < span; ++i)
    if (h[GUARD + i] != POISON) {
      fail(what, "a byte of the receive buffer past the block was written");
      break;
    }
  ++checks;
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0, got;
    for (int q = 0; q < nranks; ++q) want += int_of(seed, call, q, (size_t)rank * count + i);
    memcpy(&got, h + GUARD + i * 4, 4);
    if (got != want) {
      char d[160];
      snprintf(d, sizeof(d), "reduce-scatter %d (form %d), %zu ints a block: int %zu is %d, not %d", call, call % 3,
               count, i, got, want);
      fail(what, d);
      break;
    }
  }
  free(h);
  free(in);
}

/* One call of `block` bytes a block from send to recv (device pointers; recv has GUARD bytes on each side inside its
 * allocation, send and recv `block` x nranks bytes each), checked: every block, and the guards still poisoned. The
 * calls take turns: MPI_Alltoall, MPI_Ialltoall, MPIX_Alltoall_init, then the same of MPI_Allgather (whose one block
 * goes to every rank: byte_of's `to` 0), then of MPI_Reduce_scatter_block (one_rs). */
static void one_call(const char *what, uint64_t seed, int call, char *send, char *recv, size_t block) {
  const size_t all = block * (size_t)nranks;
  if (call / 3 % 3 == 2) {
    one_rs(what, seed, call, send, recv, all);
    return;
  }
  const int gather = call / 3 % 3;
  unsigned char *h = malloc(all + 2 * GUARD);
  for (int to = 0; to < (gather ? 1 : nranks); ++to)
    for (size_t i = 0; i < block; ++i) h[(size_t)to * block + i] = byte_of(seed, call, rank, to, i);
  TBUF_CHECK(cudaMemcpy(send, h, gather ? block : all, cudaMemcpyHostToDevice));
  memset(h, POISON, all + 2 * GUARD);
  TBUF_CHECK(cudaMemcpy(recv - GUARD, h, all + 2 * GUARD, cudaMemcpyHostToDevice));
  ++checks;
  if (start(gather, call % 3, send, recv, block) != MPI_SUCCESS) fail(what, "returned an error");
  TBUF_CHECK(cudaMemcpy(h, recv - GUARD, all + 2 * GUARD, cudaMemcpyDeviceToHost));
  guards_kept(what, h, all);
  ++checks;
  for (int from = 0; from < nranks; ++from)
    for (size_t i = 0; i < block; ++i)
      if (h[GUARD + (size_t)from * block + i] != byte_of(seed, call, from, gather ? 0 : rank, i)) {
        char d[160];
        snprintf(d, sizeof(d), "%s %d (form %d), block %zu bytes: byte %zu of rank %d's block wrong",
                 gather ? "allgather" : "alltoall", call, call % 3, block, i, from);
        fail(what, d);
        from = nranks;
        break;
      }
  free(h);
}

/* Counts that disagree (an erroneous program): MPI_Alltoallv of `k` ints a block, but rank 0 sends rank 1 `k + d` ints
 * (d: -k/2 or k/2) while rank 1 takes k from it; blocking (nb 0) or nonblocking. No rank waits forever: rank 0's
 * call fails with MPI_ERR_TRUNCATE (the sender's, engine/engine.h), and so does rank 1's (the receiver's); rank 1
 * receives min(k + d, k) ints of rank 0's block and no byte past its block (the rest of it keeps its poison); every
 * other block is right, every other rank's call succeeds. A correct call follows, on every rank: the GPU path is
 * left as it was. */
static void disagree(uint64_t seed, int nb, int d) {
  enum { k = 4096 };
  const int n = nranks, sent01 = k + d;
  char what[96];
  snprintf(what, sizeof(what), "%s with counts that disagree (rank 0 sends rank 1 %d ints, it takes %d)",
           nb ? "MPI_Ialltoallv" : "MPI_Alltoallv", sent01, k);
  int *sc = malloc(sizeof(int) * 4 * (size_t)n), *sd = sc + n, *rc = sd + n, *rd = rc + n;
  for (int q = 0; q < n; ++q) {
    sc[q] = rank == 0 && q == 1 ? sent01 : k;
    sd[q] = q * 2 * k;
    rc[q] = k;
    rd[q] = q * 2 * k; /* a gap of k ints after each block */
  }
  const size_t bytes = (size_t)n * 2 * k * sizeof(int);
  int *h = malloc(bytes), *dsend, *drecv;
  for (size_t i = 0; i < (size_t)n * 2 * k; ++i) h[i] = (int)(mix(seed ^ ((uint64_t)rank << 32) ^ i) & 0x7fffffff);
  TBUF_CHECK(cudaMalloc((void **)&dsend, bytes));
  TBUF_CHECK(cudaMalloc((void **)&drecv, bytes));
  TBUF_CHECK(cudaMemcpy(dsend, h, bytes, cudaMemcpyHostToDevice));
  TBUF_CHECK(cudaMemset(drecv, POISON, bytes));
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* Open MPI reports a failed collective request there */
  MPI_Request req;
  int err = nb ? MPI_Ialltoallv(dsend, sc, sd, MPI_INT, drecv, rc, rd, MPI_INT, comm, &req)
               : MPI_Alltoallv(dsend, sc, sd, MPI_INT, drecv, rc, rd, MPI_INT, comm);
  if (nb && err == MPI_SUCCESS) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  int cls = MPI_SUCCESS;
  if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
  ++checks;
  if (rank == 0 && cls != MPI_ERR_TRUNCATE) fail(what, "rank 0, the sender, did not get MPI_ERR_TRUNCATE");
  if (rank == 1 && cls != MPI_ERR_TRUNCATE) fail(what, "rank 1, the receiver, did not get MPI_ERR_TRUNCATE");
  if (rank > 1 && err != MPI_SUCCESS) fail(what, "a rank the disagreement does not touch got an error");
  int *got = malloc(bytes);
  TBUF_CHECK(cudaMemcpy(got, drecv, bytes, cudaMemcpyDeviceToHost));
  ++checks;
  for (int q = 0; q < n; ++q) {
    const int arrives = rank == 1 && q == 0 ? (sent01 < k ? sent01 : k) : k;
    for (int i = 0; i < 2 * k; ++i) {
      int want;
      memset(&want, POISON, sizeof(want));
      /* rank q's send buffer holds, at q's displacement for this rank (rank * 2k), its draws */
      if (i < arrives) want = (int)(mix(seed ^ ((uint64_t)q << 32) ^ ((size_t)rank * 2 * k + (size_t)i)) & 0x7fffffff);
      if (got[q * 2 * k + i] != want) {
        char dd[128];
        snprintf(dd, sizeof(dd), "rank %d's block, int %d: %s", q, i,
                 i < arrives ? "wrong" : "written past what arrives");
        fail(what, dd);
        q = n;
        break;
      }
    }
  }
  /* a correct call after it */
  sc[1] = k;
  TBUF_CHECK(cudaMemset(drecv, POISON, bytes));
  ++checks;
  if (MPI_Alltoallv(dsend, sc, sd, MPI_INT, drecv, rc, rd, MPI_INT, comm) != MPI_SUCCESS)
    fail(what, "the correct call after it returned an error");
  TBUF_CHECK(cudaMemcpy(got, drecv, bytes, cudaMemcpyDeviceToHost));
  ++checks;
  for (int q = 0; q < n; ++q)
    if (got[q * 2 * k + k - 1] !=
        (int)(mix(seed ^ ((uint64_t)q << 32) ^ ((size_t)rank * 2 * k + k - 1)) & 0x7fffffff)) {
      fail(what, "the correct call after it gave a wrong block");
      break;
    }
  MPI_Comm_free(&comm);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  TBUF_CHECK(cudaFree(dsend));
  TBUF_CHECK(cudaFree(drecv));
  free(got);
  free(h);
  free(sc);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int calls = 24, opt;
  uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
  while ((opt = getopt(argc, argv, "i:s:")) != -1) {
    if (opt == 'i') calls = atoi(optarg);
    if (opt == 's') seed = strtoull(optarg, NULL, 0);
  }
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  tbuf_select_device(rank);
  const size_t most = (size_t)1 << 20; /* a block, at most */
  const size_t all = most * (size_t)nranks;

  /* sub-allocations of one allocation at random offsets (the same draws on every rank: the block sizes must
   * agree; the offsets differ by rank) */
  char *pool;
  const size_t pool_bytes = 2 * all + 8 * GUARD + 8192;
  TBUF_CHECK(cudaMalloc((void **)&pool, pool_bytes));
  for (int call = 0; call < calls; ++call) {
    const uint64_t r = mix(seed + (uint64_t)call);
    const size_t block = 1 + (size_t)(r % most);
    const uint64_t mine = mix(r + (uint64_t)rank + 1);
    const size_t send_at = GUARD + (size_t)(mine % 4096);
    const size_t recv_at = send_at + all + 2 * GUARD + (size_t)((mine >> 16) % 4096);
    one_call("sub-allocations", seed, call, pool + send_at, pool + recv_at, block);
  }
  TBUF_CHECK(cudaFree(pool));

  /* send and receive buffers freed and allocated again between calls (a reduce-scatter exports its send buffer) */
  int reused = 0;
  char *last = NULL, *last_send = NULL;
  for (int call = 0; call < calls; ++call) {
    char *send, *recv;
    TBUF_CHECK(cudaMalloc((void **)&send, all));
    TBUF_CHECK(cudaMalloc((void **)&recv, all + 2 * GUARD));
    reused += (recv == last) + (send == last_send);
    last = recv;
    last_send = send;
    one_call("a buffer allocated again", seed, 1000 + call, send, recv + GUARD, most / 2 + (size_t)call * 16);
    TBUF_CHECK(cudaFree(recv));
    TBUF_CHECK(cudaFree(send));
  }

  /* allocations in turn, more than a low coll_gpu_zero_copy_map_bytes maps at once: both buffers of a call */
  enum { TURNS = 6 };
  char *bufs[TURNS];
  for (int k = 0; k < TURNS; ++k) TBUF_CHECK(cudaMalloc((void **)&bufs[k], all + 2 * GUARD));
  for (int call = 0; call < calls; ++call)
    one_call("allocations in turn", seed, 2000 + call, bufs[(call + 3) % TURNS] + GUARD, bufs[call % TURNS] + GUARD,
             most);
  for (int k = 0; k < TURNS; ++k) TBUF_CHECK(cudaFree(bufs[k]));

  for (int nb = 0; nb < 2; ++nb) {
    disagree(seed, nb, 1024);
    disagree(seed, nb, -1024);
  }

  long sums[2] = {checks, failures}, totals[2];
  int reused_all = 0;
  MPI_Reduce(sums, totals, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&reused, &reused_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf(
        "test_gpu_zero_copy: %d ranks, seed %llu, %ld checks, %ld failed (%d buffers allocated again at the "
        "address of the last)\n",
        nranks, (unsigned long long)seed, totals[0], totals[1], reused_all);
  MPI_Finalize();
  return totals[1] == 0 || rank != 0 ? 0 : 1;
}
