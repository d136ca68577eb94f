/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The collective kernels without MPI: 2 to 8 ranks simulated in one process, then 12 and 16 (more than
 * COLL_GPU_MAX_DIRECT: the rings only), each with its own scratch, status words and stream, spread
 * round-robin over the GPUs present (peer access between them). Every collective (allreduce, bcast,
 * allgather, alltoall, reduce, reduce-scatter; no alltoall beyond COLL_GPU_MAX_DIRECT, where reduce-scatter
 * has equal blocks, as the engine runs them) and every algorithm it has,
 * in random order on one communicator, so that each call finds the ring step counters and one-shot slots
 * the calls before it left. Random counts (rounded down to the algorithm's limit), roots, reduce-scatter
 * blocks of different lengths (some empty, with gaps between them, as the host's pieces cut them),
 * allgather/alltoall blocks with gaps between them, byte offsets 0 to 15, in place as MPI defines it for
 * each collective, random channel counts, and rings in random orders, a different one per channel: the
 * order the topology search may hand the engine, which a node whose rings are the identity never
 * exercises. The rings are drawn once per communicator, as the engine's are.
 *
 * Inputs are drawn fresh, every receive buffer poisoned around and between its blocks. The whole receive
 * buffer of every rank must equal a host image written here: the reference result (reductions folded in
 * plain C, moves copied) where the collective writes, the poison or the in-place input everywhere else.
 * The whole send buffer must come back unchanged.
 *
 * The ranks' kernels spin for each other, and within one process no GPU time-slices between them, so
 * every call keeps the blocks of all ranks on a GPU within its multiprocessor count: each can then
 * hold them all at once.
 *
 * usage: test_gpu_kernels [-s SEED] [-n CALLS-PER-RANK-COUNT] [-v]   (-v: each call described before it runs)
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/rings.h"
#include "engine/tune.h"
#include "kernels/kernels.h"
#include "test/common/kernels_check.h"

enum { GUARD = 64, POISON = 0xA5, MAX_BYTES = 8 << 20, SPAN = MAX_BYTES + 2 * GUARD + 16 };
#define HANG_S 20  /* a call's limit (hung) */
#define MAX_SIM 16 /* simulated ranks at most */

/* The kernels' limits for this test's layout. */
static const coll_gpu_scratch_layout_t LAYOUT_TEMPLATE = {
    .ll_bytes = 512 << 10, .twoshot_bytes = 4 << 20, .slot_bytes = 32 << 10, .nchannels = 8};

/* Types and ops whose result does not depend on the order of reduction: the reference may run in rank
 * order whatever ring the kernels take. Floats hold small integers. */
typedef struct {
  coll_gpu_dtype_t type;
  coll_gpu_redop_t op;
  const char *name;
} combo_t;
static const combo_t COMBOS[] = {
    {COLL_GPU_INT32, COLL_GPU_SUM, "int32 sum"},   {COLL_GPU_UINT8, COLL_GPU_SUM, "uint8 sum"},
    {COLL_GPU_INT64, COLL_GPU_BXOR, "int64 bxor"}, {COLL_GPU_UINT16, COLL_GPU_MAX, "uint16 max"},
    {COLL_GPU_INT8, COLL_GPU_MIN, "int8 min"},     {COLL_GPU_FLOAT, COLL_GPU_SUM, "float sum"},
    {COLL_GPU_DOUBLE, COLL_GPU_MIN, "double min"}, {COLL_GPU_BOOL, COLL_GPU_LXOR, "bool lxor"},
};
enum { NCOMBOS = sizeof(COMBOS) / sizeof(COMBOS[0]) };

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static size_t rnd_below(size_t n) { return n == 0 ? 0 : (size_t)(rnd() % n); }

static size_t type_size(coll_gpu_dtype_t t) { return coll_gpu_dtype_size(t); }

static void gen(const combo_t *c, unsigned char *out, size_t count) {
  const size_t sz = type_size(c->type);
  for (size_t i = 0; i < count; ++i) {
    uint64_t h = rnd();
    unsigned char *e = out + i * sz;
    if (c->type == COLL_GPU_FLOAT) {
      float v = (float)((int)(h % 9) - 4);
      memcpy(e, &v, 4);
    } else if (c->type == COLL_GPU_DOUBLE) {
      double v = (double)((int)(h % 9) - 4);
      memcpy(e, &v, 8);
    } else if (c->type == COLL_GPU_BOOL) {
      *e = (unsigned char)(h & 1);
    } else {
      memcpy(e, &h, sz);
    }
  }
}

/* acc[i] = acc[i] op v[i], in plain C. */
static void ref_apply(const combo_t *c, unsigned char *acc, const unsigned char *v, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    switch (c->type) {
      case COLL_GPU_INT32: {
        uint32_t a, b;
        memcpy(&a, acc + 4 * i, 4);
        memcpy(&b, v + 4 * i, 4);
        a += b; /* two's complement: the same wrap as int32 */
        memcpy(acc + 4 * i, &a, 4);
        break;
      }
      case COLL_GPU_UINT8:
        acc[i] = (unsigned char)(acc[i] + v[i]);
        break;
      case COLL_GPU_INT64: {
        uint64_t a, b;
        memcpy(&a, acc + 8 * i, 8);
        memcpy(&b, v + 8 * i, 8);
        a ^= b;
        memcpy(acc + 8 * i, &a, 8);
        break;
      }
      case COLL_GPU_UINT16: {
        uint16_t a, b;
        memcpy(&a, acc + 2 * i, 2);
        memcpy(&b, v + 2 * i, 2);
        if (b > a) memcpy(acc + 2 * i, &b, 2);
        break;
      }
      case COLL_GPU_INT8:
        if ((int8_t)v[i] < (int8_t)acc[i]) acc[i] = v[i];
        break;
      case COLL_GPU_FLOAT: {
        float a, b;
        memcpy(&a, acc + 4 * i, 4);
        memcpy(&b, v + 4 * i, 4);
        a += b;
        memcpy(acc + 4 * i, &a, 4);
        break;
      }
      case COLL_GPU_DOUBLE: {
        double a, b;
        memcpy(&a, acc + 8 * i, 8);
        memcpy(&b, v + 8 * i, 8);
        if (b < a) memcpy(acc + 8 * i, &b, 8);
        break;
      }
      case COLL_GPU_BOOL:
        acc[i] = (unsigned char)(acc[i] != v[i]);
        break;
      default:
        abort();
    }
  }
}

static void gen_bytes(unsigned char *out, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t h = rnd();
    memcpy(out + i, &h, n - i < 8 ? n - i : 8);
  }
}

/* dst = the reduction over the n ranks' `count` elements at src[r] (order-free: the combos allow it). */
static void fold(const combo_t *c, unsigned char *dst, const unsigned char *const *src, int n, size_t count) {
  memcpy(dst, src[0], count * type_size(c->type));
  for (int r = 1; r < n; ++r) ref_apply(c, dst, src[r], count);
}

/* A simulated communicator: the rings are fixed for its life, as the engine's are (the ring step counters
 * belong to a channel's connections). */
typedef struct {
  int n;
  int dev[MAX_SIM];
  coll_gpu_scratch_layout_t layout;
  void *scratch[MAX_SIM];
  coll_gpu_dev_status_t *status[MAX_SIM];
  void *status_dev[MAX_SIM];
  void *stream[MAX_SIM];
  uint64_t seq;
  int nrings;
  uint16_t rings[COLL_GPU_MAX_RINGS * MAX_SIM]; /* [ring][position] */
  uint8_t *waiting[MAX_SIM];                    /* host-mapped, n bytes each */
  void *waiting_dev[MAX_SIM];
  coll_gpu_dev_comm_t comm[MAX_SIM];            /* each rank's, connections uploaded */
  unsigned char *send[MAX_SIM], *recv[MAX_SIM]; /* device, SPAN bytes */
} comm_t;

static int ndev, sms_min;

static void comm_init(comm_t *c, int n) {
  memset(c, 0, sizeof(*c));
  c->n = n;
  c->layout = LAYOUT_TEMPLATE;
  c->layout.nranks = n;
  for (int r = 0; r < n; ++r) {
    c->dev[r] = r % ndev;
    CHECK(cudaSetDevice(c->dev[r]));
    KCHECK(coll_gpu_dev_alloc(&c->scratch[r], coll_gpu_scratch_bytes(&c->layout)));
    KCHECK(coll_gpu_host_mapped_alloc((void **)&c->status[r], &c->status_dev[r], sizeof(coll_gpu_dev_status_t)));
    KCHECK(coll_gpu_host_mapped_alloc((void **)&c->waiting[r], &c->waiting_dev[r], (size_t)n));
    KCHECK(coll_gpu_stream_create(&c->stream[r], 1));
    CHECK(cudaMalloc((void **)&c->send[r], SPAN));
    CHECK(cudaMalloc((void **)&c->recv[r], SPAN));
  }
  c->nrings = 1 + (int)rnd_below(4);
  for (int g = 0; g < c->nrings; ++g) {
    uint16_t *ring = c->rings + g * n;
    for (int i = 0; i < n; ++i) ring[i] = (uint16_t)i;
    for (int i = n - 1; i > 0; --i) { /* Fisher-Yates */
      int j = (int)rnd_below((size_t)i + 1);
      uint16_t t = ring[i];
      ring[i] = ring[j];
      ring[j] = t;
    }
  }
  for (int r = 0; r < n; ++r) {
    CHECK(cudaSetDevice(c->dev[r]));
    static coll_gpu_dev_conns_t conns;
    KCHECK(coll_gpu_dev_comm_setup(&c->comm[r], &conns, r, n, &c->layout, c->scratch, c->nrings, 1, c->rings,
                                   (coll_gpu_dev_status_t *)c->status_dev[r], (volatile uint8_t *)c->waiting_dev[r],
                                   (uint64_t)HANG_S * 1000 * 1000 * 1000, 0));
    coll_gpu_dev_ipc_conns(&c->comm[r], &conns, c->scratch);
    KCHECK(coll_gpu_dev_comm_upload(&c->comm[r], &conns, c->nrings, c->rings));
  }
}

static void comm_fini(comm_t *c) {
  for (int r = 0; r < c->n; ++r) {
    CHECK(cudaSetDevice(c->dev[r]));
    KCHECK(coll_gpu_stream_destroy(c->stream[r]));
    KCHECK(coll_gpu_host_mapped_free(c->status[r]));
    KCHECK(coll_gpu_host_mapped_free(c->waiting[r]));
    KCHECK(coll_gpu_dev_free(c->scratch[r]));
    CHECK(cudaFree(c->send[r]));
    CHECK(cudaFree(c->recv[r]));
  }
}

typedef struct {
  coll_gpu_coll_t coll;
  coll_gpu_algo_t algo;
  int combo;                        /* the reductions' type and op; the moves copy bytes */
  size_t count;                     /* elements (the moves: bytes) of the buffer or of one block */
  size_t block;                     /* allgather, alltoall: bytes from one block to the next */
  coll_gpu_range_t blocks[MAX_SIM]; /* reduce-scatter: rank q's elements of the send buffer */
  size_t each;                      /* beyond COLL_GPU_MAX_DIRECT ranks: blocks[q] is q * each + [0, count) */
  int root, nchannels, inplace;
  size_t chunk; /* ring bytes per step: 0 (a whole slot) or a multiple of 16 below it */
  size_t send_off, recv_off;
  uint16_t node[MAX_SIM]; /* the tree: each rank's node, its lowest rank (the engine's nodes) */
} call_t;

static int is_move(coll_gpu_coll_t coll) {
  return coll == COLL_GPU_COLL_BCAST || coll == COLL_GPU_COLL_ALLGATHER || coll == COLL_GPU_COLL_ALLTOALL;
}
/* Bytes of one element of the call's buffers. */
static size_t elem_size(const call_t *k) { return is_move(k->coll) ? 1 : type_size(COMBOS[k->combo].type); }

/* The algorithms the kernels run for a collective of n ranks: two-shot is allreduce's (alltoall's "ring" is pairwise
 * beyond 2 ranks), Bruck's and the pairwise allgather's and the tree allreduce where the point-to-point connections
 * are (3 to COLL_GPU_MAX_DIRECT ranks; the engine runs them across nodes only, but their kernels take whatever the
 * connections reach). */
static int algo_runs(coll_gpu_coll_t coll, coll_gpu_algo_t algo, int n) {
  /* the chain: the engine's two RING calls, no kernel of its own; the allgather: a RING allgather, then a kernel with
   * no peers (test_gpu_allreduce takes it across virtual nodes) */
  if (coll_gpu_algo_composed(algo)) return 0;
  if (algo == COLL_GPU_ALGO_BRUCK || algo == COLL_GPU_ALGO_PAIRWISE)
    return coll == COLL_GPU_COLL_ALLGATHER && n >= 3 && n <= COLL_GPU_MAX_DIRECT;
  if (algo == COLL_GPU_ALGO_TREE) return coll == COLL_GPU_COLL_ALLREDUCE && n >= 3 && n <= COLL_GPU_MAX_DIRECT;
  return algo != COLL_GPU_ALGO_TWOSHOT || coll == COLL_GPU_COLL_ALLREDUCE;
}

/* A call that has not finished after HANG_S seconds is aborted through the status words, as the host
 * side of coll/gpu would: it fails the test instead of hanging it. Returns 1 if it had to. */
static int hung(comm_t *c, const char *what) {
  const time_t deadline = time(NULL) + HANG_S;
  for (int r = 0; r < c->n; ++r) {
    CHECK(cudaSetDevice(c->dev[r]));
    cudaError_t q;
    while ((q = cudaStreamQuery((cudaStream_t)c->stream[r])) == cudaErrorNotReady && time(NULL) < deadline) usleep(100);
    if (q == cudaErrorNotReady) {
      fprintf(stderr, "FAIL %s: not finished after %d s; aborted\n", what, HANG_S);
      for (int k = 0; k < c->n; ++k) c->status[k]->abort = 1;
      return 1;
    }
  }
  return 0;
}

static void describe(const comm_t *c, const call_t *k, char *s, size_t len) {
  int at = snprintf(s, len, "%d ranks, %s %s", c->n, coll_gpu_coll_name(k->coll), coll_gpu_algo_name(k->algo));
  if (!is_move(k->coll)) at += snprintf(s + at, len - at, ", %s", COMBOS[k->combo].name);
  if (k->coll == COLL_GPU_COLL_REDUCE_SCATTER) {
    at += snprintf(s + at, len - at, ", blocks");
    for (int q = 0; q < c->n && at < (int)len; ++q)
      at += snprintf(s + at, len - at, " %zu+%zu", k->blocks[q].begin, k->blocks[q].count);
  } else {
    at += snprintf(s + at, len - at, ", count %zu", k->count);
  }
  if (k->coll == COLL_GPU_COLL_ALLGATHER || k->coll == COLL_GPU_COLL_ALLTOALL)
    at += snprintf(s + at, len - at, ", block %zu", k->block);
  if (k->coll == COLL_GPU_COLL_BCAST || k->coll == COLL_GPU_COLL_REDUCE)
    at += snprintf(s + at, len - at, ", root %d", k->root);
  if (k->algo == COLL_GPU_ALGO_TREE) {
    at += snprintf(s + at, len - at, ", nodes");
    for (int q = 0; q < c->n && at < (int)len; ++q) at += snprintf(s + at, len - at, " %d", k->node[q]);
  }
  at += snprintf(s + at, len - at, ", %d channels, chunk %zu, offsets %zu/%zu%s, rings", k->nchannels, k->chunk,
                 k->send_off, k->recv_off, k->inplace ? ", in place" : "");
  for (int g = 0; g < c->nrings && at < (int)len; ++g) {
    at += snprintf(s + at, len - at, g == 0 ? " [" : " | [");
    for (int i = 0; i < c->n && at < (int)len; ++i)
      at += snprintf(s + at, len - at, i ? " %d" : "%d", c->rings[g * c->n + i]);
    at += snprintf(s + at, len - at, "]");
  }
}

/* Most blocks one rank's kernel may use so that all ranks sharing a GPU fit on it at once. */
static int block_budget(const comm_t *c) {
  const int per_gpu = (c->n + ndev - 1) / ndev;
  return sms_min / per_gpu;
}

static call_t draw(const comm_t *c) {
  call_t k;
  memset(&k, 0, sizeof(k));
  const int n = c->n;
  const int rings_only = n > COLL_GPU_MAX_DIRECT; /* no direct algorithm, no alltoall */
  do k.coll = (coll_gpu_coll_t)rnd_below(COLL_GPU_NCOLLS);
  while (rings_only && k.coll == COLL_GPU_COLL_ALLTOALL);
  do k.algo = (coll_gpu_algo_t)rnd_below(COLL_GPU_NALGOS);
  while (!algo_runs(k.coll, k.algo, n) || (rings_only && k.algo != COLL_GPU_ALGO_RING) ||
         (k.algo == COLL_GPU_ALGO_TREE && block_budget(c) < 2 * COLL_GPU_TREES));
  k.combo = (int)rnd_below(NCOMBOS);
  k.root = (int)rnd_below((size_t)n);
  const size_t sz = elem_size(&k);
  const int budget = block_budget(c);
  /* the largest part one rank has for one peer */
  size_t max_bytes = MAX_BYTES;
  if (k.algo == COLL_GPU_ALGO_ONESHOT) {
    max_bytes = c->layout.ll_bytes;
    if ((size_t)budget * 4096 < max_bytes) max_bytes = (size_t)budget * 4096; /* a block per 4 KiB */
  } else if (k.algo == COLL_GPU_ALGO_TWOSHOT) {
    max_bytes = c->layout.twoshot_bytes;
  }
  /* and the buffers must hold n blocks with their gaps */
  const size_t gap_max = 64, room = (MAX_BYTES - 16) / n - gap_max * sz;
  if (k.coll == COLL_GPU_COLL_ALLGATHER || k.coll == COLL_GPU_COLL_ALLTOALL || k.coll == COLL_GPU_COLL_REDUCE_SCATTER)
    max_bytes = max_bytes < room ? max_bytes : room;
  /* a third tiny, a third to 64 KiB, a third to the limit */
  const size_t bytes_cap = (size_t[]){64, 64 << 10, max_bytes}[rnd_below(3)];
  const size_t cap = (bytes_cap < max_bytes ? bytes_cap : max_bytes) / sz;
  k.count = 1 + rnd_below(cap);
  k.block = k.count + (rnd_below(2) ? 0 : rnd_below(gap_max));
  /* alltoall runs two blocks per channel (2 ranks) or per connection (pairwise: at most 2 x the channels), as the
   * pairwise allgather does */
  const int ch_budget =
      (k.coll == COLL_GPU_COLL_ALLTOALL && k.algo == COLL_GPU_ALGO_RING) || k.algo == COLL_GPU_ALGO_PAIRWISE
          ? budget / 2
          : budget;
  int max_ch = ch_budget < c->layout.nchannels ? ch_budget : c->layout.nchannels;
  k.nchannels = k.algo == COLL_GPU_ALGO_BRUCK ? 1 : 1 + (int)rnd_below((size_t)max_ch); /* Bruck's one block */
  if (k.algo == COLL_GPU_ALGO_TREE) { /* an up and a down block a tree; ranks in random nodes of 1 to n */
    k.nchannels = 2 * COLL_GPU_TREES;
    int group[MAX_SIM];
    const int groups = 1 + (int)rnd_below((size_t)n);
    for (int q = 0; q < n; ++q) group[q] = q < groups ? q : (int)rnd_below((size_t)groups);
    for (int q = n - 1; q > 0; --q) { /* shuffled: a node's ranks need not be neighbours */
      const int j = (int)rnd_below((size_t)q + 1), g = group[q];
      group[q] = group[j];
      group[j] = g;
    }
    for (int q = 0; q < n; ++q) { /* a node's id: its lowest rank */
      int low = 0;
      while (group[low] != group[q]) ++low;
      k.node[q] = (uint16_t)low;
    }
  }
  k.chunk = rnd_below(2) ? 0 : 16 * (1 + rnd_below(c->layout.slot_bytes / 16));
  const size_t fewest = (k.count * sz / (size_t)k.nchannels / 256 + 15) / 16 * 16; /* at most ~256 steps */
  if (k.chunk != 0 && k.chunk < fewest) k.chunk = fewest;
  /* in place where MPI has it: not for alltoall here (the engine stages it); a bcast always is */
  k.inplace = k.coll != COLL_GPU_COLL_ALLTOALL && k.coll != COLL_GPU_COLL_BCAST && rnd_below(4) == 0;
  if (k.coll == COLL_GPU_COLL_REDUCE_SCATTER && (rings_only || (k.algo == COLL_GPU_ALGO_ONESHOT && rnd_below(2)))) {
    /* equal blocks (beyond COLL_GPU_MAX_DIRECT ranks, and the one-shot calls of equal counts), back to back in place,
     * else now and then with gaps (a piece of a longer call) */
    k.each = k.count + (k.inplace || rnd_below(2) ? 0 : rnd_below(gap_max));
    for (int q = 0; q < n; ++q) k.blocks[q] = (coll_gpu_range_t){(size_t)q * k.each, k.count};
  } else if (k.coll == COLL_GPU_COLL_REDUCE_SCATTER) {
    /* in place: equal blocks, back to back (MPI_Reduce_scatter_block); else any lengths, some empty, with
     * gaps, as the engine's pieces of a longer call give */
    size_t begin = 0;
    for (int q = 0; q < n; ++q) {
      if (!k.inplace) begin += rnd_below(2) ? 0 : rnd_below(gap_max);
      k.blocks[q].begin = begin;
      k.blocks[q].count = k.inplace ? k.count : rnd_below(4) == 0 ? 0 : rnd_below(cap + 1);
      begin += k.blocks[q].count;
    }
  }
  k.send_off = rnd_below(2) ? 0 : rnd_below(16);
  k.recv_off = k.inplace ? k.send_off : (rnd_below(2) ? 0 : rnd_below(16));
  return k;
}

/* Bytes of rank r's input, from its send pointer. */
static size_t input_bytes(const comm_t *c, const call_t *k, int r) {
  const size_t sz = elem_size(k);
  switch (k->coll) {
    case COLL_GPU_COLL_BCAST:
      return r == k->root ? k->count : 0;
    case COLL_GPU_COLL_ALLTOALL:
      return (size_t)(c->n - 1) * k->block + k->count;
    case COLL_GPU_COLL_REDUCE_SCATTER: {
      size_t end = 0;
      for (int q = 0; q < c->n; ++q)
        if (k->blocks[q].begin + k->blocks[q].count > end) end = k->blocks[q].begin + k->blocks[q].count;
      return end * sz;
    }
    default:
      return k->count * sz;
  }
}

/* Whether rank r's input lives in its receive buffer: MPI_IN_PLACE (a reduce's at the root only), and a
 * bcast's root. */
static int input_in_recv(const call_t *k, int r) {
  if (k->coll == COLL_GPU_COLL_BCAST) return 1;
  if (k->coll == COLL_GPU_COLL_REDUCE) return k->inplace && r == k->root;
  return k->inplace;
}

/* Offset of rank r's input in its buffer (input_in_recv: the receive buffer; else the send buffer). */
static size_t input_at(const call_t *k, int r) {
  if (!input_in_recv(k, r)) return GUARD + k->send_off;
  return GUARD + k->recv_off + (k->coll == COLL_GPU_COLL_ALLGATHER ? (size_t)r * k->block : 0);
}

/* Host images of one call, SPAN bytes per rank. */
typedef struct {
  unsigned char *send[MAX_SIM], *recv[MAX_SIM]; /* as written before the call */
  unsigned char *want[MAX_SIM];                 /* the receive buffer after it */
  unsigned char *got;
} images_t;

/* The receive buffers the call must leave: the host reference. */
static void expect(const comm_t *c, const call_t *k, images_t *im) {
  const int n = c->n;
  const size_t sz = elem_size(k), out = GUARD + k->recv_off;
  const unsigned char *in[MAX_SIM];
  for (int r = 0; r < n; ++r) {
    memcpy(im->want[r], im->recv[r], SPAN);
    in[r] = (input_in_recv(k, r) ? im->recv[r] : im->send[r]) + input_at(k, r);
  }
  const combo_t *cb = &COMBOS[k->combo];
  switch (k->coll) {
    case COLL_GPU_COLL_ALLREDUCE:
      fold(cb, im->want[0] + out, in, n, k->count);
      for (int r = 1; r < n; ++r) memcpy(im->want[r] + out, im->want[0] + out, k->count * sz);
      break;
    case COLL_GPU_COLL_BCAST:
      for (int r = 0; r < n; ++r) memcpy(im->want[r] + out, in[k->root], k->count);
      break;
    case COLL_GPU_COLL_ALLGATHER:
      for (int r = 0; r < n; ++r)
        for (int s = 0; s < n; ++s) memcpy(im->want[r] + out + (size_t)s * k->block, in[s], k->count);
      break;
    case COLL_GPU_COLL_ALLTOALL:
      for (int r = 0; r < n; ++r)
        for (int q = 0; q < n; ++q)
          memcpy(im->want[q] + out + (size_t)r * k->block, in[r] + (size_t)q * k->block, k->count);
      break;
    case COLL_GPU_COLL_REDUCE:
      fold(cb, im->want[k->root] + out, in, n, k->count);
      break;
    default: { /* reduce-scatter */
      for (int q = 0; q < n; ++q) {
        const unsigned char *part[MAX_SIM];
        for (int r = 0; r < n; ++r) part[r] = in[r] + k->blocks[q].begin * sz;
        if (k->blocks[q].count != 0) fold(cb, im->want[q] + out, part, n, k->blocks[q].count);
      }
    }
  }
}

/* The first byte where got and want differ, named against the call's output; 0 if none. */
static int compare(const char *what, const char *buffer, int r, const unsigned char *got, const unsigned char *want,
                   size_t out) {
  for (size_t i = 0; i < SPAN; ++i)
    if (got[i] != want[i]) {
      fprintf(stderr, "FAIL %s: rank %d's %s buffer differs at byte %lld from its output: 0x%02x, not 0x%02x\n", what,
              r, buffer, (long long)i - (long long)out, got[i], want[i]);
      return 1;
    }
  return 0;
}

/* Runs one call on every rank; returns the number of failed checks (reported on stderr). */
static int run_call(comm_t *c, const call_t *k, images_t *im) {
  const int n = c->n;
  char what[768];
  describe(c, k, what, sizeof(what));

  for (int r = 0; r < n; ++r) {
    memset(im->send[r], POISON, SPAN);
    memset(im->recv[r], POISON, SPAN);
    unsigned char *in = (input_in_recv(k, r) ? im->recv[r] : im->send[r]) + input_at(k, r);
    const size_t bytes = input_bytes(c, k, r);
    if (is_move(k->coll))
      gen_bytes(in, bytes);
    else
      gen(&COMBOS[k->combo], in, bytes / elem_size(k));
    CHECK(cudaSetDevice(c->dev[r]));
    CHECK(cudaMemcpy(c->send[r], im->send[r], SPAN, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(c->recv[r], im->recv[r], SPAN, cudaMemcpyHostToDevice));
  }
  expect(c, k, im);
  if ((uint32_t)++c->seq == 0) ++c->seq;
  coll_gpu_work_t p[MAX_SIM];
  for (int r = 0; r < n; ++r) {
    coll_gpu_work_t *q = &p[r];
    memset(q, 0, sizeof(*q));
    q->coll = k->coll;
    q->root = k->root;
    q->recvbuf = c->recv[r] + GUARD + k->recv_off;
    q->sendbuf = (input_in_recv(k, r) ? c->recv[r] : c->send[r]) + input_at(k, r);
    q->count = k->count;
    q->block = k->block;
    memcpy(q->blocks, k->blocks, sizeof(q->blocks));
    q->each = k->each;
    q->type = is_move(k->coll) ? COLL_GPU_UINT8 : COMBOS[k->combo].type;
    q->op = is_move(k->coll) ? COLL_GPU_SUM : COMBOS[k->combo].op;
    q->algo = k->algo;
    q->nchannels = k->nchannels;
    q->chunk = k->chunk;
    q->seq = c->seq;
    if (k->algo == COLL_GPU_ALGO_TREE) { /* the engine's trees over the first ring and the call's nodes */
      coll_gpu_rings_t rings = {.nrings = 1, .n = n, .span = 1, .order = (uint16_t *)c->rings};
      if (!coll_gpu_rings_trees(&rings, k->node, r, q->tree_up, q->tree_down)) {
        fprintf(stderr, "FAIL %s: no trees\n", what);
        return 1;
      }
    }
    CHECK(cudaSetDevice(c->dev[r]));
    KCHECK(coll_gpu_work_launch(&c->comm[r], q, c->stream[r]));
  }
  int failed = hung(c, what);
  for (int r = 0; r < n; ++r) {
    CHECK(cudaSetDevice(c->dev[r]));
    KCHECK(coll_gpu_stream_sync(c->stream[r]));
    const int blocks = coll_gpu_work_blocks(&c->comm[r], &p[r]);
    for (int b = 0; b < blocks; ++b)
      if (c->status[r]->done[b] != c->seq) {
        fprintf(stderr, "FAIL %s: rank %d block %d wrote done %llu, not %llu\n", what, r, b,
                (unsigned long long)c->status[r]->done[b], (unsigned long long)c->seq);
        ++failed;
        break;
      }
    if (c->status[r]->error != COLL_GPU_KERR_NONE) {
      fprintf(stderr, "FAIL %s: rank %d reports an aborted wait\n", what, r);
      ++failed;
    }
    CHECK(cudaMemcpy(im->got, c->recv[r], SPAN, cudaMemcpyDeviceToHost));
    failed += compare(what, "receive", r, im->got, im->want[r], GUARD + k->recv_off);
    CHECK(cudaMemcpy(im->got, c->send[r], SPAN, cudaMemcpyDeviceToHost));
    failed += compare(what, "send", r, im->got, im->send[r], GUARD + k->send_off);
  }
  return failed;
}

int main(int argc, char **argv) {
  uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  int calls = 60, verbose = 0;
  for (int o; (o = getopt(argc, argv, "s:n:v")) != -1;) {
    if (o == 's')
      seed = strtoull(optarg, NULL, 0);
    else if (o == 'n')
      calls = atoi(optarg);
    else if (o == 'v')
      verbose = 1;
    else {
      fprintf(stderr, "usage: %s [-s SEED] [-n CALLS-PER-RANK-COUNT] [-v]\n", argv[0]);
      return 2;
    }
  }
  rng_state = seed;
  CHECK(cudaGetDeviceCount(&ndev));
  if (ndev > COLL_GPU_MAX_DIRECT) ndev = COLL_GPU_MAX_DIRECT;
  sms_min = 1 << 30;
  for (int d = 0; d < ndev; ++d) {
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
    if (sms < sms_min) sms_min = sms;
    CHECK(cudaSetDevice(d));
    for (int e = 0; e < ndev; ++e) {
      int can = 0;
      if (e == d) continue;
      CHECK(cudaDeviceCanAccessPeer(&can, d, e));
      if (!can) {
        fprintf(stderr, "GPU %d cannot access GPU %d: the simulated ranks use GPU 0 only\n", d, e);
        ndev = 1;
        break;
      }
      cudaError_t err = cudaDeviceEnablePeerAccess(e, 0);
      if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) CHECK(err);
    }
  }
  printf("seed %llu, %d GPU(s), %d multiprocessors each at least, %d calls per rank count\n", (unsigned long long)seed,
         ndev, sms_min, calls);

  images_t im;
  for (int r = 0; r < MAX_SIM; ++r) {
    im.send[r] = malloc(SPAN);
    im.recv[r] = malloc(SPAN);
    im.want[r] = malloc(SPAN);
  }
  im.got = malloc(SPAN);
  int failed = 0, checked = 0;
  static const int sizes[] = {2, 3, 4, 5, 6, 7, 8, 12, 16};
  for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); ++si) {
    const int n = sizes[si];
    comm_t c;
    comm_init(&c, n);
    int ran[COLL_GPU_NCOLLS][COLL_GPU_NALGOS] = {{0}};
    for (int i = 0; i < calls; ++i) {
      call_t k = draw(&c);
      if (verbose) { /* each call before it runs: a failure's history, replayed with its seed */
        char what[768];
        describe(&c, &k, what, sizeof(what));
        printf("call %d: %s\n", i, what);
        fflush(stdout);
      }
      const int f = run_call(&c, &k, &im);
      failed += f != 0;
      ++checked;
      ++ran[k.coll][k.algo];
      if (f != 0 && c.status[0]->abort) break; /* an aborted communicator is done: a fresh one per rank count */
    }
    printf("%d ranks:", n);
    for (int coll = 0; coll < COLL_GPU_NCOLLS; ++coll) {
      printf(" %s", coll_gpu_coll_name((coll_gpu_coll_t)coll));
      for (int a = 0; a < COLL_GPU_NALGOS; ++a)
        if (algo_runs((coll_gpu_coll_t)coll, (coll_gpu_algo_t)a, n))
          printf(" %s %d", coll_gpu_algo_name((coll_gpu_algo_t)a), ran[coll][a]);
      printf(coll + 1 < COLL_GPU_NCOLLS ? ";" : "\n");
    }
    comm_fini(&c);
  }
  for (int r = 0; r < MAX_SIM; ++r) {
    free(im.send[r]);
    free(im.recv[r]);
    free(im.want[r]);
  }
  free(im.got);
  printf("%d calls, %d failed (seed %llu)\n", checked, failed, (unsigned long long)seed);
  return failed == 0 ? 0 : 1;
}
