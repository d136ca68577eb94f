/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Collective latency and bandwidth, OSU style, on host or CUDA device buffers: MPI_Allreduce, and with -C
 * MPI_Bcast (root 0), MPI_Allgather, MPI_Alltoall, MPI_Reduce (root 0), MPI_Reduce_scatter_block or
 * MPI_Reduce_scatter.
 *
 * usage: coll_gpu_allreduce_bench [-C allreduce|bcast|allgather|alltoall|reduce|reduce_scatter|allgatherv|
 *                                 alltoallv|reduce_scatterv] [-d host|cuda] [-m MIN] [-M MAX] [-i ITERS] [-c] [-N] [-E]
 *                                 [-B | -I | -P] [-O ROUNDS] [-D COMMS]
 *        coll_gpu_allreduce_bench --help | --version   (without MPI)
 *   -C  the collective (default allreduce; the reductions take MPI_FLOAT MPI_SUM, the moves MPI_BYTE).
 *       Sizes are per rank for allgather, alltoall, reduce_scatter, allgatherv, alltoallv and reduce_scatterv
 *       (each rank's block), the whole buffer otherwise. allgatherv and alltoallv lay their blocks out as OSU's
 *       osu_allgatherv and osu_alltoallv do: each of one count, one after another in rank order.
 *       reduce_scatterv is MPI_Reduce_scatter whose counts differ: the odd ranks' blocks one element short of
 *       the size's (as osu_reduce_scatter gives some ranks one element more where the message does not
 *       divide); NCCL's ncclReduceScatter beside it takes blocks of the size
 *   -d  buffer memory (default cuda when built with CUDA, else host)
 *   -m, -M  smallest and largest message in bytes (default 8 and 64 MiB), doubling
 *   -i  iterations per size (default 1000 up to 1 MiB, 100 above); a tenth of them warm up first, and before
 *       the first size half a second of its calls (ours, then NCCL's) brings the GPU and CPUs up to speed
 *   -c  validate every size (the reductions: float sums of small integers, exact; the moves: a byte
 *       pattern per sender and receiver), with the calls of the mode (-I, -P: each started on new contents)
 *   -N  no NCCL beside it (NCCL takes one rank per GPU)
 *   -B  each call timed alone, a barrier after it (not timed), as OSU's osu_bcast and osu_reduce time theirs: a
 *       call's own latency on each rank, not calls back to back (where a bcast's root and a reduce's senders run
 *       ahead into the next call); the latency printed is then the mean over the ranks (OSU's average), NCCL's
 *       alike (each call and its stream synchronize between barriers)
 *   -E  first one MPI_Allreduce of 1 MiB on the buffers' memory, before anything is timed, as an application's
 *       first large call: across hosts, at the defaults, it makes the communicator's GPU resources (its own),
 *       whose blocking calls below coll_gpu_net_min_bytes may then take the GPU path
 *       (coll_gpu_net_blocking_min_bytes), where without it every call below stays staged
 *   -I  nonblocking (MPI_Iallreduce, ...) as OSU's osu_i* benchmarks measure it: per size the blocking
 *       call's latency, the pure communication (post, then MPI_Wait), and, with computation as long as
 *       that in between (a busy loop on the CPU, no MPI call in it), the overall time, the computation's
 *       and the overlap, 100 - 100 (overall - compute) / pure, at least 0 (overall, compute and pure as
 *       the mean over the ranks, as OSU prints them); the last column is pure over blocking (both the
 *       slowest rank's mean). No NCCL
 *   -P  persistent (MPIX_Allreduce_init, ...: one request per size, then MPI_Start and MPI_Wait per call):
 *       the blocking call's latency, the persistent one's and their ratio. No NCCL
 *   -O  overhead of coll/gpu instead: MIN-byte allreduces on a communicator created with coll/gpu and
 *       one created without it (coll_gpu_enable set false through MPI_T in between), timed in
 *       alternation for ROUNDS rounds of ITERS calls in this one process, so that drift and
 *       placement hit both alike; prints both medians and their ratio
 *   -D  device memory per communicator instead (CUDA builds): duplicates MPI_COMM_WORLD COMMS times, runs one
 *       validated MIN-byte MPI_Allreduce on device buffers on each, and prints the device memory in use on
 *       each rank's GPU (cudaMemGetInfo) before, after the first communicator and after the last, the most
 *       over the ranks; then frees them and prints it again
 * Prints per size the average latency (the slowest rank's mean), algbw and busbw as nccl-tests defines
 * them (algbw = total bytes / time, the total being n blocks for the collectives of a block per rank;
 * busbw = algbw times 2 (n - 1) / n for allreduce, (n - 1) / n for those of a block per rank, 1 for bcast
 * and reduce). When built with NCCL and run on CUDA buffers, each size also runs NCCL's counterpart on the
 * same buffers (ncclAllReduce, ncclBroadcast, ncclAllGather for allgather(v), grouped ncclSend/ncclRecv for
 * alltoall(v), ncclReduce, ncclReduceScatter; each call followed by a stream synchronize, as OSU's NCCL
 * benchmarks do) and prints NCCL's latency, busbw and the ratio ours/NCCL. NCCL is loaded at run time
 * (libnccl.so.2); where it is not found, coll/gpu is timed alone.
 */
#include "config.h"

#include <mpi.h>
/* after mpi.h, which it needs: MPIX_*_init */
#include <mpi-ext.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/common/tbuf.h"

/* -B: each blocking call timed alone between barriers, the latency the mean over the ranks. */
static bool barriers;

/* A size's latency from each rank's `us`: the slowest rank's, or with -B the mean over the n ranks. */
static double over_ranks(double us, int n) {
  double all;
  MPI_Allreduce(&us, &all, 1, MPI_DOUBLE, barriers ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD);
  return barriers ? all / n : all;
}

/* The collective whose data a call moves: allgatherv's are allgather's, alltoallv's alltoall's, reduce_scatterv's
 * reduce_scatter's. */
static int moves_as(int coll) { return coll == 6 ? 2 : coll == 7 ? 3 : coll == 8 ? 5 : coll; }

#if defined(TEST_WITH_CUDA) && defined(COLL_GPU_HAVE_NCCL)
#include <dlfcn.h>
#include <nccl.h>
#define WITH_NCCL 1

/* NCCL, loaded at run time (libnccl.so.2), so that the benchmark runs where NCCL is not installed. */
static struct {
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
} nccl_fn;

/* Whether libnccl.so.2 and every function above were found. */
static int nccl_load(void) {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return 0;
#define NCCL_LOAD(name) \
  if ((*(void **)&nccl_fn.name = dlsym(lib, "nccl" #name)) == NULL) return 0;
  NCCL_LOAD(GetUniqueId)
  NCCL_LOAD(CommInitRank)
  NCCL_LOAD(CommDestroy)
  NCCL_LOAD(AllReduce)
  NCCL_LOAD(Broadcast)
  NCCL_LOAD(AllGather)
  NCCL_LOAD(Reduce)
  NCCL_LOAD(ReduceScatter)
  NCCL_LOAD(Send)
  NCCL_LOAD(Recv)
  NCCL_LOAD(GroupStart)
  NCCL_LOAD(GroupEnd)
#undef NCCL_LOAD
  return 1;
}

static ncclComm_t nccl_comm;
static cudaStream_t nccl_stream;

/* Loads NCCL on every rank and creates its communicator; 0 (said once) when some rank has no NCCL. */
static int nccl_init(int rank, int n) {
  int loaded = nccl_load(), all = 0;
  MPI_Allreduce(&loaded, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0) printf("# NCCL (libnccl.so.2) was not found on every rank: coll/gpu is timed alone\n");
    return 0;
  }
  ncclUniqueId id;
  if (rank == 0 && nccl_fn.GetUniqueId(&id) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  TBUF_CHECK(cudaStreamCreate(&nccl_stream));
  if (nccl_fn.CommInitRank(&nccl_comm, n, id, rank) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 3);
  return 1;
}

/* One NCCL call of collective `coll` (as in main) moving `bytes` (per block): allgatherv's and alltoallv's
 * are allgather's and alltoall's, the same moves, and reduce_scatterv's reduce_scatter's. */
static void nccl_call(int coll, void *s, void *r, size_t bytes, int n) {
  switch (moves_as(coll)) {
    case 0:
      nccl_fn.AllReduce(s, r, bytes / sizeof(float), ncclFloat, ncclSum, nccl_comm, nccl_stream);
      break;
    case 1:
      nccl_fn.Broadcast(s, s, bytes, ncclChar, 0, nccl_comm, nccl_stream);
      break;
    case 2:
      nccl_fn.AllGather(s, r, bytes, ncclChar, nccl_comm, nccl_stream);
      break;
    case 4:
      nccl_fn.Reduce(s, r, bytes / sizeof(float), ncclFloat, ncclSum, 0, nccl_comm, nccl_stream);
      break;
    case 5:
      nccl_fn.ReduceScatter(s, r, bytes / sizeof(float), ncclFloat, ncclSum, nccl_comm, nccl_stream);
      break;
    default:
      nccl_fn.GroupStart();
      for (int q = 0; q < n; ++q) {
        nccl_fn.Send((char *)s + (size_t)q * bytes, bytes, ncclChar, q, nccl_comm, nccl_stream);
        nccl_fn.Recv((char *)r + (size_t)q * bytes, bytes, ncclChar, q, nccl_comm, nccl_stream);
      }
      nccl_fn.GroupEnd();
  }
}

/* Mean microseconds per NCCL call + stream synchronize, the slowest rank's (with -B each between barriers, the mean
 * over the ranks). */
static double nccl_time(int coll, void *s, void *r, size_t bytes, int n, int iters) {
  for (int i = 0; i < iters / 10 + 1; ++i) {
    nccl_call(coll, s, r, bytes, n);
    cudaStreamSynchronize(nccl_stream);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double sum = 0;
  if (barriers) {
    for (int i = 0; i < iters; ++i) {
      const double t = MPI_Wtime();
      nccl_call(coll, s, r, bytes, n);
      cudaStreamSynchronize(nccl_stream);
      sum += MPI_Wtime() - t;
      MPI_Barrier(MPI_COMM_WORLD);
    }
  } else {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      nccl_call(coll, s, r, bytes, n);
      cudaStreamSynchronize(nccl_stream);
    }
    sum = MPI_Wtime() - t0;
  }
  return over_ranks(sum * 1e6 / iters, n);
}
#else
#define WITH_NCCL 0
#endif

static const char *coll_names[] = {"allreduce",      "bcast",      "allgather", "alltoall",       "reduce",
                                   "reduce_scatter", "allgatherv", "alltoallv", "reduce_scatterv"};
#define NCOLLS 9
/* Whether a call's buffers hold a block per rank (its size is per rank). */
static bool blocked(int coll) { return coll == 2 || coll == 3 || coll >= 5; }

/* allgatherv's and alltoallv's counts and displacements (a rank each, allocated in main): every block of
 * `bytes`, one after another in rank order; reduce_scatterv's counts: `bytes` of floats, an odd rank's one
 * float fewer. Set once per size, before its calls (persistent requests keep them). */
static int *vcounts, *vdispls;
static void set_layout(int coll, size_t bytes, int n) {
  for (int q = 0; q < n; ++q) {
    vcounts[q] = coll == 8 ? (int)(bytes / sizeof(float)) - q % 2 : (int)bytes;
    vdispls[q] = q * (int)bytes;
  }
}
/* Whether it reduces floats. */
static bool reduces(int coll) { return coll == 0 || coll == 4 || coll == 5 || coll == 8; }

/* How the calls run: blocking, nonblocking (post, then MPI_Wait) or persistent (MPI_Start, then MPI_Wait). */
enum { BLOCKING, NONBLOCKING, PERSISTENT };

/* One MPI call of collective `coll` (an index into coll_names) moving `bytes` (per block): blocking, it
 * runs; nonblocking, it is posted (*req); persistent, its request is created (*req, inactive). */
static void post(int mode, int coll, void *s, void *r, size_t bytes, MPI_Request *req) {
  const int count = (int)(bytes / sizeof(float)), nb = (int)bytes;
  const MPI_Comm w = MPI_COMM_WORLD;
  const MPI_Info info = MPI_INFO_NULL;
  switch (coll) {
    case 0:
      (void)(mode == BLOCKING      ? MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, w)
             : mode == NONBLOCKING ? MPI_Iallreduce(s, r, count, MPI_FLOAT, MPI_SUM, w, req)
                                   : MPIX_Allreduce_init(s, r, count, MPI_FLOAT, MPI_SUM, w, info, req));
      break;
    case 1:
      (void)(mode == BLOCKING      ? MPI_Bcast(s, nb, MPI_BYTE, 0, w)
             : mode == NONBLOCKING ? MPI_Ibcast(s, nb, MPI_BYTE, 0, w, req)
                                   : MPIX_Bcast_init(s, nb, MPI_BYTE, 0, w, info, req));
      break;
    case 2:
      (void)(mode == BLOCKING      ? MPI_Allgather(s, nb, MPI_BYTE, r, nb, MPI_BYTE, w)
             : mode == NONBLOCKING ? MPI_Iallgather(s, nb, MPI_BYTE, r, nb, MPI_BYTE, w, req)
                                   : MPIX_Allgather_init(s, nb, MPI_BYTE, r, nb, MPI_BYTE, w, info, req));
      break;
    case 4:
      (void)(mode == BLOCKING      ? MPI_Reduce(s, r, count, MPI_FLOAT, MPI_SUM, 0, w)
             : mode == NONBLOCKING ? MPI_Ireduce(s, r, count, MPI_FLOAT, MPI_SUM, 0, w, req)
                                   : MPIX_Reduce_init(s, r, count, MPI_FLOAT, MPI_SUM, 0, w, info, req));
      break;
    case 5:
      (void)(mode == BLOCKING      ? MPI_Reduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, w)
             : mode == NONBLOCKING ? MPI_Ireduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, w, req)
                                   : MPIX_Reduce_scatter_block_init(s, r, count, MPI_FLOAT, MPI_SUM, w, info, req));
      break;
    case 6:
      (void)(mode == BLOCKING ? MPI_Allgatherv(s, nb, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, w)
             : mode == NONBLOCKING
                 ? MPI_Iallgatherv(s, nb, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, w, req)
                 : MPIX_Allgatherv_init(s, nb, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, w, info, req));
      break;
    case 8:
      (void)(mode == BLOCKING      ? MPI_Reduce_scatter(s, r, vcounts, MPI_FLOAT, MPI_SUM, w)
             : mode == NONBLOCKING ? MPI_Ireduce_scatter(s, r, vcounts, MPI_FLOAT, MPI_SUM, w, req)
                                   : MPIX_Reduce_scatter_init(s, r, vcounts, MPI_FLOAT, MPI_SUM, w, info, req));
      break;
    case 7:
      (void)(mode == BLOCKING ? MPI_Alltoallv(s, vcounts, vdispls, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, w)
             : mode == NONBLOCKING
                 ? MPI_Ialltoallv(s, vcounts, vdispls, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, w, req)
                 : MPIX_Alltoallv_init(s, vcounts, vdispls, MPI_BYTE, r, vcounts, vdispls, MPI_BYTE, w, info, req));
      break;
    default:
      (void)(mode == BLOCKING      ? MPI_Alltoall(s, nb, MPI_BYTE, r, nb, MPI_BYTE, w)
             : mode == NONBLOCKING ? MPI_Ialltoall(s, nb, MPI_BYTE, r, nb, MPI_BYTE, w, req)
                                   : MPIX_Alltoall_init(s, nb, MPI_BYTE, r, nb, MPI_BYTE, w, info, req));
  }
}

/* One whole call in the mode: persistent ones start *req, made by post(PERSISTENT, ...). */
static void call(int mode, int coll, void *s, void *r, size_t bytes, MPI_Request *req) {
  if (mode == PERSISTENT)
    MPI_Start(req);
  else
    post(mode, coll, s, r, bytes, req);
  if (mode != BLOCKING) MPI_Wait(req, MPI_STATUS_IGNORE);
}

/* Mean microseconds per call in the mode over `iters` calls, after a tenth of them to warm up (blocking calls with
 * -B: each timed alone, a barrier after it). */
static double timed(int mode, int coll, void *s, void *r, size_t bytes, MPI_Request *req, int iters) {
  for (int i = 0; i < iters / 10 + 1; ++i) call(mode, coll, s, r, bytes, req);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!barriers || mode != BLOCKING) {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) call(mode, coll, s, r, bytes, req);
    return (MPI_Wtime() - t0) * 1e6 / iters;
  }
  double sum = 0;
  for (int i = 0; i < iters; ++i) {
    const double t = MPI_Wtime();
    call(mode, coll, s, r, bytes, req);
    sum += MPI_Wtime() - t;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return sum * 1e6 / iters;
}

/* Calls for about `seconds` (as many on every rank: rank 0's count), before the first size is timed, so
 * that it does not pay for what a process does first (lazy set-up, clocks of a GPU and CPUs that were
 * idle). On one H200 shared by 2 ranks, NCCL's 8-byte allreduce over its network transport took 44 us in
 * the run before it and 31 in the run after (one run each); ours was slow at 8 B for another reason (byte
 * loads from host memory, kernels/primitives.cuh). */
static void warm_up(int coll, void *s, void *r, size_t bytes, int n, MPI_Request *req, double seconds, int nccl) {
  const double t0 = MPI_Wtime();
  for (int i = 0; i < 10; ++i) call(BLOCKING, coll, s, r, bytes, req);
  const double each = (MPI_Wtime() - t0) / 10;
  int calls = each > 0 && seconds / each < 1e6 ? (int)(seconds / each) : 1000000;
  MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int i = 0; i < calls; ++i) call(BLOCKING, coll, s, r, bytes, req);
#if WITH_NCCL
  for (int i = 0; nccl && i < calls; ++i) {
    nccl_call(coll, s, r, bytes, n);
    cudaStreamSynchronize(nccl_stream);
  }
#else
  (void)n;
  (void)nccl;
#endif
}

/* Busy computation on the CPU for `us` microseconds, no MPI call in it; returns how long it took. */
static double compute(double us) {
  const double t0 = MPI_Wtime(), end = t0 + us * 1e-6;
  volatile double x = 0;
  while (MPI_Wtime() < end)
    for (int i = 0; i < 64; ++i) x = x * 0.5 + 1;
  return (MPI_Wtime() - t0) * 1e6;
}

/* The -I mode's overlap loop: per call, post, compute for `us`, wait. Means over the calls, in us. */
static void overlap(int coll, void *s, void *r, size_t bytes, double us, int iters, double *overall, double *comp) {
  MPI_Request req;
  *overall = *comp = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < iters; ++i) {
    const double t0 = MPI_Wtime();
    post(NONBLOCKING, coll, s, r, bytes, &req);
    *comp += compute(us);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    *overall += (MPI_Wtime() - t0) * 1e6;
  }
  *overall /= iters;
  *comp /= iters;
}

/* Byte i of the block rank `from` sends to rank `to` (allgather: to = 0; bcast: from = root 0). */
static unsigned char pattern(int from, int to, size_t i) { return (unsigned char)(from * 31 + to * 7 + i * 13 + 1); }

/* One fresh call checked against what MPI defines: the count of wrong elements on this rank. */
static int validate(int mode, MPI_Request *req, tbuf_kind_t kind, int coll, void *s, void *r, float *hs, float *hr,
                    size_t bytes, int rank, int n) {
  unsigned char *bs = (unsigned char *)hs, *br = (unsigned char *)hr;
  const size_t blocks = blocked(coll) ? (size_t)n : 1;
  int bad = 0;
  if (reduces(coll)) { /* float sums of small integers: exact */
    const size_t count = bytes / sizeof(float), all = count * blocks;
    for (size_t i = 0; i < all; ++i) hs[i] = (float)(rank + 1 + i % 7);
    tbuf_put(kind, s, hs, all * sizeof(float));
    for (size_t i = 0; i < count; ++i) hr[i] = -1;
    tbuf_put(kind, r, hr, count * sizeof(float));
    call(mode, coll, s, r, bytes, req);
    if (coll == 4 && rank != 0) return 0; /* the result is the root's */
    tbuf_get(kind, hr, r, count * sizeof(float));
    /* reduce_scatter: my block, reduce_scatterv's after the counts before it; the rest of hr still poison */
    size_t first = coll == 5 ? (size_t)rank * count : 0, mine = count;
    for (int q = 0; coll == 8 && q < rank; ++q) first += (size_t)vcounts[q];
    if (coll == 8) mine = (size_t)vcounts[rank];
    for (size_t i = 0; i < count; ++i)
      bad += hr[i] != (i < mine ? (float)(n * (n + 1) / 2 + n * ((first + i) % 7)) : -1.0f);
    return bad;
  }
  const bool a2a = moves_as(coll) == 3;
  for (size_t q = 0; q < blocks; ++q)
    for (size_t i = 0; i < bytes; ++i)
      bs[q * bytes + i] = coll == 1 && rank != 0 ? 0xee : pattern(rank, a2a ? (int)q : 0, i);
  tbuf_put(kind, s, bs, blocks * bytes);
  memset(br, 0xee, blocks * bytes);
  tbuf_put(kind, r, br, blocks * bytes);
  call(mode, coll, s, r, bytes, req);
  tbuf_get(kind, br, coll == 1 ? s : r, blocks * bytes);
  for (size_t q = 0; q < blocks; ++q)
    for (size_t i = 0; i < bytes; ++i) {
      const unsigned char want = coll == 1 ? pattern(0, 0, i) : pattern((int)q, a2a ? rank : 0, i);
      bad += br[q * bytes + i] != want;
    }
  return bad;
}

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

#ifdef TEST_WITH_CUDA
/* Device memory in use on this rank's GPU, the most over the ranks, in MiB. */
static double used_mib(void) {
  size_t free_b = 0, total = 0;
  TBUF_CHECK(cudaDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD); /* a peer's mapping of this rank's memory holds it until the peer lets go */
  TBUF_CHECK(cudaMemGetInfo(&free_b, &total));
  double mine = (double)(total - free_b) / (1 << 20), most;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

/* -D: what each communicator that ran a GPU collective costs in device memory. */
static int comm_memory(void *s, void *r, size_t bytes, int ncomms, int rank, int n) {
  const int count = (int)(bytes / sizeof(float));
  float *h = malloc(bytes), *want = malloc(bytes);
  MPI_Comm *comms = calloc((size_t)ncomms, sizeof(MPI_Comm));
  for (int i = 0; i < count; ++i) h[i] = (float)(rank + i % 7), want[i] = 0;
  for (int q = 0; q < n; ++q)
    for (int i = 0; i < count; ++i) want[i] += (float)(q + i % 7);
  TBUF_CHECK(cudaMemcpy(s, h, bytes, cudaMemcpyHostToDevice));
  int bad = 0;
  const double before = used_mib();
  double first = before;
  for (int c = 0; c < ncomms; ++c) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
    TBUF_CHECK(cudaMemset(r, 0xff, bytes));
    MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comms[c]);
    TBUF_CHECK(cudaMemcpy(h, r, bytes, cudaMemcpyDeviceToHost));
    bad += memcmp(h, want, bytes) != 0;
    if (c == 0) first = used_mib();
  }
  const double last = used_mib();
  for (int c = 0; c < ncomms; ++c) MPI_Comm_free(&comms[c]);
  const double freed = used_mib();
  int bad_all = 0;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf(
        "# device memory in use (MiB, the most over %d ranks), %d communicators duplicated from MPI_COMM_WORLD, "
        "each after a %zu-byte MPI_Allreduce on device buffers\n",
        n, ncomms, bytes);
    printf(
        "before %.0f, after the first %.0f (+%.0f), after the last %.0f (+%.0f, %.0f per communicator), "
        "after freeing them %.0f; %s\n",
        before, first, first - before, last, last - before, (last - before) / ncomms, freed,
        bad_all == 0 ? "every result right" : "WRONG RESULTS");
    printf("all %d against one: %.2fx\n", ncomms, first > before ? (last - before) / (first - before) : 0.0);
  }
  free(comms);
  free(h);
  free(want);
  return bad_all == 0 ? 0 : 1;
}
#endif

/* Frees the buffers, finalizes MPI and returns rc: the end of every mode. */
static int finish(tbuf_kind_t kind, void *s, void *r, float *hs, float *hr, int rc) {
  tbuf_free(kind, s);
  tbuf_free(kind, r);
  free(hs);
  free(hr);
  free(vcounts);
  free(vdispls);
  MPI_Finalize();
  return rc;
}

static void usage(FILE *to, const char *argv0) {
  fprintf(to,
          "usage: %s [-C allreduce|bcast|allgather|alltoall|reduce|reduce_scatter|allgatherv|alltoallv|"
          "reduce_scatterv] "
          "[-d host|cuda] [-m MIN] [-M MAX] [-i ITERS] [-c] [-N] [-E] [-B | -I | -P] [-O ROUNDS] [-D COMMS]\n",
          argv0);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) { /* answered without MPI */
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout, argv[0]);
      printf(
          "Times MPI collectives OSU style (with NCCL's beside them when built with NCCL, on CUDA buffers);\n"
          "run it under mpirun. See coll_gpu_allreduce_bench(1).\n");
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf("%s (coll/gpu) %s\n", argv[0], COLL_GPU_VERSION);
      return 0;
    }
  }
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
  int rounds = 0, ncomms = 0;
  int coll = 0;
  bool with_nccl = true, engine_first = false;
  int mode = BLOCKING, opt;
  while ((opt = getopt(argc, argv, "C:d:m:M:i:cNBEIPO:D:")) != -1) {
    switch (opt) {
      case 'C':
        for (coll = 0; coll < NCOLLS && strcmp(optarg, coll_names[coll]) != 0; ++coll) continue;
        if (coll == NCOLLS) {
          if (rank == 0) fprintf(stderr, "unknown collective '%s'\n", optarg);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        break;
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
      case 'N':
        with_nccl = false;
        break;
      case 'B':
        barriers = true;
        break;
      case 'E':
        engine_first = true;
        break;
      case 'I':
        mode = NONBLOCKING;
        break;
      case 'P':
        mode = PERSISTENT;
        break;
      case 'O':
        rounds = atoi(optarg);
        break;
      case 'D':
        ncomms = atoi(optarg);
        break;
      default:
        if (rank == 0) usage(stderr, argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (min < sizeof(float)) min = sizeof(float);
#ifdef TEST_WITH_CUDA
  int ndev = 0;
  TBUF_CHECK(cudaGetDeviceCount(&ndev));
  TBUF_CHECK(cudaSetDevice(rank % ndev));
#endif
  /* the collectives of a block per rank: n blocks of at most max */
  const size_t room = blocked(coll) ? max * (size_t)n : max;
  vcounts = malloc(sizeof(int) * (size_t)n);
  vdispls = malloc(sizeof(int) * (size_t)n);
  float *hs = malloc(room), *hr = malloc(room);
  void *s = tbuf_alloc(kind, room), *r = tbuf_alloc(kind, room);
  if (ncomms > 0) {
#ifdef TEST_WITH_CUDA
    int rc = 2;
    if (kind == TBUF_DEVICE)
      rc = comm_memory(s, r, min, ncomms, rank, n);
    else if (rank == 0)
      printf("-D measures device memory: it takes device buffers (-d cuda)\n");
#else
    if (rank == 0) printf("-D needs the CUDA build (coll_gpu_allreduce_bench)\n");
    int rc = 2;
#endif
    return finish(kind, s, r, hs, hr, rc);
  }
  if (rounds > 0)
    return finish(kind, s, r, hs, hr, overhead(s, r, min, rounds, iters_arg > 0 ? iters_arg : 100000, rank));
  int nccl = 0;
#if WITH_NCCL
  nccl = kind == TBUF_DEVICE && with_nccl && mode == BLOCKING && nccl_init(rank, n);
#else
  (void)with_nccl;
#endif
  if (rank == 0) {
    printf("# coll/gpu %s%s benchmark: %d ranks, %s memory, %s%s%s\n",
           mode == NONBLOCKING  ? "nonblocking "
           : mode == PERSISTENT ? "persistent "
                                : "",
           coll_names[coll], n, tbuf_kind_name(kind),
           coll == 0   ? "MPI_FLOAT MPI_SUM"
           : coll == 1 ? "MPI_BYTE from root 0"
           : coll == 4 ? "MPI_FLOAT MPI_SUM to root 0"
           : coll == 5 ? "MPI_FLOAT MPI_SUM, sizes per rank"
           : coll == 8 ? "MPI_FLOAT MPI_SUM, sizes per rank, the odd ranks' blocks one float short"
           : coll >= 6 ? "MPI_BYTE, sizes per rank, equal blocks in rank order"
                       : "MPI_BYTE, sizes per rank",
           check ? ", validated" : "", nccl ? "; NCCL on the same buffers" : "");
    if (barriers && mode == BLOCKING) printf("# each call alone between barriers; the mean over the ranks\n");
    if (mode == NONBLOCKING)
      printf("%-12s %14s %14s %14s %14s %11s %8s %13s\n", "# Size(B)", "Blocking(us)", "Pure comm(us)", "Overall(us)",
             "Compute(us)", "Overlap(%)", "check", "pure/blocking");
    else if (mode == PERSISTENT)
      printf("%-12s %14s %16s %8s %18s\n", "# Size(B)", "Blocking(us)", "Persistent(us)", "check",
             "persistent/blocking");
    else
      printf("%-12s %16s %12s %12s %8s", "# Size(B)", "Avg lat(us)", "algbw(GB/s)", "busbw(GB/s)", "check");
    if (nccl) printf(" %14s %12s %10s", "NCCL lat(us)", "NCCL busbw", "ours/NCCL");
    if (mode == BLOCKING) printf("\n");
  }
  int bad_total = 0;
  if (min <= max) {
    MPI_Request req = MPI_REQUEST_NULL;
    if (engine_first) {
      const size_t big = (size_t)1 << 20;
      void *bs = tbuf_alloc(kind, big), *br = tbuf_alloc(kind, big);
      MPI_Allreduce(bs, br, (int)(big / sizeof(float)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      tbuf_free(kind, bs);
      tbuf_free(kind, br);
    }
    set_layout(coll, min, n);
    warm_up(coll, s, r, min, n, &req, 0.5, nccl);
  }
  for (size_t bytes = min; bytes <= max; bytes *= 2) {
    set_layout(coll, bytes, n);
    int iters = iters_arg > 0 ? iters_arg : bytes <= (1 << 20) ? 1000 : 100;
    MPI_Request req = MPI_REQUEST_NULL;
    double mode_worst = 0, sums[3] = {0, 0, 0};
    const double worst = over_ranks(timed(BLOCKING, coll, s, r, bytes, &req, iters), n);
    if (mode == PERSISTENT) post(PERSISTENT, coll, s, r, bytes, &req);
    if (mode != BLOCKING) {
      const double mine = timed(mode, coll, s, r, bytes, &req, iters);
      MPI_Allreduce(&mine, &mode_worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (mode == NONBLOCKING) { /* computation as long as the slowest rank's pure communication */
        double parts[3] = {mine, 0, 0};
        overlap(coll, s, r, bytes, mode_worst, iters, &parts[1], &parts[2]);
        MPI_Reduce(parts, sums, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      }
    }
    int bad = 0;
    if (check) {
      bad = validate(mode, &req, kind, coll, s, r, hs, hr, bytes, rank, n);
      int all;
      MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      bad = all;
      bad_total += bad;
    }
    if (mode == PERSISTENT) MPI_Request_free(&req);
    double nccl_us = 0;
#if WITH_NCCL
    if (nccl) nccl_us = nccl_time(coll, s, r, bytes, n, iters);
#endif
    if (rank == 0) {
      const char *verdict = check ? (bad ? "FAIL" : "ok") : "-";
      if (mode == NONBLOCKING) {
        const double pure = sums[0] / n, overall = sums[1] / n, comp = sums[2] / n;
        double lap = 100 - 100 * (overall - comp) / pure;
        printf("%-12zu %14.2f %14.2f %14.2f %14.2f %11.1f %8s %13.2f\n", bytes, worst, pure, overall, comp,
               lap < 0 ? 0 : lap, verdict, mode_worst / worst);
      } else if (mode == PERSISTENT) {
        printf("%-12zu %14.2f %16.2f %8s %18.2f\n", bytes, worst, mode_worst, verdict, mode_worst / worst);
      } else {
        const double total = blocked(coll) ? (double)bytes * n : (double)bytes;
        const double bus = coll == 0 ? 2.0 * (n - 1) / n : blocked(coll) ? (double)(n - 1) / n : 1.0;
        double algbw = total / worst / 1e3;
        printf("%-12zu %16.2f %12.2f %12.2f %8s", bytes, worst, algbw, algbw * bus, verdict);
        if (nccl) printf(" %14.2f %12.2f %10.2f", nccl_us, total / nccl_us / 1e3 * bus, worst / nccl_us);
        printf("\n");
      }
      fflush(stdout);
    }
  }
#if WITH_NCCL
  if (nccl) nccl_fn.CommDestroy(nccl_comm);
#endif
  return finish(kind, s, r, hs, hr, bad_total == 0 ? 0 : 1);
}
