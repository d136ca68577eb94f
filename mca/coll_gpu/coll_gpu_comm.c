/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A communicator's GPU resources as the glue holds them, for both ways onto the GPUs (the blocking calls of
 * coll_gpu_gpupath.c, the nonblocking and persistent ones of coll_gpu_request.c): the engine's bootstrap over the
 * communicator and its creation, the path agreement's table, lock and watchdog line,
 * how the glue waits, and the failed call's messages. It calls neither of those files.
 */
#include "coll_gpu.h"
#include "common/hash.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include <pthread.h>
#include <stdarg.h>

/* ------------------------------------------------------------------ bootstrap over the communicator */

typedef struct {
  struct ompi_communicator_t *comm;
  mca_coll_gpu_module_t *m;
} bootstrap_ctx_t;

/* The engine's set-up runs where a call starts, which may be inside Open MPI's progress (a queued
 * nonblocking call): its exchanges are the previous module's nonblocking collectives, completed by driving
 * progress here, never a blocking wait (which, nested in progress, would wait on itself with threads). */
static int bs_complete(int rc, ompi_request_t **req) {
  if (rc != OMPI_SUCCESS) return rc;
  while (!REQUEST_COMPLETE(*req)) opal_progress();
  rc = (*req)->req_status.MPI_ERROR;
  ompi_request_free(req);
  return rc;
}

static int bs_allgather(void *ctx, const void *send, void *recv, size_t bytes) {
  bootstrap_ctx_t *c = ctx;
  if (c->m->previous_iallgather == NULL)
    return c->m->previous_allgather((void *)send, (int)bytes, &ompi_mpi_byte.dt, recv, (int)bytes, &ompi_mpi_byte.dt,
                                    c->comm, c->m->previous_allgather_module);
  ompi_request_t *req = MPI_REQUEST_NULL;
  const int rc = c->m->previous_iallgather(send, (int)bytes, &ompi_mpi_byte.dt, recv, (int)bytes, &ompi_mpi_byte.dt,
                                           c->comm, &req, c->m->previous_iallgather_module);
  return bs_complete(rc, &req);
}

static int bs_bcast(void *ctx, void *buf, size_t bytes, int root) {
  bootstrap_ctx_t *c = ctx;
  if (c->m->previous_ibcast == NULL)
    return c->m->previous_bcast(buf, (int)bytes, &ompi_mpi_byte.dt, root, c->comm, c->m->previous_bcast_module);
  ompi_request_t *req = MPI_REQUEST_NULL;
  const int rc =
      c->m->previous_ibcast(buf, (int)bytes, &ompi_mpi_byte.dt, root, c->comm, &req, c->m->previous_ibcast_module);
  return bs_complete(rc, &req);
}

static int bs_barrier(void *ctx) {
  bootstrap_ctx_t *c = ctx;
  if (c->m->previous_ibarrier == NULL)
    return c->comm->c_coll->coll_barrier(c->comm, c->comm->c_coll->coll_barrier_module);
  ompi_request_t *req = MPI_REQUEST_NULL;
  const int rc = c->m->previous_ibarrier(c->comm, &req, c->m->previous_ibarrier_module);
  return bs_complete(rc, &req);
}

/* ------------------------------------------------------------------ the agreement */

bool mca_coll_gpu_gpupath_possible(struct ompi_communicator_t *comm) {
  const int size = ompi_comm_size(comm);
  return size >= 2 && size <= COLL_GPU_MAX_COMM_RANKS;
}

void mca_coll_gpu_agreement_key(struct ompi_communicator_t *comm, coll_gpu_agree_key_t *k, uint64_t *instance) {
  memset(k, 0, sizeof(*k));
  k->cid = comm->c_contextid;
  k->size = (uint32_t)ompi_comm_size(comm);
  uint64_t h = k->size;
  for (uint32_t r = 0; r < k->size; ++r) {
    const ompi_proc_t *p = ompi_group_peer_lookup(comm->c_local_group, (int)r);
    const opal_process_name_t name = p->super.proc_name;
    const uint64_t member = (uint64_t)name.jobid << 32 | name.vpid;
    h = coll_gpu_hash(&member, sizeof(member), h);
  }
  k->members = h != 0 ? h : 1;
  *instance = coll_gpu_agree_instance(k);
}

/* The node's agreement table of this job: a file in Open MPI's job session directory, which the job's
 * cleanup removes (also when a rank is killed), opened by each process at its first need. */
static struct {
  coll_gpu_agree_table_t *table;
  int state; /* COLL_GPU_STATE_* */
  int marked;
} node = {NULL, COLL_GPU_STATE_NONE, 0};
static pthread_mutex_t node_lock = PTHREAD_MUTEX_INITIALIZER;

static coll_gpu_agree_table_t *node_table(void) {
  if (OPAL_LIKELY(__atomic_load_n(&node.state, __ATOMIC_ACQUIRE) != COLL_GPU_STATE_NONE)) return node.table;
  pthread_mutex_lock(&node_lock);
  if (node.state == COLL_GPU_STATE_NONE) {
    const char *dir = opal_process_info.job_session_dir;
    char path[PATH_MAX], why[PATH_MAX + 128] = "Open MPI gave this process no job session directory";
    if (dir != NULL && snprintf(path, sizeof(path), "%s/%s", dir, COLL_GPU_AGREE_TABLE_NAME) < (int)sizeof(path))
      coll_gpu_agree_table_open(path, &node.table, why, sizeof(why));
    if (node.table == NULL) /* at the default verbosity: device buffers will be staged */
      opal_show_help("help-mpi-coll-gpu.txt", "no agreement table", true, opal_process_info.nodename, why);
    __atomic_store_n(&node.state, node.table != NULL ? COLL_GPU_STATE_READY : COLL_GPU_STATE_OFF, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&node_lock);
  return node.table;
}

void mca_coll_gpu_agreement_fini(void) {
  coll_gpu_agree_table_close(node.table);
  node.table = NULL;
  node.state = COLL_GPU_STATE_NONE;
  node.marked = 0;
}

/* The communicator's agreement, made on first use without any communication; NULL when it has none (then
 * on every rank alike, or a rank that has none never joins and its peers read UNKNOWN). A process that may
 * pass device memory marks the node's table: every rank of the node takes part from its next call on. */
coll_gpu_agree_t *mca_coll_gpu_agreement(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm) {
  if (OPAL_LIKELY(m->gpu.agree_state == COLL_GPU_STATE_READY)) {
    if (OPAL_UNLIKELY(!node.marked) && mca_coll_gpu_staging_possible()) {
      coll_gpu_agree_table_mark(node.table);
      node.marked = 1;
    }
    return m->agree;
  }
  if (m->gpu.agree_state == COLL_GPU_STATE_OFF) return NULL;
  coll_gpu_agree_table_t *t = node_table();
  const size_t n = (size_t)ompi_comm_size(comm);
  coll_gpu_calls_t *q = &m->calls; /* the agreement's scratch, its queue's */
  if (q->late == NULL) q->late = calloc(n, 1);
  if (q->missing == NULL) q->missing = calloc(n, 1);
  if (t == NULL || q->late == NULL || q->missing == NULL ||
      coll_gpu_agree_create(t, &m->agree_key, m->agree_instance, ompi_comm_rank(comm), &m->agree) != COLL_GPU_SUCCESS ||
      !mca_coll_gpu_agree_net(m, comm)) {
    coll_gpu_agree_destroy(m->agree); /* a rank without one never joins: its peers read UNKNOWN */
    m->agree = NULL;
    m->gpu.agree_state = COLL_GPU_STATE_OFF;
    return NULL;
  }
  m->gpu.agree_state = COLL_GPU_STATE_READY;
  return mca_coll_gpu_agreement(m, comm);
}

/* ------------------------------------------------------------------ waiting */

static void progress(void) { opal_progress(); }

/* How this process waits: it spins coll_gpu_spin_us before yielding, and not at all where Open MPI
 * itself yields when idle (more ranks than cores: mpi_yield_when_idle). Its waits drive Open MPI's
 * progress: a peer may need this rank's part of a nonblocking call before it reaches this one. */
coll_gpu_wait_config_t mca_coll_gpu_wait_config(void) {
  const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  coll_gpu_wait_config_t w = {opal_progress_yield_when_idle ? 0 : (uint64_t)c->spin_us * 1000,
                              (uint64_t)c->timeout * 1000000000ULL, progress};
  return w;
}

/* The agreement's watchdog line, once per call. */
void mca_coll_gpu_agree_report(void *ctx, const uint8_t *late) {
  const mca_coll_gpu_watch_ctx_t *w = ctx;
  char ranks[128] = "";
  coll_gpu_append_ranks(ranks, sizeof(ranks), late, ompi_comm_size(w->comm));
  COLL_GPU_LOG(COLL_GPU_LVL_WATCHDOG, COLL_GPU_LOG_COLL,
               "comm %s: %s (%zu bytes) has waited %d s for rank(s)%s to reach it, whose processes are "
               "alive: still waiting (reported once per call, after coll_gpu_timeout)",
               w->comm->c_name, w->call, w->bytes, mca_coll_gpu_component.timeout, ranks);
}

void mca_coll_gpu_agree_lock(mca_coll_gpu_module_t *m) {
  if (opal_using_threads()) pthread_mutex_lock(&m->agree_mutex);
}

int mca_coll_gpu_agree_trylock(mca_coll_gpu_module_t *m) {
  return !opal_using_threads() || pthread_mutex_trylock(&m->agree_mutex) == 0;
}

void mca_coll_gpu_agree_unlock(mca_coll_gpu_module_t *m) {
  if (opal_using_threads()) pthread_mutex_unlock(&m->agree_mutex);
}

static void topo_warn(const char *what) {
  opal_show_help("help-mpi-coll-gpu.txt", "topology", true, opal_process_info.nodename, what);
}

/* The communicator's processes in rank order, hashed, for an engine it may share (engine/engine.h); 0 where
 * it shares none. Engines are shared only where every call's path is agreed on: a claim refused on one rank
 * then stages the call on every rank. */
static uint64_t share_members(const mca_coll_gpu_module_t *m) {
  if (mca_coll_gpu_component.uniform_buffers || m->gpu.agree_state == COLL_GPU_STATE_OFF) return 0;
  return m->agree_key.members; /* not 0 */
}

int mca_coll_gpu_create_engine(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm,
                               const coll_gpu_meminfo_t *mem) {
  const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  bootstrap_ctx_t bctx = {comm, m};
  coll_gpu_bootstrap_t b = {ompi_comm_rank(comm), ompi_comm_size(comm), &bctx, bs_allgather, bs_bcast, bs_barrier};
  coll_gpu_engine_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    cfg.tune.algorithm[k] = c->algorithm[k];
    cfg.tune.protocol[k] = k == COLL_GPU_COLL_ALLREDUCE ? c->allreduce_protocol : -1;
  }
  cfg.tune.nchannels = c->nchannels;
  cfg.tune.max_channels = c->max_channels;
  cfg.tune.oneshot_max_bytes = c->oneshot_max_bytes;
  cfg.tune.twoshot_max_bytes = c->twoshot_max_bytes;
  cfg.tune.ring_chunk_bytes = c->ring_chunk_bytes;
  cfg.tune.rules = c->tuning_rule;
  cfg.tune.nrules = c->ntuning_rules;
  cfg.wait = mca_coll_gpu_wait_config();
  cfg.linger_ns = (uint64_t)c->oneshot_linger_us * 1000;
  cfg.slot_bytes = c->ring_slot_bytes;
  cfg.scratch_max_bytes = c->scratch_max_bytes;
  cfg.virtual_nodes = c->virtual_nodes;
  cfg.proxy_threads = c->proxy_threads;
  cfg.proxy_net = c->proxy_net;
  cfg.socket_ifname = c->socket_ifname;
  cfg.net_ll_bytes = c->net_ll_bytes;
  cfg.node_transport = c->node_transport;
  cfg.zero_copy_min_bytes = c->zero_copy_min_bytes;
  cfg.zero_copy_map_bytes = c->zero_copy_map_bytes;
  cfg.zero_copy_engines_min_bytes = c->zero_copy_engines_min_bytes;
  cfg.log = mca_coll_gpu_engine_log;
  cfg.name = comm->c_name;
  cfg.topo.file = c->topo_file;
  cfg.topo.dump_file = c->topo_dump_file;
  cfg.topo.log = mca_coll_gpu_engine_log;
  cfg.topo.warn = topo_warn;
  cfg.topo.name = comm->c_name;
  /* another communicator's engine of its own may be offered where no call of another communicator's can overlap
   * one of this one's (engine/engine.h) */
  const coll_gpu_engine_share_t share = coll_gpu_hold_share(&m->gpu, share_members(m), !opal_using_threads());
  char why[256];
  coll_gpu_engine_t *e = NULL;
  const int made = coll_gpu_engine_create(&b, &cfg, mem, &share, &e, why, sizeof(why)) == COLL_GPU_SUCCESS;
  coll_gpu_hold_made(&m->gpu, made ? e : NULL);
  if (made) return 1;
  COLL_GPU_LOG(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: no GPU path (%s); collectives on device buffers are staged", comm->c_name, why);
  return 0;
}

/* A failed call's message (help topic `topic` of help-mpi-coll-gpu.txt), written by this process itself (not sent to
 * mpirun as a help message), so that it is seen even when the error handler aborts the job right after. */
static void say_failed(const char *topic, ...) {
  va_list ap;
  va_start(ap, topic);
  char *msg = opal_show_help_vstring("help-mpi-coll-gpu.txt", topic, true, ap);
  va_end(ap);
  if (msg != NULL) {
    fprintf(stderr, "%s", msg);
    fflush(stderr);
    free(msg);
  }
}

/* A failure of the GPU path's call: reported, and the communicator stages from now on. */
int mca_coll_gpu_failed(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm, const char *call, size_t bytes,
                        const char *where, const char *why) {
  coll_gpu_hold_off(&m->gpu);
  say_failed("call failed", call, comm->c_name, ompi_comm_rank(comm), bytes, where, why);
  return OMPI_ERROR;
}

int mca_coll_gpu_mismatched(struct ompi_communicator_t *comm, const char *call, size_t bytes, const char *why) {
  say_failed("counts disagree", call, comm->c_name, ompi_comm_rank(comm), bytes, why);
  return MPI_ERR_TRUNCATE;
}
