/*
 * The communicator engine (engine/engine.h).
 *
 * Creation, on every rank, in the same order (every bootstrap call is made even after a local failure,
 * so the collective calls always match):
 *   1. local set-up on the buffer's device: scratch, status words, streams, the scratch's IPC handle;
 *   2. allgather of peer info: one node, at most COLL_GPU_MAX_RANKS ranks, equal parameters, every rank
 *      set up; otherwise every rank reaches the same "unavailable";
 *   3. the rings: every rank's view of the node, merged, and the ring search (engine/rings.h);
 *   4. allgather of the IPC handles; each rank opens its peers' handles;
 *   5. allgather of the open results.
 */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/staging.h"

#define REPORT_GRACE_NS 1000000000ULL /* the host reports a wait 1 s after the kernels flag whom they wait for */
#define ABORT_GRACE_NS 10000000000ULL /* aborted kernels stop within microseconds: 10 s means a broken GPU */

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
  coll_gpu_rings_t rings;
  int32_t pid[COLL_GPU_MAX_RANKS];     /* every rank's process, from the peer exchange */
  uint8_t visible[COLL_GPU_MAX_RANKS]; /* 1: its process can be checked from here (same PID namespace) */
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

static uint64_t config_hash(const coll_gpu_engine_config_t *c) {
  uint64_t v[] = {(uint64_t)c->tune.algorithm,
                  (uint64_t)c->tune.protocol,
                  (uint64_t)c->tune.nchannels,
                  (uint64_t)c->tune.max_channels,
                  c->tune.oneshot_max_bytes,
                  c->tune.twoshot_max_bytes,
                  c->slot_bytes,
                  (uint64_t)c->tune.move_algorithm[COLL_GPU_COLL_BCAST],
                  (uint64_t)c->tune.move_algorithm[COLL_GPU_COLL_ALLGATHER],
                  (uint64_t)c->tune.move_algorithm[COLL_GPU_COLL_ALLTOALL],
                  (uint64_t)c->tune.move_algorithm[COLL_GPU_COLL_REDUCE],
                  (uint64_t)c->tune.move_algorithm[COLL_GPU_COLL_REDUCE_SCATTER]};
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

/* One call's wait for its kernels, over all the words it waits for. */
typedef struct {
  coll_gpu_wait_config_t cfg;
  coll_gpu_wait_t w;
  const coll_gpu_ar_params_t *call; /* the call, for messages; NULL: the lingering kernel's exit */
  coll_gpu_proto_t proto;
  uint8_t gone[COLL_GPU_MAX_RANKS]; /* peers found gone */
  uint64_t aborted_at;              /* when the kernels were told to abort; 0: they were not */
} call_wait_t;

static void call_wait_init(const coll_gpu_engine_t *e, call_wait_t *cw, const coll_gpu_ar_params_t *call,
                           coll_gpu_proto_t proto) {
  cw->cfg = e->cfg.wait;
  cw->cfg.timeout_ns += REPORT_GRACE_NS;
  coll_gpu_wait_init(&cw->w, &cw->cfg);
  cw->call = call;
  cw->proto = proto;
  memset(cw->gone, 0, sizeof(cw->gone));
  cw->aborted_at = 0;
}

/* The call a wait is for, in words (only for messages: never on a call's way). */
static void describe(const call_wait_t *cw, char *what, size_t len) {
  const coll_gpu_ar_params_t *p = cw->call;
  if (p == NULL) {
    snprintf(what, len, "the exit of the lingering one-shot kernel");
    return;
  }
  snprintf(what, len, "%s seq %llu (%zu bytes, %s/%s)", coll_gpu_coll_mpi_name(p->coll), (unsigned long long)p->seq,
           p->count * coll_gpu_dtype_size(p->type), coll_gpu_algo_name(p->algo), coll_gpu_proto_name(cw->proto));
}

/* Whether a peer's process is gone; each one found is marked in gone[]. */
static int peers_gone(const coll_gpu_engine_t *e, uint8_t *gone) {
  int any = 0;
  for (int r = 0; r < e->nranks; ++r)
    if (e->visible[r] && coll_gpu_pid_gone(e->pid[r])) any = gone[r] = 1;
  return any;
}

/* The watchdog line, once per call: whom the kernels wait for (they flag it after the timeout). */
static void watchdog(const coll_gpu_engine_t *e, const call_wait_t *cw) {
  if (e->cfg.log == NULL) return;
  uint8_t waiting[COLL_GPU_MAX_RANKS];
  for (int r = 0; r < COLL_GPU_MAX_RANKS; ++r) waiting[r] = e->status->waiting[r];
  char ranks[64] = "", what[128];
  coll_gpu_append_ranks(ranks, sizeof(ranks), waiting, e->nranks);
  describe(cw, what, sizeof(what));
  e->cfg.log(COLL_GPU_LVL_WATCHDOG, COLL_GPU_LOG_COLL,
             "comm %s: %s has waited %.0f s on the GPU for rank(s)%s, whose processes are alive: still waiting "
             "(reported once per call, after coll_gpu_timeout)",
             e->cfg.name, what, coll_gpu_wait_seconds(&cw->w), ranks[0] != '\0' ? ranks : " (not known yet)");
}

/* Waits until *word == value: as long as the peers' processes exist. One found gone makes the kernels
 * abort (status->abort), which ends their waits; the word then comes, and cw->aborted_at says so.
 * Returns 0, or -1 if the kernels did not stop within ABORT_GRACE_NS of the abort. */
static int wait_word(coll_gpu_engine_t *e, call_wait_t *cw, const volatile uint64_t *word, uint64_t value) {
  while (*word != value) {
    const int what = coll_gpu_wait_pause(&cw->w);
    if (what & COLL_GPU_WAIT_CHECK) {
      if (cw->aborted_at == 0 && peers_gone(e, cw->gone)) {
        e->status->abort = 1;
        cw->aborted_at = coll_gpu_now_ns();
      } else if (cw->aborted_at != 0 && coll_gpu_now_ns() - cw->aborted_at > ABORT_GRACE_NS) {
        return -1;
      }
    }
    if (what & COLL_GPU_WAIT_REPORT) watchdog(e, cw);
  }
  return 0;
}

/* The reason a call failed after an abort. */
static void say_gone(const call_wait_t *cw, int nranks, int stopped, char *why, size_t len) {
  char what[128];
  describe(cw, what, sizeof(what));
  coll_gpu_say(why, len, "%s: the process of rank(s)", what);
  coll_gpu_append_ranks(why, len, cw->gone, nranks);
  size_t at = strlen(why);
  snprintf(why + at, len - at, " ended before the call completed; the kernels were aborted%s",
           stopped ? "" : " and did not stop within 10 s");
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
    call_wait_t cw;
    call_wait_init(e, &cw, NULL, COLL_GPU_PROTO_LL);
    const int stopped = wait_word(e, &cw, &e->status->exited, e->instance) == 0;
    if (cw.aborted_at != 0 || !stopped) {
      say_gone(&cw, e->nranks, stopped, why, why_len);
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

  for (int r = 0; r < b->size; ++r) {
    e->pid[r] = peers[r].pid;
    e->visible[r] = r != b->rank && coll_gpu_pid_visible(peers[r].pid);
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

/* A call's parameters: the communicator's part, and the next seq. */
static void call_init(coll_gpu_engine_t *e, coll_gpu_ar_params_t *p, coll_gpu_coll_t coll,
                      const coll_gpu_choice_t *choice) {
  memset(p, 0, sizeof(*p));
  /* the LL flag is the low 32 bits of seq: never 0 */
  if ((uint32_t)++e->seq == 0) ++e->seq;
  p->coll = coll;
  p->algo = choice->algo;
  p->nchannels = choice->nchannels;
  p->seq = e->seq;
  p->timeout_ns = e->cfg.wait.timeout_ns;
  p->rank = e->rank;
  p->nranks = e->nranks;
  p->layout = e->layout;
  memcpy(p->peer_scratch, e->peer, sizeof(p->peer_scratch));
  p->nrings = e->rings.nrings;
  memcpy(p->rings, e->rings.order, sizeof(p->rings));
  p->status = (coll_gpu_ar_status_t *)e->status_dev;
}

/* Launches call p (on a lingering kernel when `linger` allows) and waits for it. */
static int run_call(coll_gpu_engine_t *e, coll_gpu_ar_params_t *p, coll_gpu_proto_t proto, int linger, char *why,
                    size_t why_len) {
  void *saved = NULL;
  int rc = coll_gpu_mem_ctx_enter(&e->mem, &saved);
  if (rc != 0) {
    coll_gpu_say(why, why_len, "cannot enter the context of device %d (CUresult %d)", e->mem.device, rc);
    return COLL_GPU_ENGINE_ERROR;
  }
  int blocks = coll_gpu_ar_blocks(p);
  linger = linger && p->algo == COLL_GPU_ALGO_ONESHOT && e->cfg.linger_ns > 0 && blocks <= COLL_GPU_LINGER_MAX_BLOCKS &&
           linger_takes(e, blocks);
  if (linger) {
    rc = linger_start(e, p, &blocks, why, why_len);
  } else {
    rc = coll_gpu_ar_launch(p, e->stream);
    if (rc != 0)
      coll_gpu_say(why, why_len, "the %s %s kernel launch failed: %s", coll_gpu_coll_name(p->coll),
                   coll_gpu_algo_name(p->algo), coll_gpu_staging_error_string(rc));
  }
  coll_gpu_mem_ctx_leave(saved);
  if (rc != 0) return COLL_GPU_ENGINE_ERROR;

  /* wait for every block's done word: as long as the peers live */
  call_wait_t cw;
  call_wait_init(e, &cw, p, proto);
  int stopped = 1;
  for (int blk = 0; blk < blocks && stopped; ++blk) stopped = wait_word(e, &cw, &e->status->done[blk], p->seq) == 0;
  if (cw.aborted_at != 0 || !stopped) {
    say_gone(&cw, e->nranks, stopped, why, why_len);
    return COLL_GPU_ENGINE_ERROR;
  }
  for (int r = 0; r < COLL_GPU_MAX_RANKS; ++r) /* flags of a long wait: cleared for the next call's watchdog */
    if (e->status->waiting[r]) e->status->waiting[r] = 0;
  return COLL_GPU_ENGINE_OK;
}

int coll_gpu_engine_allreduce(coll_gpu_engine_t *e, const void *sendbuf, void *recvbuf, size_t count,
                              coll_gpu_dtype_t type, coll_gpu_redop_t op, char *why, size_t why_len) {
  const size_t bytes = count * coll_gpu_dtype_size(type);
  const coll_gpu_choice_t choice = coll_gpu_tune_choose(&e->cfg.tune, e->nranks, bytes);
  coll_gpu_ar_params_t p;
  call_init(e, &p, COLL_GPU_COLL_ALLREDUCE, &choice);
  p.sendbuf = sendbuf;
  p.recvbuf = recvbuf;
  p.count = count;
  p.type = type;
  p.op = op;
  if (e->cfg.log != NULL)
    e->cfg.log(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: allreduce seq %llu, %zu bytes: %s/%s, %d channels",
               e->cfg.name, (unsigned long long)p.seq, bytes, coll_gpu_algo_name(choice.algo),
               coll_gpu_proto_name(choice.proto), choice.nchannels);
  return run_call(e, &p, choice.proto, 1, why, why_len);
}

int coll_gpu_engine_move(coll_gpu_engine_t *e, coll_gpu_coll_t coll, const void *sendbuf, void *recvbuf, size_t bytes,
                         int root, char *why, size_t why_len) {
  const coll_gpu_choice_t choice = coll_gpu_tune_choose_move(&e->cfg.tune, coll, e->nranks, bytes);
  /* LL calls move at most a one-shot slot per peer: larger parts go in several */
  const size_t piece = choice.algo == COLL_GPU_ALGO_ONESHOT ? e->layout.ll_bytes : bytes;
  for (size_t off = 0; off < bytes; off += piece) {
    coll_gpu_ar_params_t p;
    call_init(e, &p, coll, &choice);
    p.root = root;
    p.sendbuf = (const char *)sendbuf + off;
    p.recvbuf = (char *)recvbuf + off;
    p.count = bytes - off < piece ? bytes - off : piece;
    p.block = bytes;
    p.type = COLL_GPU_UINT8;
    if (e->cfg.log != NULL)
      e->cfg.log(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: %s seq %llu, %zu of %zu bytes: %s/%s, %d channels",
                 e->cfg.name, coll_gpu_coll_name(coll), (unsigned long long)p.seq, p.count, bytes,
                 coll_gpu_algo_name(choice.algo), coll_gpu_proto_name(choice.proto), choice.nchannels);
    int rc = run_call(e, &p, choice.proto, 0, why, why_len);
    if (rc != COLL_GPU_ENGINE_OK) return rc;
  }
  return COLL_GPU_ENGINE_OK;
}

/* The trace line of one reduction call. */
static void trace_reduction(const coll_gpu_engine_t *e, const coll_gpu_ar_params_t *p, size_t bytes,
                            const coll_gpu_choice_t *choice) {
  if (e->cfg.log != NULL)
    e->cfg.log(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: %s seq %llu, %zu of %zu bytes: %s/%s, %d channels",
               e->cfg.name, coll_gpu_coll_name(p->coll), (unsigned long long)p->seq,
               p->coll == COLL_GPU_COLL_REDUCE ? p->count * coll_gpu_dtype_size(p->type)
                                               : p->blocks[p->rank].count * coll_gpu_dtype_size(p->type),
               bytes, coll_gpu_algo_name(choice->algo), coll_gpu_proto_name(choice->proto), choice->nchannels);
}

int coll_gpu_engine_reduce(coll_gpu_engine_t *e, const void *sendbuf, void *recvbuf, size_t count,
                           coll_gpu_dtype_t type, coll_gpu_redop_t op, int root, char *why, size_t why_len) {
  const size_t size = coll_gpu_dtype_size(type), bytes = count * size;
  const coll_gpu_choice_t choice = coll_gpu_tune_choose_move(&e->cfg.tune, COLL_GPU_COLL_REDUCE, e->nranks, bytes);
  /* LL calls move at most a one-shot slot per peer: larger buffers go in several */
  const size_t piece = choice.algo == COLL_GPU_ALGO_ONESHOT ? e->layout.ll_bytes / size : count;
  for (size_t off = 0; off < count; off += piece) {
    coll_gpu_ar_params_t p;
    call_init(e, &p, COLL_GPU_COLL_REDUCE, &choice);
    p.root = root;
    p.sendbuf = (const char *)sendbuf + off * size;
    p.recvbuf = recvbuf == NULL ? NULL : (char *)recvbuf + off * size;
    p.count = count - off < piece ? count - off : piece;
    p.type = type;
    p.op = op;
    trace_reduction(e, &p, bytes, &choice);
    int rc = run_call(e, &p, choice.proto, 0, why, why_len);
    if (rc != COLL_GPU_ENGINE_OK) return rc;
  }
  return COLL_GPU_ENGINE_OK;
}

int coll_gpu_engine_reduce_scatter(coll_gpu_engine_t *e, const void *sendbuf, void *recvbuf, const size_t *counts,
                                   coll_gpu_dtype_t type, coll_gpu_redop_t op, char *why, size_t why_len) {
  const size_t size = coll_gpu_dtype_size(type);
  size_t longest = 0, total = 0;
  for (int q = 0; q < e->nranks; ++q) {
    longest = counts[q] > longest ? counts[q] : longest;
    total += counts[q];
  }
  const coll_gpu_choice_t choice =
      coll_gpu_tune_choose_move(&e->cfg.tune, COLL_GPU_COLL_REDUCE_SCATTER, e->nranks, longest * size);
  /* LL calls move at most a one-shot slot per peer: the blocks are cut at the same offsets */
  const size_t piece = choice.algo == COLL_GPU_ALGO_ONESHOT ? e->layout.ll_bytes / size : longest;
  for (size_t off = 0; off < longest; off += piece) {
    coll_gpu_ar_params_t p;
    call_init(e, &p, COLL_GPU_COLL_REDUCE_SCATTER, &choice);
    size_t begin = 0;
    for (int q = 0; q < e->nranks; ++q) {
      const size_t from = off < counts[q] ? off : counts[q];
      p.blocks[q].begin = begin + from;
      p.blocks[q].count = counts[q] - from < piece ? counts[q] - from : piece;
      begin += counts[q];
    }
    p.sendbuf = sendbuf;
    p.recvbuf = (char *)recvbuf + (off < counts[e->rank] ? off : counts[e->rank]) * size;
    p.type = type;
    p.op = op;
    trace_reduction(e, &p, total * size, &choice);
    int rc = run_call(e, &p, choice.proto, 0, why, why_len);
    if (rc != COLL_GPU_ENGINE_OK) return rc;
  }
  return COLL_GPU_ENGINE_OK;
}
