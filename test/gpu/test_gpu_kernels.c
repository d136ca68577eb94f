/*
 * The allreduce kernels without MPI: 2 to 8 ranks simulated in one process, each with its own scratch,
 * status words and stream, spread round-robin over the GPUs present (peer access between them). Every
 * algorithm, random counts (rounded down to the algorithm's limit), byte offsets 0 to 15, in place and
 * not, random channel counts, and rings in random orders, a different one per channel: the order the
 * topology search may hand the engine, which a node whose rings are the identity never exercises.
 * Inputs are drawn fresh, outputs and the guard bytes around them poisoned; every rank's result is
 * checked element by element against a host reference written here, bit for bit across ranks, and the
 * guards must be intact.
 *
 * The ranks' kernels spin for each other, and within one process no GPU time-slices between them, so
 * every call keeps the blocks of all ranks on a GPU within its multiprocessor count: each can then
 * hold them all at once.
 *
 * usage: test_gpu_kernels [-s SEED] [-n CALLS-PER-RANK-COUNT]
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/allreduce.h"

#define CHECK(call)                                                                                 \
  do {                                                                                              \
    cudaError_t e_ = (cudaError_t)(call);                                                           \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

enum { GUARD = 64, POISON = 0xA5, MAX_BYTES = 8 << 20 };

/* The kernels' limits for this test's layout. */
static const coll_gpu_ar_layout_t LAYOUT_TEMPLATE = {
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
static const char *ALGOS[] = {"oneshot", "twoshot", "ring"};

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

/* A simulated communicator. */
typedef struct {
  int n;
  int dev[COLL_GPU_MAX_RANKS];
  coll_gpu_ar_layout_t layout;
  void *scratch[COLL_GPU_MAX_RANKS];
  coll_gpu_ar_status_t *status[COLL_GPU_MAX_RANKS];
  void *status_dev[COLL_GPU_MAX_RANKS];
  void *stream[COLL_GPU_MAX_RANKS];
  uint64_t seq;
  unsigned char *send[COLL_GPU_MAX_RANKS], *recv[COLL_GPU_MAX_RANKS]; /* device, MAX_BYTES + 2 GUARD + 16 */
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
    CHECK(coll_gpu_dev_alloc(&c->scratch[r], coll_gpu_ar_scratch_bytes(&c->layout)));
    CHECK(coll_gpu_host_mapped_alloc((void **)&c->status[r], &c->status_dev[r], sizeof(coll_gpu_ar_status_t)));
    CHECK(coll_gpu_stream_create(&c->stream[r], 1));
    CHECK(cudaMalloc((void **)&c->send[r], MAX_BYTES + 2 * GUARD + 16));
    CHECK(cudaMalloc((void **)&c->recv[r], MAX_BYTES + 2 * GUARD + 16));
  }
}

static void comm_fini(comm_t *c) {
  for (int r = 0; r < c->n; ++r) {
    CHECK(cudaSetDevice(c->dev[r]));
    CHECK(coll_gpu_stream_destroy(c->stream[r]));
    CHECK(coll_gpu_host_mapped_free(c->status[r]));
    CHECK(coll_gpu_dev_free(c->scratch[r]));
    CHECK(cudaFree(c->send[r]));
    CHECK(cudaFree(c->recv[r]));
  }
}

typedef struct {
  coll_gpu_algo_t algo;
  int combo;
  size_t count;
  int nchannels, nrings, inplace;
  size_t send_off, recv_off;
  uint8_t rings[COLL_GPU_MAX_RINGS][COLL_GPU_MAX_RANKS];
} call_t;

/* A call that has not finished after HANG_S seconds is aborted through the status words, as the host
 * side of coll/gpu would: it fails the test instead of hanging it. Returns 1 if it had to. */
#define HANG_S 20
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
  int at =
      snprintf(s, len, "%d ranks, %s, %s, count %zu, %d channels, offsets %zu/%zu%s, rings", c->n, ALGOS[k->algo],
               COMBOS[k->combo].name, k->count, k->nchannels, k->send_off, k->recv_off, k->inplace ? ", in place" : "");
  for (int g = 0; g < k->nrings && at < (int)len; ++g) {
    at += snprintf(s + at, len - at, g == 0 ? " [" : " | [");
    for (int i = 0; i < c->n && at < (int)len; ++i) at += snprintf(s + at, len - at, i ? " %d" : "%d", k->rings[g][i]);
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
  k.algo = (coll_gpu_algo_t)rnd_below(COLL_GPU_NALGOS);
  k.combo = (int)rnd_below(NCOMBOS);
  const size_t sz = type_size(COMBOS[k.combo].type);
  const int budget = block_budget(c);
  size_t max_bytes = MAX_BYTES;
  if (k.algo == COLL_GPU_ALGO_ONESHOT) {
    max_bytes = c->layout.ll_bytes;
    if ((size_t)budget * 4096 < max_bytes) max_bytes = (size_t)budget * 4096; /* a block per 4 KiB */
  } else if (k.algo == COLL_GPU_ALGO_TWOSHOT) {
    max_bytes = c->layout.twoshot_bytes;
  }
  /* a third tiny, a third to 64 KiB, a third to the limit */
  const size_t bytes_cap = (size_t[]){64, 64 << 10, max_bytes}[rnd_below(3)];
  const size_t cap = (bytes_cap < max_bytes ? bytes_cap : max_bytes) / sz;
  k.count = 1 + rnd_below(cap);
  int max_ch = budget < c->layout.nchannels ? budget : c->layout.nchannels;
  k.nchannels = 1 + (int)rnd_below((size_t)max_ch);
  k.inplace = rnd_below(4) == 0;
  k.send_off = rnd_below(2) ? 0 : rnd_below(16);
  k.recv_off = k.inplace ? k.send_off : (rnd_below(2) ? 0 : rnd_below(16));
  k.nrings = 1 + (int)rnd_below(4);
  for (int g = 0; g < k.nrings; ++g) {
    for (int i = 0; i < c->n; ++i) k.rings[g][i] = (uint8_t)i;
    for (int i = c->n - 1; i > 0; --i) { /* Fisher-Yates */
      int j = (int)rnd_below((size_t)i + 1);
      uint8_t t = k.rings[g][i];
      k.rings[g][i] = k.rings[g][j];
      k.rings[g][j] = t;
    }
  }
  return k;
}

/* Runs one call on every rank; returns the number of failed checks (reported on stderr). */
static int run_call(comm_t *c, const call_t *k, unsigned char **host_in, unsigned char *ref, unsigned char *got,
                    unsigned char *got0) {
  const combo_t *cb = &COMBOS[k->combo];
  const size_t sz = type_size(cb->type), bytes = k->count * sz, span = MAX_BYTES + 2 * GUARD + 16;
  char what[512];
  describe(c, k, what, sizeof(what));

  for (int r = 0; r < c->n; ++r) {
    gen(cb, host_in[r], k->count);
    if (r == 0)
      memcpy(ref, host_in[0], bytes);
    else
      ref_apply(cb, ref, host_in[r], k->count);
    CHECK(cudaSetDevice(c->dev[r]));
    CHECK(cudaMemset(c->recv[r], POISON, span));
    unsigned char *in = (k->inplace ? c->recv[r] : c->send[r]) + GUARD + k->send_off;
    CHECK(cudaMemcpy(in, host_in[r], bytes, cudaMemcpyHostToDevice));
  }
  if ((uint32_t)++c->seq == 0) ++c->seq;
  for (int r = 0; r < c->n; ++r) {
    coll_gpu_ar_params_t p;
    memset(&p, 0, sizeof(p));
    p.recvbuf = c->recv[r] + GUARD + k->recv_off;
    p.sendbuf = k->inplace ? p.recvbuf : (const void *)(c->send[r] + GUARD + k->send_off);
    p.count = k->count;
    p.type = cb->type;
    p.op = cb->op;
    p.algo = k->algo;
    p.nchannels = k->nchannels;
    p.seq = c->seq;
    p.timeout_ns = (uint64_t)HANG_S * 1000 * 1000 * 1000;
    p.rank = r;
    p.nranks = c->n;
    p.layout = c->layout;
    memcpy(p.peer_scratch, c->scratch, sizeof(p.peer_scratch));
    p.nrings = k->nrings;
    memcpy(p.rings, k->rings, sizeof(p.rings));
    p.status = (coll_gpu_ar_status_t *)c->status_dev[r];
    CHECK(cudaSetDevice(c->dev[r]));
    CHECK(coll_gpu_ar_launch(&p, c->stream[r]));
  }
  int failed = hung(c, what);
  for (int r = 0; r < c->n; ++r) {
    CHECK(cudaSetDevice(c->dev[r]));
    CHECK(coll_gpu_stream_sync(c->stream[r]));
    coll_gpu_ar_params_t p = {.algo = k->algo, .nchannels = k->nchannels, .count = k->count, .type = cb->type};
    const int blocks = coll_gpu_ar_blocks(&p);
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
    CHECK(cudaMemcpy(got, c->recv[r], span, cudaMemcpyDeviceToHost));
    const unsigned char *res = got + GUARD + k->recv_off;
    for (size_t i = 0; i < GUARD + k->recv_off; ++i)
      if (got[i] != POISON) {
        fprintf(stderr, "FAIL %s: rank %d wrote %zu bytes before its output\n", what, r, GUARD + k->recv_off - i);
        ++failed;
        break;
      }
    for (size_t i = GUARD + k->recv_off + bytes; i < span; ++i)
      if (got[i] != POISON) {
        fprintf(stderr, "FAIL %s: rank %d wrote byte %zu past its output\n", what, r, i - GUARD - k->recv_off - bytes);
        ++failed;
        break;
      }
    for (size_t i = 0; i < k->count; ++i)
      if (memcmp(res + i * sz, ref + i * sz, sz) != 0) {
        fprintf(stderr, "FAIL %s: rank %d element %zu differs from the reference\n", what, r, i);
        ++failed;
        break;
      }
    if (r == 0)
      memcpy(got0, res, bytes);
    else if (memcmp(got0, res, bytes) != 0) {
      fprintf(stderr, "FAIL %s: rank %d's bytes differ from rank 0's\n", what, r);
      ++failed;
    }
  }
  return failed;
}

int main(int argc, char **argv) {
  uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  int calls = 40;
  for (int o; (o = getopt(argc, argv, "s:n:")) != -1;) {
    if (o == 's')
      seed = strtoull(optarg, NULL, 0);
    else if (o == 'n')
      calls = atoi(optarg);
    else {
      fprintf(stderr, "usage: %s [-s SEED] [-n CALLS-PER-RANK-COUNT]\n", argv[0]);
      return 2;
    }
  }
  rng_state = seed;
  CHECK(cudaGetDeviceCount(&ndev));
  if (ndev > COLL_GPU_MAX_RANKS) ndev = COLL_GPU_MAX_RANKS;
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

  unsigned char *host_in[COLL_GPU_MAX_RANKS];
  for (int r = 0; r < COLL_GPU_MAX_RANKS; ++r) host_in[r] = malloc(MAX_BYTES);
  unsigned char *ref = malloc(MAX_BYTES), *got0 = malloc(MAX_BYTES), *got = malloc(MAX_BYTES + 2 * GUARD + 16);
  int failed = 0, checked = 0;
  for (int n = 2; n <= COLL_GPU_MAX_RANKS; ++n) {
    comm_t c;
    comm_init(&c, n);
    int per_algo[COLL_GPU_NALGOS] = {0};
    for (int i = 0; i < calls; ++i) {
      call_t k = draw(&c);
      failed += run_call(&c, &k, host_in, ref, got, got0) != 0;
      ++checked;
      ++per_algo[k.algo];
    }
    printf("%d ranks: %d oneshot, %d twoshot, %d ring calls\n", n, per_algo[0], per_algo[1], per_algo[2]);
    comm_fini(&c);
  }
  for (int r = 0; r < COLL_GPU_MAX_RANKS; ++r) free(host_in[r]);
  free(ref);
  free(got0);
  free(got);
  printf("%d calls, %d failed (seed %llu)\n", checked, failed, (unsigned long long)seed);
  return failed == 0 ? 0 : 1;
}
