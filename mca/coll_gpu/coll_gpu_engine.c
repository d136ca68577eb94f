/*
 * The communicator engine (coll_gpu_engine.h).
 *
 * Creation, on every rank, in the same order (every bootstrap call is made even after a local failure,
 * so the collective calls always match):
 *   1. local set-up on the buffer's device: scratch, status words, streams, the scratch's IPC handle;
 *   2. allgather of peer info: one node, at most COLL_GPU_MAX_RANKS ranks, equal parameters, every rank
 *      set up; otherwise every rank reaches the same "unavailable";
 *   3. the rings: every rank's view of the node, merged, and the ring search (coll_gpu_rings.h);
 *   4. allgather of the IPC handles; each rank opens its peers' handles;
 *   5. allgather of the open results.
 */
#include "mca/coll_gpu/coll_gpu_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/staging.h"

#define HOST_GRACE_NS 2000000000ULL /* the host waits this much longer than the kernels' own timeout */

struct coll_gpu_engine {
  coll_gpu_engine_config_t cfg;
  int rank, nranks;
  coll_gpu_meminfo_t mem;
  coll_gpu_ar_layout_t layout;
  void *scratch;
  void *peer[COLL_GPU_MAX_RANKS];
  void *stream;                 /* blocking: after the work queued on the legacy default stream, as staging is */
  void *linger_stream;          /* non-blocking: a lingering kernel holds up no other work */
  int lingering;                /* a lingering one-shot kernel may be polling for calls */
  int linger_blocks;            /* its blocks */
  uint64_t instance;            /* lingering kernels launched */
  uint32_t ticket;              /* the last ticket of status->call */
  coll_gpu_ar_status_t *status; /* host view */
  void *status_dev;             /* device view */
  uint64_t seq;
  uint64_t ring_step[COLL_GPU_MAX_CHANNELS];
  coll_gpu_rings_t rings;
};

/* Breadcrumb: a failing CUDA call is logged with file and line on its way up. */
#define CUDA_TRY(e, call, why, len)                                                                                   \
  do {                                                                                                                \
    int rc_ = (call);                                                                                                 \
    if (rc_ != 0) {                                                                                                   \
      coll_gpu_say(why, len, "%s failed: %s (%s:%d)", #call, coll_gpu_staging_error_string(rc_), __FILE__, __LINE__); \
      if ((e)->cfg.log) (e)->cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_INIT, "%s -> %d", why, rc_);                    \
      goto fail;                                                                                                      \
    }                                                                                                                 \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t config_hash(const coll_gpu_engine_config_t *c) {
  uint64_t v[] = {(uint64_t)c->tune.algorithm,
                  (uint64_t)c->tune.protocol,
                  (uint64_t)c->tune.nchannels,
                  (uint64_t)c->tune.max_channels,
                  c->tune.oneshot_max_bytes,
                  c->tune.twoshot_max_bytes,
                  c->slot_bytes};
  return coll_gpu_hash(v, sizeof(v), 0);
}

/* Step 2: this rank's resources. Returns 0 or leaves a reason in why. */
static int setup_local(coll_gpu_engine_t *e, void *ipc_handle, char *why, size_t len) {
  void *saved = NULL;
  int rc = coll_gpu_mem_ctx_enter(&e->mem, &saved);
  if (rc != 0) {
    coll_gpu_say(why, len, "cannot enter the context of device %d (CUresult %d)", e->mem.device, rc);
    return -1;
  }
  CUDA_TRY(e, coll_gpu_dev_alloc(&e->scratch, coll_gpu_ar_scratch_bytes(&e->layout)), why, len);
  CUDA_TRY(e, coll_gpu_host_mapped_alloc((void **)&e->status, &e->status_dev, sizeof(coll_gpu_ar_status_t)), why, len);
  CUDA_TRY(e, coll_gpu_stream_create(&e->stream, 0), why, len);
  CUDA_TRY(e, coll_gpu_stream_create(&e->linger_stream, 1), why, len);
  CUDA_TRY(e, coll_gpu_ipc_get(e->scratch, ipc_handle), why, len);
  coll_gpu_mem_ctx_leave(saved);
  return 0;
fail:
  coll_gpu_mem_ctx_leave(saved);
  return -1;
}

/* Spins until *word == value; 0 past *deadline. A *deadline of 0 is set at the first clock read, after
 * 1024 polls, to timeout_ns + HOST_GRACE_NS from then: a word that is already there costs no clock read,
 * and waits that share a deadline share one bound. */
static int wait_word(const volatile uint64_t *word, uint64_t value, uint64_t timeout_ns, uint64_t *deadline) {
  for (unsigned spins = 1; *word != value; ++spins) {
    if (spins % 1024 != 0) continue;
    const uint64_t t = now_ns();
    if (*deadline == 0) *deadline = t + timeout_ns + HOST_GRACE_NS;
    if (t > *deadline) return 0;
  }
  return 1;
}

static uint32_t next_ticket(uint32_t t) { return t + 1 == 0 ? 1 : t + 1; }

/* Whether a one-shot call of `blocks` blocks goes to a lingering kernel: none lingers, the one that
 * lingers has blocks enough, or it has left (then one of this call's size replaces it). Otherwise the
 * call gets a kernel of its own next to it. */
static int linger_takes(coll_gpu_engine_t *e, int blocks) {
  if (!e->lingering || blocks <= e->linger_blocks) return 1;
  if (e->status->exited != e->instance) return 0;
  /* the ticket it waited for is spent: its block 0 wrote that ticket into the scratch record that
   * tells the others to exit */
  e->lingering = 0;
  e->ticket = next_ticket(e->ticket);
  return 1;
}

/* Starts one-shot call p on a lingering kernel (coll_gpu_ar_status_t says how): hands it to the kernel
 * that lingers, else launches one. Sets *blocks to the blocks that will write done. Such kernels run on
 * a non-blocking stream, so the call first waits for the work queued on the legacy default stream, as
 * a kernel on the blocking stream would. In the current context; linger_takes said yes. */
static int linger_start(coll_gpu_engine_t *e, coll_gpu_ar_params_t *p, int *blocks, char *why, size_t why_len) {
  int rc = coll_gpu_legacy_stream_wait();
  if (rc != 0) {
    coll_gpu_say(why, why_len, "waiting for the legacy default stream failed: %s", coll_gpu_staging_error_string(rc));
    return rc;
  }
  if (e->lingering) {
    e->ticket = next_ticket(e->ticket);
    coll_gpu_ar_linger_post(e->status, e->ticket, p);
    *blocks = e->linger_blocks;
    if (e->status->leaving != e->instance) return 0; /* it will see the call */
    /* it stopped polling: once it says it exits, done[0] tells whether it took the call */
    uint64_t deadline = 0;
    if (!wait_word(&e->status->exited, e->instance, e->cfg.timeout_ns, &deadline)) {
      coll_gpu_say(why, why_len, "the lingering oneshot kernel did not exit within %.0f s", e->cfg.timeout_ns / 1e9);
      return -1;
    }
    e->lingering = 0;
    if (e->status->done[0] == p->seq) return 0;
  }
  p->linger_ns = e->cfg.linger_ns;
  p->instance = ++e->instance;
  p->ticket = next_ticket(e->ticket);
  rc = coll_gpu_ar_linger_launch(p, e->linger_stream);
  if (rc != 0) {
    coll_gpu_say(why, why_len, "the lingering oneshot kernel launch failed: %s", coll_gpu_staging_error_string(rc));
    return rc;
  }
  e->lingering = 1;
  e->linger_blocks = *blocks = coll_gpu_ar_blocks(p);
  return 0;
}

static void release(coll_gpu_engine_t *e) {
  void *saved = NULL;
  int entered = e->mem.device >= 0 && coll_gpu_mem_ctx_enter(&e->mem, &saved) == 0;
  /* errors are ignored: the application may have reset the device already */
  if (e->lingering) coll_gpu_stream_sync(e->linger_stream); /* it leaves within linger_ns */
  for (int r = 0; r < e->nranks; ++r)
    if (r != e->rank && e->peer[r] != NULL) coll_gpu_ipc_close(e->peer[r]);
  if (e->linger_stream != NULL) coll_gpu_stream_destroy(e->linger_stream);
  if (e->stream != NULL) coll_gpu_stream_destroy(e->stream);
  if (e->status != NULL) coll_gpu_host_mapped_free((void *)e->status);
  if (e->scratch != NULL) coll_gpu_dev_free(e->scratch);
  if (entered) coll_gpu_mem_ctx_leave(saved);
  free(e);
}

/* Whether every rank reported ok = 0 through an allgather of one int. */
static int all_ok(const coll_gpu_bootstrap_t *b, int mine, int *first_bad) {
  int *all = calloc((size_t)b->size, sizeof(int));
  int ok = all != NULL && b->allgather(b->ctx, &mine, all, sizeof(int)) == 0;
  for (int r = 0; ok && r < b->size; ++r)
    if (all[r] != 0) {
      ok = 0;
      *first_bad = r;
    }
  free(all);
  return ok;
}

int coll_gpu_engine_create(const coll_gpu_bootstrap_t *b, const coll_gpu_engine_config_t *cfg,
                           const coll_gpu_meminfo_t *mem, coll_gpu_engine_t **out, char *why, size_t why_len) {
  coll_gpu_engine_t *e = calloc(1, sizeof(*e));
  coll_gpu_peer_t *peers = calloc((size_t)b->size, sizeof(*peers));
  const int hsize = coll_gpu_ipc_handle_size();
  char *handles = calloc((size_t)b->size, (size_t)hsize);
  int bad = -1;
  snprintf(why, why_len, "out of host memory");
  /* a local failure still makes every collective step below, with ok = 0 */
  int local_ok = e != NULL && peers != NULL && handles != NULL;
  if (e != NULL) {
    e->cfg = *cfg;
    e->rank = b->rank;
    e->nranks = b->size;
    e->mem = *mem;
    e->layout.nranks = b->size;
    e->layout.ll_bytes = cfg->tune.oneshot_max_bytes;
    e->layout.twoshot_bytes = cfg->tune.twoshot_max_bytes;
    e->layout.slot_bytes = cfg->slot_bytes;
    e->layout.nchannels = cfg->tune.max_channels;
  }

  /* 1. local set-up (only where the communicator can possibly qualify) */
  coll_gpu_peer_t me = {.host = coll_gpu_host_id(), .pid = 0, .device = mem->device};
  me.pid = (int32_t)getpid();
  me.config_hash = config_hash(cfg);
  if (local_ok && b->size >= 2 && b->size <= COLL_GPU_MAX_RANKS) {
    local_ok = coll_gpu_device_identity(mem->device, (char *)me.uuid, me.busid) == 0 &&
               setup_local(e, handles + (size_t)b->rank * hsize, why, why_len) == 0;
  }
  me.ok = local_ok;

  /* 2. peer info */
  if (peers == NULL || coll_gpu_peers_exchange(b, &me, peers) != 0) {
    if (peers != NULL) snprintf(why, why_len, "the peer info allgather failed");
    goto unavailable;
  }
  if (b->size < 2) {
    snprintf(why, why_len, "a single rank needs no GPU path");
    goto unavailable;
  }
  if (b->size > COLL_GPU_MAX_RANKS) {
    snprintf(why, why_len, "%d ranks: the GPU path takes at most %d", b->size, COLL_GPU_MAX_RANKS);
    goto unavailable;
  }
  if (!coll_gpu_peers_one_node(peers, b->size)) {
    snprintf(why, why_len, "the ranks span several nodes (the network path is not built yet)");
    goto unavailable;
  }
  for (int r = 0; r < b->size; ++r) {
    if (peers[r].config_hash != peers[0].config_hash) {
      snprintf(why, why_len, "rank %d has other coll_gpu allreduce parameters than rank 0: set them alike", r);
      goto unavailable;
    }
    if (!peers[r].ok) {
      if (r != b->rank) snprintf(why, why_len, "rank %d could not set up its GPU", r);
      goto unavailable;
    }
  }

  /* 3. the rings */
  if (coll_gpu_rings_compute(b, peers, &cfg->topo, &e->rings, why, why_len) != 0) goto unavailable;
  if (why[0] != '\0' && cfg->log != NULL)
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "comm %s: rings in rank order: %s", cfg->name, why);

  /* 4. IPC handles: every rank's, then open the peers' */
  if (b->allgather(b->ctx, handles + (size_t)b->rank * hsize, handles, (size_t)hsize) != 0) {
    snprintf(why, why_len, "the IPC handle allgather failed");
    goto unavailable;
  }
  int opened = 0;
  {
    void *saved = NULL;
    const int entered = coll_gpu_mem_ctx_enter(&e->mem, &saved) == 0;
    opened = entered;
    for (int r = 0; opened && r < b->size; ++r) {
      if (r == b->rank) {
        e->peer[r] = e->scratch;
        continue;
      }
      int rc = coll_gpu_ipc_open(handles + (size_t)r * hsize, &e->peer[r]);
      if (rc != 0) {
        e->peer[r] = NULL;
        snprintf(why, why_len, "cannot open the IPC handle of rank %d (GPU %s): %s", r, peers[r].busid,
                 coll_gpu_staging_error_string(rc));
        opened = 0;
      }
    }
    if (entered) coll_gpu_mem_ctx_leave(saved);
  }
  /* 5. everyone opened everything */
  if (!all_ok(b, opened ? 0 : 1, &bad)) {
    if (opened) snprintf(why, why_len, "rank %d could not map its peers' memory", bad);
    goto unavailable;
  }
  if (cfg->log != NULL) {
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
             "comm %s: GPU allreduce on device %d (%s), %d ranks, %zu bytes of scratch", cfg->name, mem->device,
             me.busid, b->size, coll_gpu_ar_scratch_bytes(&e->layout));
    if (e->rings.speed > 0)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "comm %s: %d ring(s) from the topology, the first at %.1f GB/s",
               cfg->name, e->rings.nrings, e->rings.speed);
    for (int ch = 0; ch < cfg->tune.max_channels; ++ch) {
      char line[16 * COLL_GPU_MAX_RANKS];
      int len = 0;
      for (int r = 0; r < b->size; ++r)
        len += snprintf(line + len, sizeof(line) - len, " %d", e->rings.order[ch % e->rings.nrings][r]);
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "Channel %02d/%02d :%s", ch, cfg->tune.max_channels, line);
    }
  }
  free(peers);
  free(handles);
  *out = e;
  return COLL_GPU_ENGINE_OK;

unavailable:
  if (e != NULL) release(e);
  free(peers);
  free(handles);
  *out = NULL;
  return COLL_GPU_ENGINE_UNAVAILABLE;
}

void coll_gpu_engine_destroy(coll_gpu_engine_t *e) {
  if (e != NULL) release(e);
}

int coll_gpu_engine_owns(const coll_gpu_engine_t *e, const coll_gpu_meminfo_t *mem) {
  return mem->kind == COLL_GPU_MEM_DEVICE && mem->device == e->mem.device && mem->ctx == e->mem.ctx;
}

int coll_gpu_engine_allreduce(coll_gpu_engine_t *e, const void *sendbuf, void *recvbuf, size_t count,
                              coll_gpu_dtype_t type, coll_gpu_redop_t op, char *why, size_t why_len) {
  const size_t bytes = count * coll_gpu_dtype_size(type);
  const coll_gpu_choice_t choice = coll_gpu_tune_choose(&e->cfg.tune, e->nranks, bytes);
  /* the LL flag is the low 32 bits of seq: never 0 */
  if ((uint32_t)++e->seq == 0) ++e->seq;
  coll_gpu_ar_params_t p;
  memset(&p, 0, sizeof(p));
  p.sendbuf = sendbuf;
  p.recvbuf = recvbuf;
  p.count = count;
  p.type = type;
  p.op = op;
  p.algo = choice.algo;
  p.nchannels = choice.nchannels;
  p.seq = e->seq;
  p.timeout_ns = e->cfg.timeout_ns;
  p.rank = e->rank;
  p.nranks = e->nranks;
  p.layout = e->layout;
  memcpy(p.peer_scratch, e->peer, sizeof(p.peer_scratch));
  memcpy(p.ring_step, e->ring_step, sizeof(p.ring_step));
  p.nrings = e->rings.nrings;
  memcpy(p.rings, e->rings.order, sizeof(p.rings));
  p.status = (coll_gpu_ar_status_t *)e->status_dev;
  if (e->cfg.log != NULL)
    e->cfg.log(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: allreduce seq %llu, %zu bytes: %s/%s, %d channels",
               e->cfg.name, (unsigned long long)p.seq, bytes, coll_gpu_algo_name(choice.algo),
               coll_gpu_proto_name(choice.proto), choice.nchannels);

  void *saved = NULL;
  int rc = coll_gpu_mem_ctx_enter(&e->mem, &saved);
  if (rc != 0) {
    coll_gpu_say(why, why_len, "cannot enter the context of device %d (CUresult %d)", e->mem.device, rc);
    return COLL_GPU_ENGINE_ERROR;
  }
  int blocks = coll_gpu_ar_blocks(&p);
  const int linger = choice.algo == COLL_GPU_ALGO_ONESHOT && e->cfg.linger_ns > 0 &&
                     blocks <= COLL_GPU_LINGER_MAX_BLOCKS && linger_takes(e, blocks);
  if (linger) {
    rc = linger_start(e, &p, &blocks, why, why_len);
  } else {
    rc = coll_gpu_ar_launch(&p, e->stream);
    if (rc != 0)
      coll_gpu_say(why, why_len, "the %s kernel launch failed: %s", coll_gpu_algo_name(choice.algo),
                   coll_gpu_staging_error_string(rc));
  }
  coll_gpu_mem_ctx_leave(saved);
  if (rc != 0) return COLL_GPU_ENGINE_ERROR;
  memcpy(e->ring_step, p.ring_step, sizeof(e->ring_step));

  /* wait for every block's done word, bounded */
  uint64_t deadline = 0;
  for (int blk = 0; blk < blocks; ++blk)
    if (!wait_word(&e->status->done[blk], p.seq, e->cfg.timeout_ns, &deadline)) {
      coll_gpu_say(why, why_len, "the %s kernel did not finish within %.0f s", coll_gpu_algo_name(choice.algo),
                   e->cfg.timeout_ns / 1e9);
      return COLL_GPU_ENGINE_ERROR;
    }
  if (e->status->error != COLL_GPU_KERR_NONE) {
    uint8_t missing[COLL_GPU_MAX_RANKS];
    for (int r = 0; r < COLL_GPU_MAX_RANKS; ++r) missing[r] = e->status->missing[r];
    coll_gpu_say(why, why_len, "%s/%s, %zu bytes: no data within %.0f s from ranks", coll_gpu_algo_name(choice.algo),
                 coll_gpu_proto_name(choice.proto), bytes, e->cfg.timeout_ns / 1e9);
    coll_gpu_append_ranks(why, why_len, missing, e->nranks);
    return COLL_GPU_ENGINE_ERROR;
  }
  return COLL_GPU_ENGINE_OK;
}
