/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Nonblocking collectives that complete later, through our own requests: Open MPI's side of the queue of calls
 * (engine/calls.h), which orders a communicator's nonblocking and persistent calls with a GPU path and starts
 * them, on the GPUs or through the previous module. Here are the requests, the progress callback (registered
 * while some module has calls queued or running) that moves every module's queue and tests the calls started
 * through the previous module, and what the queue asks of the module: the agreement, the claims, the engine, a
 * start through the previous module (with its arguments saved: coll_gpu_entry.c) and a call's end.
 *
 * Starts keep the communicator's call order on every rank: the GPU path's sequence numbers and the
 * previous module's nonblocking tags are taken at the start, so once a call is queued every later
 * nonblocking call of the communicator queues behind it (MPI_Ibarrier too, below), and a blocking call with a
 * GPU path first drains the queue.
 *
 * A request completes in progress: MPI_Test, MPI_Wait and every other call that progresses Open MPI
 * complete it. With threads, one lock guards the queues and running lists: progress takes it if it is
 * free and otherwise leaves the work to the thread that holds it; an entry adds to its own module's queue
 * only (MPI forbids two collectives on one communicator at once), so its unlocked look at that queue can
 * only be stale in the safe direction. It holds the communicator until it is freed, so that MPI_Comm_free with calls
 * outstanding waits for them instead of pulling the module from under them.
 */
#include <pthread.h>

#include "coll_gpu.h"
#include "opal/runtime/opal_progress.h"

struct mca_coll_gpu_call_s {
  ompi_request_t super;
  coll_gpu_call_t q; /* its place in its module's queue (engine/calls.h) */
  mca_coll_gpu_module_t *m;
  struct ompi_communicator_t *comm;
  mca_coll_gpu_call_t *next; /* in its module's running list, or the list of freed calls */
  mca_coll_gpu_plan_t plan;  /* with q.planned: its GPU path */
  mca_coll_gpu_saved_t saved;
  union {
    long double align;
    char bytes[COLL_GPU_SAVED_MAX];
  } args;
  ompi_request_t *inner; /* started through the previous module: its request */
  int freed;             /* MPI_Request_free came before completion */
  /* a persistent call (q.persistent): inner is the previous module's persistent request on staged buffers, made at
   * init */
};

OBJ_CLASS_INSTANCE(mca_coll_gpu_call_t, ompi_request_t, NULL, NULL);

static mca_coll_gpu_call_t *call_of(coll_gpu_call_t *q) {
  return (mca_coll_gpu_call_t *)((char *)q - offsetof(mca_coll_gpu_call_t, q));
}

static struct {
  mca_coll_gpu_module_t *busy; /* modules with calls queued or running */
  int registered;              /* the progress callback */
  int in_progress;             /* the callback is running (it may re-enter through opal_progress) */
  mca_coll_gpu_call_t *freed;  /* completed calls the application had freed: released after the callback */
} calls = {NULL, 0, 0, NULL};

static int progress_calls(void);

static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static void lock(void) {
  if (opal_using_threads()) pthread_mutex_lock(&calls_lock);
}
static int trylock(void) { return !opal_using_threads() || pthread_mutex_trylock(&calls_lock) == 0; }
static void unlock(void) {
  if (opal_using_threads()) pthread_mutex_unlock(&calls_lock);
}

static void busy(mca_coll_gpu_module_t *m) {
  if (m->busy) return;
  m->busy = 1;
  m->next_busy = calls.busy;
  calls.busy = m;
  if (!calls.registered && opal_progress_register(progress_calls) == OPAL_SUCCESS) calls.registered = 1;
}

/* A call the queue holds no more, which the application freed: released after the progress callback. */
static void release_later(mca_coll_gpu_call_t *c) {
  if (!c->freed) return;
  c->next = calls.freed;
  calls.freed = c;
}

static void release(mca_coll_gpu_call_t *c) {
  struct ompi_communicator_t *comm = c->comm;
  coll_gpu_calls_unclaim(&c->m->calls, &c->q); /* a persistent call on the GPUs claims from its init to its free */
  if (c->q.persistent && c->inner != NULL) ompi_request_free(&c->inner); /* the staged request and its buffers */
  OMPI_REQUEST_FINI(&c->super);
  OBJ_RELEASE(c);
  OBJ_RELEASE(comm);
}

/* MPI_Wait, MPI_Test and MPI_Request_free: a call freed before it completed is released at completion. */
static int call_free(ompi_request_t **request) {
  mca_coll_gpu_call_t *c = (mca_coll_gpu_call_t *)*request;
  *request = MPI_REQUEST_NULL;
  /* an active persistent call completes first, as the staged ones do */
  if (c->q.persistent && c->super.req_state == OMPI_REQUEST_ACTIVE) ompi_request_wait_completion(&c->super);
  lock();
  /* a persistent call whose post, or answer, is still to come stays until then: every rank reads it */
  const int pending = c->q.persistent ? c->q.queued || c->q.in_answers : !REQUEST_COMPLETE(&c->super);
  c->freed = pending;
  unlock();
  if (!pending) release(c);
  return OMPI_SUCCESS;
}

/* A collective cannot be cancelled (MPI leaves MPI_Cancel on one erroneous): nothing to do. */
static int call_cancel(ompi_request_t *request, int flag) {
  (void)request;
  (void)flag;
  return OMPI_SUCCESS;
}

/* A call of m's: its queue state from q (NULL: none yet), its plan from pl (NULL: no GPU path), its arguments from
 * saved (NULL: a persistent call, whose arguments live in inner). */
static mca_coll_gpu_call_t *call_new(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm,
                                     const coll_gpu_call_t *q, const mca_coll_gpu_plan_t *pl,
                                     const mca_coll_gpu_saved_t *saved) {
  mca_coll_gpu_call_t *c = OBJ_NEW(mca_coll_gpu_call_t);
  if (c == NULL) return NULL;
  OMPI_REQUEST_INIT(&c->super, false);
  c->super.req_type = OMPI_REQUEST_COLL;
  c->super.req_state = OMPI_REQUEST_ACTIVE;
  c->super.req_mpi_object.comm = comm;
  c->super.req_free = call_free;
  c->super.req_cancel = call_cancel;
  c->m = m;
  c->comm = comm;
  OBJ_RETAIN(comm);
  c->next = NULL;
  memset(&c->q, 0, sizeof(c->q));
  if (q != NULL) c->q = *q;
  c->q.planned = pl != NULL;
  if (pl != NULL) { /* the plan's pointers into itself follow it */
    c->plan = *pl;
    if (q == NULL) c->q.mine = pl->mine;
    if (c->plan.args.counts != NULL) c->plan.args.counts = c->plan.counts;
    if (c->plan.args.v != NULL) c->plan.args.v = &c->plan.layout;
    if (c->plan.vargs.v != NULL) c->plan.vargs.v = &c->plan.layout;
  }
  c->inner = NULL;
  c->freed = 0;
  if (saved == NULL) { /* a persistent call: its arguments live in inner */
    memset(&c->saved, 0, sizeof(c->saved));
    return c;
  }
  c->saved = *saved;
  if (saved->size > 0) memcpy(c->args.bytes, saved->args, saved->size);
  c->saved.args = c->args.bytes;
  saved->hold(c->args.bytes, 1);
  return c;
}

/* The call's end: its status, and the request completes (MPI_Wait returns). */
static void finish(mca_coll_gpu_call_t *c, int rc) {
  if (!c->q.persistent) {
    c->saved.hold(c->args.bytes, 0);
    coll_gpu_calls_unclaim(&c->m->calls, &c->q);
  }
  c->super.req_status.MPI_ERROR = rc == OMPI_SUCCESS ? MPI_SUCCESS : rc == MPI_ERR_TRUNCATE ? rc : MPI_ERR_OTHER;
  c->super.req_status._ucount = 0;
  if (c->freed)
    release_later(c);
  else
    ompi_request_complete(&c->super, true);
}

/* ------------------------------------------------------------------ what the queue asks of the module */

static coll_gpu_agree_t *q_agreement(void *ctx) {
  mca_coll_gpu_module_t *m = ctx;
  return mca_coll_gpu_agreement(m, m->comm);
}
static void q_agree_lock(void *ctx) { mca_coll_gpu_agree_lock(ctx); }
static int q_agree_trylock(void *ctx) { return mca_coll_gpu_agree_trylock(ctx); }
static void q_agree_unlock(void *ctx) { mca_coll_gpu_agree_unlock(ctx); }
static int q_claim(void *ctx, uint32_t *mine) {
  return coll_gpu_hold_claim(&((mca_coll_gpu_module_t *)ctx)->gpu, mine);
}
static void q_unclaim(void *ctx) { coll_gpu_hold_unclaim(&((mca_coll_gpu_module_t *)ctx)->gpu); }
static int q_has_engine(void *ctx) { return ((mca_coll_gpu_module_t *)ctx)->gpu.engine != NULL; }
static int q_engine_off(void *ctx) { return ((mca_coll_gpu_module_t *)ctx)->gpu.engine_state == COLL_GPU_STATE_OFF; }
static int q_make_engine(void *ctx, coll_gpu_call_t *q) {
  mca_coll_gpu_call_t *c = call_of(q);
  return mca_coll_gpu_create_engine(ctx, c->comm, &c->plan.mem);
}
static int q_engine_idle(void *ctx) { return coll_gpu_engine_idle(((mca_coll_gpu_module_t *)ctx)->gpu.engine); }
static coll_gpu_status_t q_start_gpu(void *ctx, coll_gpu_call_t *q, char *why, size_t len) {
  return coll_gpu_engine_start(((mca_coll_gpu_module_t *)ctx)->gpu.engine, &call_of(q)->plan.args, why, len);
}
static coll_gpu_status_t q_start_counted(void *ctx, coll_gpu_call_t *q, int *done, char *why, size_t len) {
  return coll_gpu_engine_start_counted(((mca_coll_gpu_module_t *)ctx)->gpu.engine, &call_of(q)->plan.vargs, done, why,
                                       len);
}
static coll_gpu_status_t q_test_gpu(void *ctx, int *done, char *why, size_t len) {
  return coll_gpu_engine_test(((mca_coll_gpu_module_t *)ctx)->gpu.engine, done, why, len);
}
static int q_equal_blocks(void *ctx, coll_gpu_call_t *q) {
  (void)ctx;
  return call_of(q)->plan.vargs.v == NULL;
}

/* Starts call c through the previous module (staged where its buffers need it). */
static void q_start_previous(void *ctx, coll_gpu_call_t *q) {
  mca_coll_gpu_module_t *m = ctx;
  mca_coll_gpu_call_t *c = call_of(q);
  const int rc =
      c->q.persistent ? c->inner->req_start(1, &c->inner) : c->saved.start(c->saved.args, c->comm, m, &c->inner);
  if (rc != OMPI_SUCCESS) {
    finish(c, rc);
    return;
  }
  c->next = m->running;
  m->running = c;
  busy(m); /* a persistent call starts here from MPI_Start too, outside progress */
}

static void q_finish(void *ctx, coll_gpu_call_t *q, coll_gpu_call_end_t how, const char *where, const char *why) {
  mca_coll_gpu_call_t *c = call_of(q);
  finish(c, how == COLL_GPU_CALL_DONE ? OMPI_SUCCESS
            : how == COLL_GPU_CALL_MISMATCHED
                ? mca_coll_gpu_mismatched(c->comm, c->saved.name, c->plan.bytes, why)
                : mca_coll_gpu_failed(ctx, c->comm, c->saved.name, c->plan.bytes, where, why));
}

static void q_leave(void *ctx, coll_gpu_call_t *q) {
  (void)ctx;
  release_later(call_of(q));
}

static void q_busy(void *ctx) { busy(ctx); }

static void q_debug(void *ctx, coll_gpu_call_t *q, const char *what) {
  (void)ctx;
  const mca_coll_gpu_call_t *c = call_of(q);
  COLL_GPU_LOG(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL, "comm %s: %s (%zu bytes): %s", c->comm->c_name, c->saved.name,
               c->plan.bytes, what);
}

static void q_report(void *ctx, coll_gpu_call_t *q, const uint8_t *late) {
  (void)ctx;
  const mca_coll_gpu_call_t *c = call_of(q);
  mca_coll_gpu_watch_ctx_t w = {c->comm, c->saved.name, c->plan.bytes};
  mca_coll_gpu_agree_report(&w, late);
}

static const coll_gpu_calls_ops_t queue_ops = {
    q_agreement,      q_agree_lock,  q_agree_trylock, q_agree_unlock, q_claim,         q_unclaim,  q_has_engine,
    q_engine_off,     q_make_engine, q_engine_idle,   q_start_gpu,    q_start_counted, q_test_gpu, q_equal_blocks,
    q_start_previous, q_finish,      q_leave,         q_busy,         q_debug,         q_report};

void mca_coll_gpu_calls_init(mca_coll_gpu_module_t *m) {
  m->calls.ops = &queue_ops;
  m->calls.ctx = m;
  m->calls.nranks = ompi_comm_size(m->comm);
  m->calls.uniform = mca_coll_gpu_component.uniform_buffers;
  m->calls.timeout_ns = (uint64_t)mca_coll_gpu_component.timeout * 1000000000ULL;
}

/* ------------------------------------------------------------------ progress */

static int progress_module(mca_coll_gpu_module_t *m) {
  int events = 0;
  for (mca_coll_gpu_call_t **at = &m->running; *at != NULL;) {
    mca_coll_gpu_call_t *c = *at;
    if (!REQUEST_COMPLETE(c->inner)) {
      at = &c->next;
      continue;
    }
    *at = c->next;
    const int rc = c->inner->req_status.MPI_ERROR == MPI_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
    if (c->q.persistent)
      c->inner->req_state = OMPI_REQUEST_INACTIVE; /* as MPI_Wait leaves it, for the next start */
    else
      ompi_request_free(&c->inner);
    finish(c, rc);
    ++events;
  }
  return events + coll_gpu_calls_progress(&m->calls);
}

static int progress_calls(void) {
  if (calls.in_progress || calls.busy == NULL || !trylock()) return 0;
  calls.in_progress = 1;
  int events = 0;
  for (mca_coll_gpu_module_t **at = &calls.busy; *at != NULL;) {
    mca_coll_gpu_module_t *m = *at;
    events += progress_module(m);
    if (!coll_gpu_calls_pending(&m->calls) && m->running == NULL) {
      m->busy = 0;
      *at = m->next_busy;
    } else {
      at = &m->next_busy;
    }
  }
  mca_coll_gpu_call_t *freed = calls.freed;
  calls.freed = NULL;
  calls.in_progress = 0;
  unlock();
  while (freed != NULL) { /* last, unlocked: releasing a communicator may free its module */
    mca_coll_gpu_call_t *c = freed;
    freed = c->next;
    release(c);
  }
  return events;
}

void mca_coll_gpu_drain(mca_coll_gpu_module_t *m, int engine) {
  while (coll_gpu_calls_queued(&m->calls) || (engine && m->calls.on_gpu != NULL)) opal_progress();
}

/* ------------------------------------------------------------------ the entries' side */

int mca_coll_gpu_defer(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm, const mca_coll_gpu_plan_t *pl,
                       const mca_coll_gpu_saved_t *saved, ompi_request_t **request) {
  mca_coll_gpu_call_t *c = call_new(m, comm, NULL, pl, saved);
  if (c == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  lock();
  coll_gpu_calls_enqueue(&m->calls, &c->q);
  unlock();
  *request = &c->super;
  COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: %s queued, to start from progress", comm->c_name,
               saved->name);
  return OMPI_SUCCESS;
}

int mca_coll_gpu_icall(const mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       const mca_coll_gpu_saved_t *saved, ompi_request_t **request, int *rc) {
  coll_gpu_call_t q;
  memset(&q, 0, sizeof(q));
  q.planned = 1;
  q.mine = pl->mine;
  switch (coll_gpu_calls_post(&m->calls, &q)) {
    case COLL_GPU_CALLS_PREVIOUS:
      return 0;
    case COLL_GPU_CALLS_DEFER:
      *rc = mca_coll_gpu_defer(m, comm, pl, saved, request);
      return 1;
    case COLL_GPU_CALLS_OWN:
      break;
  }
  mca_coll_gpu_call_t *c = call_new(m, comm, &q, pl, saved);
  if (c == NULL) {
    coll_gpu_calls_unclaim(&m->calls, &q);
    *rc = OMPI_ERR_OUT_OF_RESOURCE;
    return 1;
  }
  *request = &c->super;
  *rc = OMPI_SUCCESS;
  lock();
  coll_gpu_calls_begin(&m->calls, &c->q);
  unlock();
  return 1;
}

/* MPI_Start(all) of persistent calls with a GPU path: the path was agreed on at init (its answer read
 * here when progress has not read it yet); on the GPUs the call starts on the engine as a nonblocking
 * one does, otherwise the staged request made at init starts. In the communicator's call order: behind
 * queued calls, it queues too. */
static int call_start(size_t count, ompi_request_t **requests) {
  for (size_t i = 0; i < count; ++i) {
    mca_coll_gpu_call_t *c = (mca_coll_gpu_call_t *)requests[i];
    c->super.req_state = OMPI_REQUEST_ACTIVE;
    c->super.req_complete = REQUEST_PENDING;
    c->super.req_status.MPI_ERROR = MPI_SUCCESS;
    lock();
    coll_gpu_calls_start(&c->m->calls, &c->q);
    unlock();
  }
  return OMPI_SUCCESS;
}

int mca_coll_gpu_pcall(const mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       ompi_request_t **request) {
  coll_gpu_call_t q;
  memset(&q, 0, sizeof(q));
  q.planned = 1;
  q.mine = pl->mine;
  lock();
  const coll_gpu_calls_way_t way = coll_gpu_calls_init(&m->calls, &q);
  unlock();
  if (way != COLL_GPU_CALLS_OWN) return OMPI_SUCCESS; /* the staged request serves every start */
  mca_coll_gpu_call_t *c = call_new(m, comm, &q, pl, NULL);
  if (c == NULL) {
    coll_gpu_calls_unclaim(&m->calls, &q);
    return OMPI_ERR_OUT_OF_RESOURCE;
  }
  c->saved.name = pl->name; /* for messages */
  c->inner = *request;
  c->super.req_persistent = true;
  c->super.req_complete = REQUEST_COMPLETED;
  c->super.req_state = OMPI_REQUEST_INACTIVE;
  c->super.req_start = call_start;
  lock();
  coll_gpu_calls_init_done(&m->calls, &c->q);
  unlock();
  *request = &c->super;
  COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: %s_init on the GPU path, its agreement %s",
               comm->c_name, pl->name, c->q.posted ? "posted" : "queued");
  return OMPI_SUCCESS;
}

void mca_coll_gpu_calls_module_gone(mca_coll_gpu_module_t *m) {
  if (!m->busy) return;
  /* MPI_Finalize with calls outstanding on a predefined communicator (the others are held by their calls):
   * they complete, or fail once a rank they wait for is gone, before the module's engine goes */
  mca_coll_gpu_drain(m, 1);
  while (m->running != NULL) opal_progress();
  lock();
  for (mca_coll_gpu_module_t **at = &calls.busy; *at != NULL; at = &(*at)->next_busy)
    if (*at == m) {
      *at = m->next_busy;
      break;
    }
  m->busy = 0;
  unlock();
}

void mca_coll_gpu_calls_fini(void) {
  if (calls.registered) opal_progress_unregister(progress_calls);
  calls.registered = 0;
}

/* MPI_Ibarrier carries no buffer, but takes a nonblocking tag of the previous module like every other
 * nonblocking call: it queues behind the communicator's queued calls too. */
static int istart_ibarrier(const void *args, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                           ompi_request_t **request) {
  (void)args;
  return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
}

static void ihold_nothing(void *args, int hold) {
  (void)args;
  (void)hold;
}

int mca_coll_gpu_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!coll_gpu_calls_queued(&m->calls)))
    return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
  const mca_coll_gpu_saved_t saved = {istart_ibarrier, ihold_nothing, NULL, 0, "MPI_Ibarrier"};
  return mca_coll_gpu_defer(m, comm, NULL, &saved, request);
}
