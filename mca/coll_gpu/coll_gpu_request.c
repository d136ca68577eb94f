/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Nonblocking collectives that complete later, through our own requests.
 *
 * A nonblocking call with a GPU path (coll_gpu_gpupath.c) posts its agreement at the call and, when this
 * rank passes device memory, waits a few microseconds for the other ranks' posts: ranks in step have
 * posted by then. With every rank on the GPU the call starts on the engine at once and returns a request
 * of ours; the GPUs run it while the application computes. Otherwise the call is queued on its module
 * and started later, from Open MPI's progress engine (a callback registered while some module has calls
 * queued or running), on the GPUs or through the previous module.
 *
 * Starts keep the communicator's call order on every rank: the GPU path's sequence numbers and the
 * previous module's nonblocking tags are taken at the start, so once a call is queued every later
 * nonblocking call of the communicator queues behind it (with its arguments saved: coll_gpu_entry.c),
 * and a blocking call with a GPU path first drains the queue. One call runs on the engine at a time:
 * the next one on the GPUs starts when it has completed.
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

/* How long a call on device buffers waits at the call for the other ranks' posts before it is queued. */
#define COLL_GPU_ANSWER_SPIN_NS 20000ULL
/* A queued call's wait for the agreement checks the late ranks' processes this often. */
#define COLL_GPU_CHECK_NS 100000000ULL

struct mca_coll_gpu_call_s {
  ompi_request_t super;
  mca_coll_gpu_module_t *m;
  struct ompi_communicator_t *comm;
  mca_coll_gpu_call_t *next; /* in its module's queue or running list */
  int planned;               /* it has a GPU path: plan holds it, and it takes part in the agreement */
  mca_coll_gpu_plan_t plan;
  int claimed;          /* it posted the GPU path under a claim on the engine (mca_coll_gpu_claim), not ended yet */
  int posted, answered; /* its agreement: posted as number n; the answer `all` read */
  uint64_t n;
  uint32_t all;
  uint64_t since, next_check; /* a queued call's wait for the agreement */
  int reported;
  mca_coll_gpu_saved_t saved;
  union {
    long double align;
    char bytes[COLL_GPU_SAVED_MAX];
  } args;
  ompi_request_t *inner; /* started through the previous module: its request */
  int freed;             /* MPI_Request_free came before completion */
  /* a persistent call: inner is the previous module's persistent request on staged buffers, made at init */
  int persistent;
  int exchanging;    /* a call with counts whose zero-copy exchange is under way (coll_gpu_engine_start_counted): first
                        in its module's queue until that ends */
  int queued;        /* in its module's queue: its agreement's post, or a start, waits there */
  int start_pending; /* MPI_Start came while it was queued for its post */
  int in_answers;    /* in its module's list of agreements posted at init, not read yet */
  mca_coll_gpu_call_t *next_answer; /* its link there */
};

OBJ_CLASS_INSTANCE(mca_coll_gpu_call_t, ompi_request_t, NULL, NULL);

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

/* The call's claim on the engine ends (its run completed, or it will not run on the GPUs). */
static void unclaim(mca_coll_gpu_call_t *c) {
  if (!c->claimed) return;
  c->claimed = 0;
  mca_coll_gpu_unclaim(c->m);
}

/* Before call c posts its path: the GPU path only under a claim; refused, it posts STAGE. */
static void claim(mca_coll_gpu_call_t *c) {
  if (c->planned && !c->claimed) c->claimed = mca_coll_gpu_claim(c->m, &c->plan);
}

static void release(mca_coll_gpu_call_t *c) {
  struct ompi_communicator_t *comm = c->comm;
  unclaim(c); /* a persistent call on the GPUs claims from its init to its free */
  if (c->persistent && c->inner != NULL) ompi_request_free(&c->inner); /* the staged request and its buffers */
  OMPI_REQUEST_FINI(&c->super);
  OBJ_RELEASE(c);
  OBJ_RELEASE(comm);
}

/* MPI_Wait, MPI_Test and MPI_Request_free: a call freed before it completed is released at completion. */
static int call_free(ompi_request_t **request) {
  mca_coll_gpu_call_t *c = (mca_coll_gpu_call_t *)*request;
  *request = MPI_REQUEST_NULL;
  /* an active persistent call completes first, as the staged ones do */
  if (c->persistent && c->super.req_state == OMPI_REQUEST_ACTIVE) ompi_request_wait_completion(&c->super);
  lock();
  /* a persistent call whose post, or answer, is still to come stays until then: every rank reads it */
  const int pending = c->persistent ? c->queued || c->in_answers : !REQUEST_COMPLETE(&c->super);
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

static mca_coll_gpu_call_t *call_new(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm,
                                     const mca_coll_gpu_plan_t *pl, const mca_coll_gpu_saved_t *saved) {
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
  c->planned = pl != NULL;
  if (pl != NULL) { /* the plan's pointers into itself follow it */
    c->plan = *pl;
    if (c->plan.args.counts != NULL) c->plan.args.counts = c->plan.counts;
    if (c->plan.args.v != NULL) c->plan.args.v = &c->plan.layout;
    if (c->plan.vargs.v != NULL) c->plan.vargs.v = &c->plan.layout;
  }
  c->posted = c->answered = c->claimed = 0;
  c->since = c->next_check = 0;
  c->reported = 0;
  c->inner = NULL;
  c->freed = 0;
  c->persistent = c->exchanging = c->queued = c->start_pending = c->in_answers = 0;
  c->next_answer = NULL;
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
  if (!c->persistent) {
    c->saved.hold(c->args.bytes, 0);
    unclaim(c);
  }
  c->super.req_status.MPI_ERROR = rc == OMPI_SUCCESS ? MPI_SUCCESS : rc == MPI_ERR_TRUNCATE ? rc : MPI_ERR_OTHER;
  c->super.req_status._ucount = 0;
  if (c->freed) {
    c->next = calls.freed;
    calls.freed = c;
    return;
  }
  ompi_request_complete(&c->super, true);
}

static void enqueue(mca_coll_gpu_module_t *m, mca_coll_gpu_call_t *c) {
  c->next = NULL; /* a persistent call's link may still hold its last place in the running list */
  if (m->queue == NULL)
    m->queue = c;
  else
    m->queue_tail->next = c;
  m->queue_tail = c;
  c->queued = 1;
  busy(m);
}

/* Call c is on the GPUs now: progress tests it. */
static void now_on_gpu(mca_coll_gpu_call_t *c) {
  c->m->on_gpu = c;
  busy(c->m);
  COLL_GPU_LOG(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL, "comm %s: %s (%zu bytes) started on the GPUs", c->comm->c_name,
               c->saved.name, c->plan.bytes);
}

/* Starts call c on the engine (every rank's answer was the GPU path; the engine is idle). */
static void start_on_gpu(mca_coll_gpu_call_t *c) {
  char why[256];
  if (coll_gpu_engine_start(c->m->engine, &c->plan.args, why, sizeof(why)) == COLL_GPU_SUCCESS) {
    now_on_gpu(c);
    return;
  }
  finish(c, mca_coll_gpu_failed(c->m, c->comm, c->saved.name, c->plan.bytes, "on the GPU", why));
}

/* Starts call c through the previous module (staged where its buffers need it). */
static void start_previous(mca_coll_gpu_call_t *c) {
  const int rc =
      c->persistent ? c->inner->req_start(1, &c->inner) : c->saved.start(c->saved.args, c->comm, c->m, &c->inner);
  if (rc != OMPI_SUCCESS) {
    finish(c, rc);
    return;
  }
  c->next = c->m->running;
  c->m->running = c;
  busy(c->m); /* a persistent call starts here from MPI_Start too, outside progress */
}

/* The ranks the first queued call's agreement waits for: a watchdog line after coll_gpu_timeout, and an
 * error once one of them is gone. Returns 1 when the call failed (and left the queue). */
static int watch_agreement(mca_coll_gpu_call_t *c, coll_gpu_agree_t *a) {
  const uint64_t t = coll_gpu_now_ns();
  if (c->since == 0) {
    c->since = t;
    c->next_check = t + COLL_GPU_CHECK_NS;
    return 0;
  }
  const int report = !c->reported && t - c->since >= (uint64_t)mca_coll_gpu_component.timeout * 1000000000ULL;
  if (t < c->next_check && !report) return 0;
  c->next_check = t + COLL_GPU_CHECK_NS;
  /* the module's scratch: the caller holds the agreement's lock */
  uint8_t *late = c->m->late, *missing = c->m->missing;
  memset(missing, 0, (size_t)ompi_comm_size(c->comm));
  const uint64_t n = c->posted ? c->n : coll_gpu_agree_last(a) + 1;
  if (coll_gpu_agree_late(a, n, 1, late, missing)) {
    char why[256];
    snprintf(why, sizeof(why), "the process of rank(s)");
    coll_gpu_append_ranks(why, sizeof(why), missing, ompi_comm_size(c->comm));
    const size_t at = strlen(why);
    snprintf(why + at, sizeof(why) - at, " ended before it reached the call");
    c->m->queue = c->next; /* it leaves the queue (it is the first) */
    c->queued = 0;
    finish(c,
           mca_coll_gpu_failed(c->m, c->comm, c->saved.name, c->plan.bytes, "while the ranks agreed on its path", why));
    return 1;
  }
  if (report) {
    c->reported = 1;
    mca_coll_gpu_watch_ctx_t w = {c->comm, c->saved.name, c->plan.bytes};
    mca_coll_gpu_agree_report(&w, late);
  }
  return 0;
}

/* A persistent call whose agreement was posted at its init: progress reads the answer (every rank must,
 * for the window to move on) whether or not it is started. */
static void want_answer(mca_coll_gpu_module_t *m, mca_coll_gpu_call_t *c) {
  c->in_answers = 1;
  c->next_answer = m->answers;
  m->answers = c;
  busy(m);
}

static void read_answers(mca_coll_gpu_module_t *m) {
  for (mca_coll_gpu_call_t **at = &m->answers; *at != NULL;) {
    mca_coll_gpu_call_t *c = *at;
    if (!c->answered && !coll_gpu_agree_test(m->agree, c->n, &c->all)) {
      at = &c->next_answer;
      continue;
    }
    c->answered = 1;
    if (!mca_coll_gpu_path_is_gpu(c->all)) unclaim(c); /* staged at every start */
    *at = c->next_answer;
    c->next_answer = NULL;
    c->in_answers = 0;
    if (c->freed) {
      c->next = calls.freed;
      calls.freed = c;
    }
  }
}

/* The first queued call, with counts on the GPUs: its zero-copy exchange moved on; 1 when it ended and the call left
 * the queue: on the GPUs, staged (some rank's receive buffer cannot be mapped: on every rank alike, and in order, as
 * every later call of the communicator is queued behind it; a move of equal blocks goes through the FIFOs
 * instead), or failed. */
static int start_counted(mca_coll_gpu_call_t *c) {
  mca_coll_gpu_module_t *m = c->m;
  if (!c->exchanging && !coll_gpu_engine_idle(m->engine)) return 0;
  c->exchanging = 1;
  char why[256];
  int done = 0;
  const coll_gpu_status_t st = coll_gpu_engine_start_counted(m->engine, &c->plan.vargs, &done, why, sizeof(why));
  if (!done) return 0;
  c->exchanging = 0;
  m->queue = c->next;
  c->queued = c->start_pending = 0;
  if (st == COLL_GPU_SUCCESS) {
    now_on_gpu(c);
  } else if (st == COLL_GPU_UNAVAILABLE && c->plan.vargs.v == NULL) { /* a move of equal blocks: the FIFOs */
    start_on_gpu(c);
  } else if (st == COLL_GPU_UNAVAILABLE) {
    COLL_GPU_LOG(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL, "comm %s: %s staged: %s", c->comm->c_name, c->saved.name, why);
    if (!c->persistent) unclaim(c);
    start_previous(c);
  } else {
    finish(c, mca_coll_gpu_failed(m, c->comm, c->saved.name, c->plan.bytes, "on the GPU", why));
  }
  return 1;
}

/* Moves the first queued call on as far as it can go: 1 when it started (or failed) and left the queue. */
static int start_first(mca_coll_gpu_module_t *m) {
  mca_coll_gpu_call_t *c = m->queue;
  const int uniform = mca_coll_gpu_component.uniform_buffers;
  coll_gpu_agree_t *a = c->planned && !uniform ? mca_coll_gpu_agreement(m, c->comm) : NULL;
  if (!c->posted) claim(c);
  const int reads = c->planned && mca_coll_gpu_path_is_gpu(c->plan.mine);
  if (a != NULL && !c->posted) {
    if (!coll_gpu_agree_try_post(a, c->plan.mine, reads, &c->n)) return watch_agreement(c, a);
    c->posted = 1;
    c->since = 0;
  }
  if (c->persistent && !c->start_pending) { /* its init's post, now made: the answer is read in progress */
    m->queue = c->next;
    c->queued = 0;
    if (c->answered && !mca_coll_gpu_path_is_gpu(c->all)) unclaim(c);
    if (reads && !c->answered) {
      want_answer(m, c);
    } else if (c->freed) {
      c->next = calls.freed;
      calls.freed = c;
    }
    return 1;
  }
  if (a != NULL && reads && !c->answered) {
    if (!coll_gpu_agree_test(a, c->n, &c->all)) return watch_agreement(c, a);
    c->answered = 1;
  }
  /* no agreement: the user asserted uniform buffers, or there is none (then, as for blocking calls, staged) */
  if (a == NULL) c->all = uniform && reads ? c->plan.mine : COLL_GPU_PATH_STAGE;
  if (reads && mca_coll_gpu_path_is_gpu(c->all) && m->engine_state != COLL_GPU_STATE_OFF &&
      (m->engine != NULL || mca_coll_gpu_create_engine(m, c->comm, &c->plan.mem))) {
    if (c->all & COLL_GPU_PATH_VLAYOUT) return start_counted(c);
    if (!coll_gpu_engine_idle(m->engine)) return 0;
    m->queue = c->next;
    c->queued = c->start_pending = 0;
    start_on_gpu(c);
    return 1;
  }
  m->queue = c->next;
  c->queued = c->start_pending = 0;
  if (!c->persistent || (c->answered && !mca_coll_gpu_path_is_gpu(c->all))) unclaim(c);
  start_previous(c);
  return 1;
}

static int progress_module(mca_coll_gpu_module_t *m) {
  int events = 0;
  if (m->on_gpu != NULL) {
    char why[256];
    int done = 0;
    const coll_gpu_status_t st = coll_gpu_engine_test(m->engine, &done, why, sizeof(why));
    if (done) {
      mca_coll_gpu_call_t *c = m->on_gpu;
      m->on_gpu = NULL;
      finish(c, st == COLL_GPU_SUCCESS ? OMPI_SUCCESS
                : st == COLL_GPU_MISMATCH
                    ? mca_coll_gpu_mismatched(c->comm, c->saved.name, c->plan.bytes, why)
                    : mca_coll_gpu_failed(m, c->comm, c->saved.name, c->plan.bytes, "on the GPU", why));
      ++events;
    }
  }
  for (mca_coll_gpu_call_t **at = &m->running; *at != NULL;) {
    mca_coll_gpu_call_t *c = *at;
    if (!REQUEST_COMPLETE(c->inner)) {
      at = &c->next;
      continue;
    }
    *at = c->next;
    const int rc = c->inner->req_status.MPI_ERROR == MPI_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
    if (c->persistent)
      c->inner->req_state = OMPI_REQUEST_INACTIVE; /* as MPI_Wait leaves it, for the next start */
    else
      ompi_request_free(&c->inner);
    finish(c, rc);
    ++events;
  }
  /* the agreement: left for later while a call's thread has it */
  if ((m->answers != NULL || m->queue != NULL) && mca_coll_gpu_agree_trylock(m)) {
    if (m->answers != NULL) read_answers(m);
    while (m->queue != NULL && start_first(m)) ++events;
    mca_coll_gpu_agree_unlock(m);
  }
  return events;
}

static int progress_calls(void) {
  if (calls.in_progress || calls.busy == NULL || !trylock()) return 0;
  calls.in_progress = 1;
  int events = 0;
  for (mca_coll_gpu_module_t **at = &calls.busy; *at != NULL;) {
    mca_coll_gpu_module_t *m = *at;
    events += progress_module(m);
    if (m->queue == NULL && m->on_gpu == NULL && m->running == NULL && m->answers == NULL) {
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
  while (m->queue != NULL || (engine && m->on_gpu != NULL)) opal_progress();
}

int mca_coll_gpu_defer(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm, const mca_coll_gpu_plan_t *pl,
                       const mca_coll_gpu_saved_t *saved, ompi_request_t **request) {
  mca_coll_gpu_call_t *c = call_new(m, comm, pl, saved);
  if (c == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  lock();
  enqueue(m, c);
  unlock();
  *request = &c->super;
  COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: %s queued, to start from progress", comm->c_name,
               saved->name);
  return OMPI_SUCCESS;
}

/* Agreement n's answer, read at the call: the other ranks' posts are waited for up to
 * COLL_GPU_ANSWER_SPIN_NS. 1 with *all set, 0 when some rank has not posted yet. */
static int answer_soon(coll_gpu_agree_t *a, uint64_t n, uint32_t *all) {
  if (coll_gpu_agree_test(a, n, all)) return 1;
  for (const uint64_t until = coll_gpu_now_ns() + COLL_GPU_ANSWER_SPIN_NS; coll_gpu_now_ns() < until;)
    if (coll_gpu_agree_test(a, n, all)) return 1;
  return 0;
}

/* A call with counts on the GPU path just queued, where it is the first and the engine exists with nothing in
 * flight: its exchange begins at the call, and goes on for up to COLL_GPU_ANSWER_SPIN_NS, so that ranks in step
 * start it on the GPUs before they return; progress moves the rest. */
static void begin_counted(mca_coll_gpu_call_t *c) {
  mca_coll_gpu_module_t *m = c->m;
  if (!(c->all & COLL_GPU_PATH_VLAYOUT) || m->queue != c || m->engine == NULL || m->on_gpu != NULL ||
      m->engine_state == COLL_GPU_STATE_OFF)
    return;
  for (const uint64_t until = coll_gpu_now_ns() + COLL_GPU_ANSWER_SPIN_NS; !start_counted(c);)
    if (coll_gpu_now_ns() >= until) {
      COLL_GPU_LOG(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL,
                   "comm %s: %s: its zero-copy exchange not over %llu us into the call (a rank not there yet): it "
                   "goes on from progress",
                   c->comm->c_name, c->saved.name, (unsigned long long)(COLL_GPU_ANSWER_SPIN_NS / 1000));
      return;
    }
}

int mca_coll_gpu_icall(const mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       const mca_coll_gpu_saved_t *saved, ompi_request_t **request, int *rc) {
  if (m->queue != NULL) {
    *rc = mca_coll_gpu_defer(m, comm, pl, saved, request);
    return 1;
  }
  coll_gpu_agree_t *a = NULL;
  if (!mca_coll_gpu_component.uniform_buffers && (a = mca_coll_gpu_agreement(m, comm)) == NULL)
    return 0; /* no agreement: staged, as blocking calls are */
  mca_coll_gpu_plan_t p = *pl;
  const int claimed = mca_coll_gpu_claim(m, &p);
  const int reads = mca_coll_gpu_path_is_gpu(p.mine);
  uint32_t all = p.mine; /* as the user asserted, with uniform buffers */
  uint64_t n = 0;
  int answered = 1;
  if (a != NULL) {
    mca_coll_gpu_agree_lock(m);
    const int posted = coll_gpu_agree_try_post(a, p.mine, reads, &n);
    if (posted && reads) answered = answer_soon(a, n, &all);
    mca_coll_gpu_agree_unlock(m);
    if (!posted) {
      if (claimed) mca_coll_gpu_unclaim(m);                  /* claimed again when it posts */
      *rc = mca_coll_gpu_defer(m, comm, pl, saved, request); /* 64 calls ahead of a rank: it posts later */
      return 1;
    }
    if (!reads) return 0; /* its own bits decide: staged or the previous module's, at once */
  }
  if (answered && !mca_coll_gpu_path_is_gpu(all)) {
    if (claimed) mca_coll_gpu_unclaim(m);
    return 0;
  }
  mca_coll_gpu_call_t *c = call_new(m, comm, &p, saved);
  if (c == NULL) {
    if (claimed) mca_coll_gpu_unclaim(m);
    *rc = OMPI_ERR_OUT_OF_RESOURCE;
    return 1;
  }
  c->claimed = claimed;
  c->posted = 1;
  c->n = n;
  c->answered = answered;
  c->all = all;
  *request = &c->super;
  *rc = OMPI_SUCCESS;
  if (!answered)
    COLL_GPU_LOG(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL,
                 "comm %s: %s: the path agreement not answered %llu us into the call (a rank not there yet): it "
                 "starts from progress",
                 comm->c_name, saved->name, (unsigned long long)(COLL_GPU_ANSWER_SPIN_NS / 1000));
  lock();
  if (!answered || m->on_gpu != NULL || m->engine == NULL || (all & COLL_GPU_PATH_VLAYOUT)) {
    enqueue(m, c); /* it starts from progress: once every rank has posted, the call on the GPUs is done, or
                    * (the first) with the engine set up there, never inside the call */
    if (answered) begin_counted(c);
  } else {
    start_on_gpu(c);
  }
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
    mca_coll_gpu_module_t *m = c->m;
    const int reads = mca_coll_gpu_path_is_gpu(c->plan.mine);
    c->super.req_state = OMPI_REQUEST_ACTIVE;
    c->super.req_complete = REQUEST_PENDING;
    c->super.req_status.MPI_ERROR = MPI_SUCCESS;
    lock();
    if (!c->queued && m->queue == NULL && reads && !c->answered && c->posted) {
      mca_coll_gpu_agree_lock(m);
      c->answered = answer_soon(m->agree, c->n, &c->all);
      mca_coll_gpu_agree_unlock(m);
      if (c->answered && !mca_coll_gpu_path_is_gpu(c->all)) unclaim(c); /* staged at every start */
    }
    const int gpu = reads && c->answered && mca_coll_gpu_path_is_gpu(c->all) && m->engine_state != COLL_GPU_STATE_OFF;
    if (c->queued || m->queue != NULL || (reads && !c->answered) ||
        (gpu && (m->engine == NULL || m->on_gpu != NULL || (c->all & COLL_GPU_PATH_VLAYOUT)))) {
      c->start_pending = 1; /* from progress, in order (which creates the engine, collectively) */
      if (!c->queued) enqueue(m, c);
      if (gpu) begin_counted(c);
    } else if (gpu) {
      start_on_gpu(c);
    } else {
      start_previous(c);
    }
    unlock();
  }
  return OMPI_SUCCESS;
}

int mca_coll_gpu_pcall(const mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       ompi_request_t **request) {
  const int uniform = mca_coll_gpu_component.uniform_buffers;
  coll_gpu_agree_t *a = uniform ? NULL : mca_coll_gpu_agreement(m, comm);
  if (!uniform && a == NULL) return OMPI_SUCCESS; /* no agreement: staged at every start, as today */
  if (uniform && !mca_coll_gpu_path_is_gpu(pl->mine)) return OMPI_SUCCESS;
  mca_coll_gpu_plan_t p = *pl;
  uint64_t n = 0;
  lock();
  /* posted now, a call on the GPUs claims the engine from its init to its free: its starts need no post */
  const int claimed = m->queue == NULL && mca_coll_gpu_claim(m, &p);
  const int reads = mca_coll_gpu_path_is_gpu(p.mine);
  mca_coll_gpu_agree_lock(m);
  const int posted = a != NULL && m->queue == NULL && coll_gpu_agree_try_post(a, p.mine, reads, &n);
  mca_coll_gpu_agree_unlock(m);
  unlock();
  if (posted && !reads) return OMPI_SUCCESS; /* its own bits decide: the staged request serves every start */
  mca_coll_gpu_call_t *c = call_new(m, comm, &p, NULL);
  if (c == NULL) {
    if (claimed) mca_coll_gpu_unclaim(m);
    return OMPI_ERR_OUT_OF_RESOURCE;
  }
  c->claimed = claimed;
  c->persistent = 1;
  c->saved.name = pl->name; /* for messages */
  c->inner = *request;
  c->super.req_persistent = true;
  c->super.req_complete = REQUEST_COMPLETED;
  c->super.req_state = OMPI_REQUEST_INACTIVE;
  c->super.req_start = call_start;
  lock();
  if (a == NULL) {
    c->answered = 1;
    c->all = pl->mine; /* the GPU path: the user asserted uniform buffers */
  } else if (posted) {
    c->posted = 1;
    c->n = n;
    want_answer(m, c);
  } else {
    enqueue(m, c); /* its post waits for the calls queued before it, or for room */
  }
  unlock();
  *request = &c->super;
  COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "comm %s: %s_init on the GPU path, its agreement %s",
               comm->c_name, pl->name, posted ? "posted" : "queued");
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
  if (OPAL_LIKELY(m->queue == NULL)) return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
  const mca_coll_gpu_saved_t saved = {istart_ibarrier, ihold_nothing, NULL, 0, "MPI_Ibarrier"};
  return mca_coll_gpu_defer(m, comm, NULL, &saved, request);
}
