/*
 * The allreduce tuning model (coll_gpu_tune.h).
 *
 * time = latency + bytes moved per rank / bandwidth, with the constants below (per GPU, over NVLink on
 * H200 through NVSwitch); latencies count the flag round trips each algorithm waits for (a flag written
 * into a peer's memory through CUDA IPC is seen about 0.7 us later on that machine).
 */
#include "mca/coll_gpu/coll_gpu_tune.h"

/* Constants from the benchmark on 2 H200 (coll_gpu_allreduce_bench, launch cost of ~11 us taken out):
 * two-shot (a block per 16 KiB) moved 4 MiB in ~22 us and 8 MiB in ~37; the ring (64 channels, 512 KiB
 * slots) 8 MiB in ~43 us, 16 MiB in ~70 and 1 GiB at 311-316 GB/s bus bandwidth; LL one-shot stays
 * within 3 us of its 8-byte time up to 128 KiB. */
#define FLAG_US 0.7      /* one flag round: write into a peer, seen there */
#define LL_BW 150e3      /* bytes/us of LL data: half of each line is flags */
#define SIMPLE_BW 220e3  /* bytes/us of the two-shot kernel's bus traffic */
#define RING_BW 310e3    /* bytes/us of the ring's bus traffic at large sizes */
#define RING_STEP_US 8.0 /* per dependent ring step: wait, barrier, data, release, seen by the next rank */
/* two-shot: a block per 16 KiB of message. Blocks are latency-bound (each waits for its peers' flags), so
 * more of them pay: on 2 H200, 512 KiB took 21 us with 32 blocks against 33 with 8, 1 MiB 23.5 us with 64
 * against 33 with 16, 2-8 MiB 2-4% less again with 128 than with 64 */
#define TWOSHOT_BLOCK_BYTES (16 << 10)
#define TWOSHOT_MAX_BLOCKS (2 * COLL_GPU_MAX_CHANNELS) /* the flags and done words it has */

coll_gpu_proto_t coll_gpu_algo_proto(coll_gpu_algo_t algo) {
  return algo == COLL_GPU_ALGO_ONESHOT ? COLL_GPU_PROTO_LL : COLL_GPU_PROTO_SIMPLE;
}

double coll_gpu_tune_time_us(coll_gpu_algo_t algo, int nranks, size_t bytes, int nchannels) {
  double n = nranks, b = (double)bytes;
  (void)nchannels;
  switch (algo) {
    case COLL_GPU_ALGO_ONESHOT: /* one flag round; every rank pushes its data to n - 1 peers */
      return FLAG_US + (n - 1) * b / LL_BW;
    case COLL_GPU_ALGO_TWOSHOT: /* two flag rounds; 2 (n - 1) / n of the data out */
      return 2 * FLAG_US + 2 * (n - 1) / n * b / SIMPLE_BW;
    case COLL_GPU_ALGO_RING: /* 2 (n - 1) steps to fill the pipeline; 2 (n - 1) / n of the data out */
      return 2 * (n - 1) * RING_STEP_US + 2 * (n - 1) / n * b / RING_BW;
    default:
      return 1e30;
  }
}

int coll_gpu_tune_fits(const coll_gpu_tune_config_t *c, coll_gpu_algo_t algo, size_t bytes) {
  switch (algo) {
    case COLL_GPU_ALGO_ONESHOT:
      return bytes <= c->oneshot_max_bytes;
    case COLL_GPU_ALGO_TWOSHOT:
      return bytes <= c->twoshot_max_bytes;
    default:
      return 1;
  }
}

/* Blocks of one call: the ring runs every channel it has FIFOs for; two-shot one block per slice. */
static int channels(const coll_gpu_tune_config_t *c, coll_gpu_algo_t algo, size_t bytes) {
  const int most = algo == COLL_GPU_ALGO_RING ? c->max_channels : TWOSHOT_MAX_BLOCKS;
  if (c->nchannels > 0) return c->nchannels < most ? c->nchannels : most;
  if (algo == COLL_GPU_ALGO_RING) return most;
  size_t want = (bytes + TWOSHOT_BLOCK_BYTES - 1) / TWOSHOT_BLOCK_BYTES;
  if (want < 1) want = 1;
  return want < (size_t)most ? (int)want : most;
}

coll_gpu_choice_t coll_gpu_tune_choose(const coll_gpu_tune_config_t *c, int nranks, size_t bytes) {
  coll_gpu_algo_t best = COLL_GPU_ALGO_RING;
  if (c->algorithm >= 0 && coll_gpu_tune_fits(c, (coll_gpu_algo_t)c->algorithm, bytes)) {
    best = (coll_gpu_algo_t)c->algorithm;
  } else {
    double best_t = 1e31;
    for (int pass = 0; pass < 2 && best_t > 1e30; ++pass) {
      /* first among the algorithms of the forced protocol, then among all */
      for (int a = 0; a < COLL_GPU_NALGOS; ++a) {
        if (!coll_gpu_tune_fits(c, (coll_gpu_algo_t)a, bytes)) continue;
        if (pass == 0 && c->protocol >= 0 && (int)coll_gpu_algo_proto((coll_gpu_algo_t)a) != c->protocol) continue;
        double t = coll_gpu_tune_time_us((coll_gpu_algo_t)a, nranks, bytes, 0);
        if (t < best_t) {
          best_t = t;
          best = (coll_gpu_algo_t)a;
        }
      }
    }
  }
  coll_gpu_choice_t ch = {best, coll_gpu_algo_proto(best), channels(c, best, bytes)};
  return ch;
}

const char *coll_gpu_algo_name(coll_gpu_algo_t algo) {
  static const char *names[] = {"oneshot", "twoshot", "ring"};
  return algo >= 0 && algo < COLL_GPU_NALGOS ? names[algo] : "?";
}

const char *coll_gpu_proto_name(coll_gpu_proto_t proto) {
  static const char *names[] = {"LL", "Simple"};
  return proto >= 0 && proto < COLL_GPU_NPROTOS ? names[proto] : "?";
}
