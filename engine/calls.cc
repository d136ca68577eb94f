/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The order of a communicator's nonblocking and persistent calls with a GPU path (engine/calls.h).
 */
#include "engine/calls.h"

#include <stdio.h>
#include <string.h>

#include "common/wait.h"
#include "engine/bootstrap.h"

namespace {

const uint32_t kVlayout = COLL_GPU_PATH_VLAYOUT;
// How long a call on device buffers waits at the call for the other ranks' posts before it is queued.
constexpr uint64_t kAnswerSpinNs = 20000;
// A queued call's wait for the agreement checks the late ranks' processes this often.
constexpr uint64_t kCheckNs = 100000000;

// The communicator's agreement, remembered for the calls that posted to it.
coll_gpu_agree_t *agreement(coll_gpu_calls_t *q) {
  coll_gpu_agree_t *a = q->ops->agreement(q->ctx);
  if (a != nullptr) q->agree = a;
  return a;
}

// Before call c posts its path: the GPU path only under a claim; refused, it posts STAGE.
void claim(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (c->planned && !c->claimed) c->claimed = q->ops->claim(q->ctx, &c->mine);
}

// The call's end: a nonblocking call's claim ends with it.
void end(coll_gpu_calls_t *q, coll_gpu_call_t *c, coll_gpu_call_end_t how, const char *where, const char *why) {
  if (!c->persistent) coll_gpu_calls_unclaim(q, c);
  q->ops->finish(q->ctx, c, how, where, why);
}

// Call c is on the GPUs now: progress tests it.
void now_on_gpu(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  q->on_gpu = c;
  q->ops->busy(q->ctx);
  q->ops->debug(q->ctx, c, "started on the GPUs");
}

// Starts call c on the engine (every rank's answer was the GPU path; the engine is idle).
void start_on_gpu(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  char why[256] = "";
  if (q->ops->start_gpu(q->ctx, c, why, sizeof(why)) == COLL_GPU_SUCCESS) {
    now_on_gpu(q, c);
    return;
  }
  end(q, c, COLL_GPU_CALL_FAILED, "on the GPU", why);
}

// The first queued call leaves the queue.
void dequeue(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  q->queue = c->next;
  c->queued = c->start_pending = 0;
}

// In why: the ranks marked in q->missing are gone.
void gone(const coll_gpu_calls_t *q, char *why, size_t len) {
  snprintf(why, len, "the process of rank(s)");
  coll_gpu_append_ranks(why, len, q->missing, q->nranks);
  const size_t at = strlen(why);
  snprintf(why + at, len - at, " ended before it reached the call");
}

// The ranks the first queued call's agreement waits for: a watchdog line after timeout_ns, and an error once one of
// them is gone. Returns 1 when the call failed (and left the queue).
int watch_agreement(coll_gpu_calls_t *q, coll_gpu_call_t *c, coll_gpu_agree_t *a) {
  const uint64_t t = coll_gpu_now_ns();
  if (c->since == 0) {
    c->since = t;
    c->next_check = t + kCheckNs;
    return 0;
  }
  const bool report = !c->reported && t - c->since >= q->timeout_ns;
  if (t < c->next_check && !report) return 0;
  c->next_check = t + kCheckNs;
  memset(q->missing, 0, (size_t)q->nranks);
  const uint64_t n = c->posted ? c->n : coll_gpu_agree_last(a) + 1;
  if (coll_gpu_agree_late(a, n, 1, q->late, q->missing)) {
    char why[256];
    gone(q, why, sizeof(why));
    dequeue(q, c);  // it is the first
    end(q, c, COLL_GPU_CALL_FAILED, "while the ranks agreed on its path", why);
    return 1;
  }
  if (report) {
    c->reported = 1;
    q->ops->report(q->ctx, c, q->late);
  }
  return 0;
}

// A persistent call whose agreement was posted at its init: progress reads the answer (every rank must, for the
// window to move on) whether or not it is started.
void want_answer(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  c->in_answers = 1;
  c->next_answer = q->answers;
  q->answers = c;
  q->ops->busy(q->ctx);
}

void read_answers(coll_gpu_calls_t *q) {
  for (coll_gpu_call_t **at = &q->answers; *at != nullptr;) {
    coll_gpu_call_t *c = *at;
    if (!c->answered && !coll_gpu_agree_test(q->agree, c->n, &c->all)) {
      at = &c->next_answer;
      continue;
    }
    c->answered = 1;
    if (!coll_gpu_path_is_gpu(c->all)) coll_gpu_calls_unclaim(q, c);  // staged at every start
    *at = c->next_answer;
    c->next_answer = nullptr;
    c->in_answers = 0;
    q->ops->leave(q->ctx, c);
  }
}

// The first queued call, with counts on the GPUs: its zero-copy exchange moved on; 1 when it ended and the call left
// the queue: on the GPUs, staged (some rank's receive buffer cannot be mapped: on every rank alike, and in order, as
// every later call of the communicator is queued behind it; a move of equal blocks goes through the FIFOs instead),
// or failed.
int start_counted(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (!c->exchanging && !q->ops->engine_idle(q->ctx)) return 0;
  c->exchanging = 1;
  char why[256] = "";
  int done = 0;
  const coll_gpu_status_t st = q->ops->start_counted(q->ctx, c, &done, why, sizeof(why));
  if (!done) return 0;
  c->exchanging = 0;
  dequeue(q, c);
  if (st == COLL_GPU_SUCCESS) {
    now_on_gpu(q, c);
  } else if (st == COLL_GPU_UNAVAILABLE && q->ops->equal_blocks(q->ctx, c)) {  // through the FIFOs
    start_on_gpu(q, c);
  } else if (st == COLL_GPU_UNAVAILABLE) {
    char what[300];
    snprintf(what, sizeof(what), "staged: %s", why);
    q->ops->debug(q->ctx, c, what);
    if (!c->persistent) coll_gpu_calls_unclaim(q, c);
    q->ops->start_previous(q->ctx, c);
  } else {
    end(q, c, COLL_GPU_CALL_FAILED, "on the GPU", why);
  }
  return 1;
}

// Moves the first queued call on as far as it can go: 1 when it started (or failed) and left the queue.
int start_first(coll_gpu_calls_t *q) {
  coll_gpu_call_t *c = q->queue;
  coll_gpu_agree_t *a = c->planned && !q->uniform ? agreement(q) : nullptr;
  if (!c->posted) claim(q, c);
  const int reads = c->planned && coll_gpu_path_is_gpu(c->mine);
  if (a != nullptr && !c->posted) {
    if (!coll_gpu_agree_try_post(a, c->mine, reads, &c->n)) return watch_agreement(q, c, a);
    c->posted = 1;
    c->since = 0;
  }
  if (c->persistent && !c->start_pending) {  // its init's post, now made: the answer is read in progress
    dequeue(q, c);
    if (c->answered && !coll_gpu_path_is_gpu(c->all)) coll_gpu_calls_unclaim(q, c);
    if (reads && !c->answered)
      want_answer(q, c);
    else
      q->ops->leave(q->ctx, c);
    return 1;
  }
  if (a != nullptr && reads && !c->answered) {
    if (!coll_gpu_agree_test(a, c->n, &c->all)) return watch_agreement(q, c, a);
    c->answered = 1;
  }
  // no agreement: the user asserted uniform buffers, or there is none (then, as for blocking calls, staged)
  if (a == nullptr) c->all = q->uniform && reads ? c->mine : (uint32_t)COLL_GPU_PATH_STAGE;
  if (reads && coll_gpu_path_is_gpu(c->all) && !q->ops->engine_off(q->ctx) &&
      (q->ops->has_engine(q->ctx) || q->ops->make_engine(q->ctx, c))) {
    if (c->all & kVlayout) return start_counted(q, c);
    if (!q->ops->engine_idle(q->ctx)) return 0;
    dequeue(q, c);
    start_on_gpu(q, c);
    return 1;
  }
  dequeue(q, c);
  if (!c->persistent || (c->answered && !coll_gpu_path_is_gpu(c->all))) coll_gpu_calls_unclaim(q, c);
  q->ops->start_previous(q->ctx, c);
  return 1;
}

// Agreement n's answer, read at the call: the other ranks' posts are waited for up to kAnswerSpinNs.
// 1 with *all set, 0 when some rank has not posted yet.
int answer_soon(coll_gpu_agree_t *a, uint64_t n, uint32_t *all) {
  if (coll_gpu_agree_test(a, n, all)) return 1;
  for (const uint64_t until = coll_gpu_now_ns() + kAnswerSpinNs; coll_gpu_now_ns() < until;)
    if (coll_gpu_agree_test(a, n, all)) return 1;
  return 0;
}

// A call with counts on the GPU path just queued, where it is the first and the engine exists with nothing in
// flight: its exchange begins at the call, and goes on for up to kAnswerSpinNs, so that ranks in
// step start it on the GPUs before they return; progress moves the rest.
void begin_counted(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (!(c->all & kVlayout) || q->queue != c || !q->ops->has_engine(q->ctx) || q->on_gpu != nullptr ||
      q->ops->engine_off(q->ctx))
    return;
  for (const uint64_t until = coll_gpu_now_ns() + kAnswerSpinNs; !start_counted(q, c);)
    if (coll_gpu_now_ns() >= until) {
      char what[160];
      snprintf(what, sizeof(what),
               "its zero-copy exchange not over %llu us into the call (a rank not there yet): it goes on from "
               "progress",
               (unsigned long long)(kAnswerSpinNs / 1000));
      q->ops->debug(q->ctx, c, what);
      return;
    }
}

}  // namespace

int coll_gpu_calls_pending(const coll_gpu_calls_t *q) {
  return q->queue != nullptr || q->on_gpu != nullptr || q->answers != nullptr;
}

void coll_gpu_calls_unclaim(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (!c->claimed) return;
  c->claimed = 0;
  q->ops->unclaim(q->ctx);
}

void coll_gpu_calls_enqueue(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  c->next = nullptr;  // a persistent call's link may still hold its last place in a list of the owner's
  if (q->queue == nullptr)
    q->queue = c;
  else
    q->queue_tail->next = c;
  q->queue_tail = c;
  c->queued = 1;
  q->ops->busy(q->ctx);
}

coll_gpu_calls_way_t coll_gpu_calls_post(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (q->queue != nullptr) return COLL_GPU_CALLS_DEFER;
  coll_gpu_agree_t *a = nullptr;
  if (!q->uniform && (a = agreement(q)) == nullptr) return COLL_GPU_CALLS_PREVIOUS;  // staged, as blocking calls are
  const uint32_t asked = c->mine;
  const int claimed = q->ops->claim(q->ctx, &c->mine);
  const int reads = coll_gpu_path_is_gpu(c->mine);
  uint32_t all = c->mine;  // as the user asserted, with uniform buffers
  uint64_t n = 0;
  int answered = 1;
  if (a != nullptr) {
    q->ops->agree_lock(q->ctx);
    const int posted = coll_gpu_agree_try_post(a, c->mine, reads, &n);
    if (posted && reads) answered = answer_soon(a, n, &all);
    q->ops->agree_unlock(q->ctx);
    if (!posted) {  // 64 calls ahead of a rank: it posts later, claimed again then
      if (claimed) q->ops->unclaim(q->ctx);
      c->mine = asked;
      return COLL_GPU_CALLS_DEFER;
    }
    if (!reads) return COLL_GPU_CALLS_PREVIOUS;  // its own bits decide: staged or the previous module's, at once
  }
  if (answered && !coll_gpu_path_is_gpu(all)) {
    if (claimed) q->ops->unclaim(q->ctx);
    return COLL_GPU_CALLS_PREVIOUS;
  }
  c->claimed = claimed;
  c->posted = 1;
  c->n = n;
  c->answered = answered;
  c->all = all;
  return COLL_GPU_CALLS_OWN;
}

void coll_gpu_calls_begin(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (!c->answered) {
    char what[160];
    snprintf(what, sizeof(what),
             "the path agreement not answered %llu us into the call (a rank not there yet): it starts from progress",
             (unsigned long long)(kAnswerSpinNs / 1000));
    q->ops->debug(q->ctx, c, what);
  }
  if (!c->answered || q->on_gpu != nullptr || !q->ops->has_engine(q->ctx) || (c->all & kVlayout)) {
    // it starts from progress: once every rank has posted, the call on the GPUs is done, or (the first) with the
    // engine set up there, never inside the call
    coll_gpu_calls_enqueue(q, c);
    if (c->answered) begin_counted(q, c);
  } else {
    start_on_gpu(q, c);
  }
}

coll_gpu_calls_way_t coll_gpu_calls_init(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  coll_gpu_agree_t *a = q->uniform ? nullptr : agreement(q);
  if (!q->uniform && a == nullptr) return COLL_GPU_CALLS_PREVIOUS;  // no agreement: staged at every start
  if (q->uniform && !coll_gpu_path_is_gpu(c->mine)) return COLL_GPU_CALLS_PREVIOUS;
  // posted now, a call on the GPUs claims the engine from its init to its free: its starts need no post
  const int claimed = q->queue == nullptr && q->ops->claim(q->ctx, &c->mine);
  const int reads = coll_gpu_path_is_gpu(c->mine);
  uint64_t n = 0;
  q->ops->agree_lock(q->ctx);
  const int posted = a != nullptr && q->queue == nullptr && coll_gpu_agree_try_post(a, c->mine, reads, &n);
  q->ops->agree_unlock(q->ctx);
  if (posted && !reads) return COLL_GPU_CALLS_PREVIOUS;  // its own bits decide: the staged request serves every start
  c->persistent = 1;
  c->claimed = claimed;
  c->posted = posted;
  c->n = n;
  return COLL_GPU_CALLS_OWN;
}

void coll_gpu_calls_init_done(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  if (q->uniform) {  // the GPU path: the user asserted uniform buffers
    c->answered = 1;
    c->all = c->mine;
  } else if (c->posted) {
    want_answer(q, c);
  } else {
    coll_gpu_calls_enqueue(q, c);  // its post waits for the calls queued before it, or for room
  }
}

void coll_gpu_calls_start(coll_gpu_calls_t *q, coll_gpu_call_t *c) {
  const int reads = coll_gpu_path_is_gpu(c->mine);
  if (!c->queued && q->queue == nullptr && reads && !c->answered && c->posted) {
    q->ops->agree_lock(q->ctx);
    c->answered = answer_soon(q->agree, c->n, &c->all);
    q->ops->agree_unlock(q->ctx);
    if (c->answered && !coll_gpu_path_is_gpu(c->all)) coll_gpu_calls_unclaim(q, c);  // staged at every start
  }
  const bool gpu = reads && c->answered && coll_gpu_path_is_gpu(c->all) && !q->ops->engine_off(q->ctx);
  if (c->queued || q->queue != nullptr || (reads && !c->answered) ||
      (gpu && (!q->ops->has_engine(q->ctx) || q->on_gpu != nullptr || (c->all & kVlayout)))) {
    c->start_pending = 1;  // from progress, in order (which creates the engine, collectively)
    if (!c->queued) coll_gpu_calls_enqueue(q, c);
    if (gpu) begin_counted(q, c);
  } else if (gpu) {
    start_on_gpu(q, c);
  } else {
    q->ops->start_previous(q->ctx, c);
  }
}

coll_gpu_status_t coll_gpu_calls_agree(coll_gpu_calls_t *q, uint32_t mine, const coll_gpu_agree_watch_t *watch,
                                       uint32_t *all, char *why, size_t len) {
  if (q->uniform) {
    *all = mine;  // asserted by the user: every rank passes what this one passes
    return COLL_GPU_SUCCESS;
  }
  coll_gpu_agree_t *a = agreement(q);
  if (a == nullptr) return COLL_GPU_UNAVAILABLE;
  q->ops->agree_lock(q->ctx);
  memset(q->missing, 0, (size_t)q->nranks);
  const coll_gpu_status_t st = coll_gpu_agree(a, mine, watch, all, q->missing);
  if (st != COLL_GPU_SUCCESS) gone(q, why, len);
  q->ops->agree_unlock(q->ctx);
  return st;
}

int coll_gpu_calls_progress(coll_gpu_calls_t *q) {
  int events = 0;
  if (q->on_gpu != nullptr) {
    char why[256] = "";
    int done = 0;
    const coll_gpu_status_t st = q->ops->test_gpu(q->ctx, &done, why, sizeof(why));
    if (done) {
      coll_gpu_call_t *c = q->on_gpu;
      q->on_gpu = nullptr;
      end(q, c,
          st == COLL_GPU_SUCCESS    ? COLL_GPU_CALL_DONE
          : st == COLL_GPU_MISMATCH ? COLL_GPU_CALL_MISMATCHED
                                    : COLL_GPU_CALL_FAILED,
          "on the GPU", why);
      ++events;
    }
  }
  // the agreement: left for later while a call's thread has it
  if ((q->answers != nullptr || q->queue != nullptr) && q->ops->agree_trylock(q->ctx)) {
    if (q->answers != nullptr) read_answers(q);
    while (q->queue != nullptr && start_first(q)) ++events;
    q->ops->agree_unlock(q->ctx);
  }
  return events;
}
