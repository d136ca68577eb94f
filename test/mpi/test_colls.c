/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Every collective that coll/gpu wraps, blocking and nonblocking, against a reference computed here:
 * reductions for every predefined type and op pair MPI allows, data movement with contiguous and
 * derived datatypes (holes, negative lower bound), in place and not, counts 0, 1 and more, every root.
 * Outputs are poisoned first; receive images are compared byte for byte, holes included.
 *
 * usage: test_colls [-m host|device|managed|pinned|pool|vmm|mixed] [-s seed] [-v] [-L] [-F] [-G] [-W] [-r GAP_US]
 * -F makes odd ranks stage every buffer (coll_gpu_force_staging through MPI_T) and even ranks not, as
 *    ranks that loaded CUDA beside ranks that did not.
 * -G (device memory, or any with -W over several nodes; across hosts with coll_gpu_net_min_bytes 0) also checks that
 * the blocking reductions with a GPU path stage no buffer for the types the kernels take (coll/gpu's MPI_T counter
 *    coll_gpu_staged_buffers): a staged call gives the same bytes, so only the counter tells the GPU path ran.
 * -W first runs one allreduce of 1 MiB on device memory on every rank, whatever -m says, so that the GPU
 *    path's engine is made; the cases after run on a communicator that has one (over several nodes: its
 *    own, where every blocking call takes the GPU path and ranks whose buffers are not device memory join
 *    it through the engine's memory).
 * -r GAP_US makes each rank wait a random 0 to GAP_US microseconds before each collective: with GAP_US
 *    about twice coll_gpu_oneshot_linger_us, coll/gpu's lingering kernel leaves just as calls arrive.
 * -L runs only a broadcast of more than 2^31 bytes and, on GPU memory, an allgather and an alltoall of more
 *    than 2^31 - 1 bytes in all (several GiB of memory per rank).
 * -v names every case before running it (to find a case that crashes).
 * The seed is random unless given (TEST_SEED also sets it); it is printed for reproduction.
 */
#include <mpi.h>
#include <time.h>
#include <unistd.h>

#include "test/mpi/colls.h"

int rank, nranks;
uint64_t seed;
tbuf_kind_t kind;
long checks, failures;
bool verbose;
bool gpu_path;
bool node_shm;
int gap_max_us;

/* A legal program posts a nonblocking collective, then waits on point-to-point traffic that the other
 * rank sends before joining the collective: nothing may block inside the nonblocking call. */
static void test_nonblocking_progress(void) {
  if (nranks < 2) return;
  buf_t sb = buf_new(64 * sizeof(int)), rb = buf_new(64 * sizeof(int));
  for (int i = 0; i < 64; ++i) ((int *)sb.img)[i] = rank + i;
  buf_push(&sb);
  MPI_Request req;
  int token = 0;
  if (rank == 0) {
    MPI_Iallreduce(sb.dev, rb.dev, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Recv(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    if (rank == 1) MPI_Send(&rank, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    MPI_Iallreduce(sb.dev, rb.dev, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  int want[64];
  for (int i = 0; i < 64; ++i) want[i] = nranks * (nranks - 1) / 2 + nranks * i;
  buf_check("iallreduce then point-to-point", &rb, want);
  buf_free(&sb);
  buf_free(&rb);
}

/* -W: an allreduce every rank passes device memory to, checked. */
static void test_warm_up(void) {
  const int count = (1 << 20) / sizeof(int);
  const tbuf_kind_t was = kind;
  kind = TBUF_DEVICE;
  buf_t sb = buf_new(count * sizeof(int)), rb = buf_new(count * sizeof(int));
  kind = was;
  int *want = malloc(count * sizeof(int));
  for (int i = 0; i < count; ++i) {
    ((int *)sb.img)[i] = rank * 7 + i;
    want[i] = 7 * nranks * (nranks - 1) / 2 + nranks * i;
  }
  buf_push(&sb);
  checks++;
  if (MPI_Allreduce(sb.dev, rb.dev, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
    fail("warm-up allreduce", "returned an error");
  buf_check("warm-up allreduce on device memory", &rb, want);
  free(want);
  buf_free(&sb);
  buf_free(&rb);
}

/* A broadcast of more than 2^31 bytes: byte counts must not be truncated to int anywhere. */
static void test_large(void) {
  const int count = (1 << 28) + 5; /* doubles: 2 GiB + 40 bytes */
  const size_t bytes = (size_t)count * sizeof(double);
  buf_t b = buf_new(bytes);
  int root = nranks - 1;
  double *img = (double *)b.img;
  if (rank == root)
    for (int i = 0; i < count; ++i) img[i] = (double)(rnd(7, i, 0) >> 11);
  buf_push(&b);
  checks++;
  if (MPI_Bcast(b.dev, count, MPI_DOUBLE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
    fail("large bcast", "returned an error");
  double *want = malloc(bytes);
  for (int i = 0; i < count; ++i) want[i] = (double)(rnd(7, i, 0) >> 11);
  buf_check("bcast of 2^31 + 40 bytes", &b, want);
  free(want);
  buf_free(&b);
}

/* Byte i of the block rank `from` sends to rank `to` (an allgather sends one block to all): a hash per 8
 * bytes, so that gigabytes take seconds. */
static uint8_t large_byte(int a2a, size_t from, size_t to, size_t i) {
  const uint64_t word = rnd(11 + (uint64_t)a2a, (uint64_t)from * 64 + (a2a ? (uint64_t)to : 0), (uint64_t)i / 8);
  return (uint8_t)(word >> (8 * (i % 8)));
}

/* An allgather and an alltoall whose buffers hold more than 2^31 - 1 elements (bytes), although each
 * block's count fits an int: no element count of a whole buffer may be truncated to int (with -G: nor
 * staged). Checked byte by byte against the generator, without second images of 2 GiB. */
static void test_large_moves(void) {
  const int count = (int)(((size_t)1 << 31) / (size_t)nranks) + 24; /* a block; 2^31 + 24 x ranks in all */
  const size_t block = (size_t)count, total = block * (size_t)nranks;
  for (int a2a = 0; a2a < 2; ++a2a) {
    const char *what = a2a ? "alltoall of 2^31 + 24 x ranks bytes" : "allgather of 2^31 + 24 x ranks bytes";
    buf_t sb = buf_new(a2a ? total : block), rb = buf_new(total);
    for (size_t at = 0; at < sb.bytes; ++at)
      ((uint8_t *)sb.img)[at] = large_byte(a2a, (size_t)rank, at / block, at % block);
    buf_push(&sb);
    buf_push(&rb); /* poisoned */
    const unsigned long long staged_before = gpu_path ? staged_count() : 0;
    checks++;
    const int rc = a2a ? MPI_Alltoall(sb.dev, count, MPI_BYTE, rb.dev, count, MPI_BYTE, MPI_COMM_WORLD)
                       : MPI_Allgather(sb.dev, count, MPI_BYTE, rb.dev, count, MPI_BYTE, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) fail(what, "returned an error");
    checks++;
    if (gpu_path && staged_count() != staged_before) fail(what, "staged its buffers");
    tbuf_get(rb.k, rb.img, rb.dev, rb.bytes);
    checks++;
    for (size_t at = 0; at < rb.bytes; ++at) {
      const size_t from = at / block, i = at % block;
      const uint8_t want = large_byte(a2a, from, (size_t)rank, i), got = ((const uint8_t *)rb.img)[at];
      if (got != want) {
        char d[128];
        snprintf(d, sizeof(d), "byte %zu of %zu (rank %zu's): got 0x%02x, want 0x%02x", at, rb.bytes, from, got, want);
        fail(what, d);
        break;
      }
    }
    buf_free(&sb);
    buf_free(&rb);
  }
}

/* Sets coll_gpu_force_staging in this process through MPI_T; 0 on success. */
static int set_force_staging(int on) {
  int provided, index, count, rc = -1;
  MPI_T_cvar_handle h;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  if (MPI_T_cvar_get_index("coll_gpu_force_staging", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &h, &count) == MPI_SUCCESS) {
    rc = MPI_T_cvar_write(h, &on) == MPI_SUCCESS ? 0 : -1;
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return rc;
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
  bool large = false;
  bool split_staging = false, warm_up = false;
  while ((opt = getopt(argc, argv, "m:s:vLFGWr:")) != -1) {
    if (opt == 'W') warm_up = true;
    if (opt == 'L') large = true;
    if (opt == 'G') gpu_path = true;
    if (opt == 'F') split_staging = true;
    if (opt == 'm' && tbuf_parse_kind(optarg, &kind) != 0) {
      fprintf(stderr, "unknown or unavailable memory kind '%s'\n", optarg);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (opt == 's') s = strtoull(optarg, NULL, 0);
    if (opt == 'r') gap_max_us = atoi(optarg);
    if (opt == 'v') verbose = true;
  }
  /* a collective before CUDA is loaded: coll/gpu must notice libcuda arriving after it started */
  MPI_Bcast(&s, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  tbuf_select_device(rank);
  /* -F: odd ranks behave as processes that loaded CUDA (they classify and stage every buffer), even
   * ranks as processes that did not: every collective must still match up */
  if (split_staging && rank % 2 == 1 && set_force_staging(1) != 0) {
    fprintf(stderr, "coll_gpu_force_staging cannot be set through MPI_T\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (gpu_path) {
    staged_count_open();
    node_shm = gpu_node_shm();
  }
  seed = s;
  alarm(600); /* a hang becomes a failure, never a stuck test run */
  make_layouts();
  if (warm_up) test_warm_up();
  if (large) {
    test_large();
    if (kind != TBUF_HOST) test_large_moves(); /* the GPU path's element counts (host memory: 16 GiB) */
  } else {
    test_reductions();
    test_moves();
    test_bottom();
    test_nonblocking_progress();
  }
  long totals[2] = {checks, failures}, all[2];
  MPI_Allreduce(totals, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_colls: %d ranks, %s memory, seed %llu: %ld checks, %ld failed\n", nranks, tbuf_kind_name(kind), s,
           all[0], all[1]);
  free_layouts();
  MPI_Finalize();
  return all[1] == 0 ? 0 : 1;
}
