/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The order of one communicator's nonblocking and persistent calls with a GPU path, MPI-free (engine/calls.cc).
 *
 * A call posts its path agreement (engine/agree.h) at the call and, when this rank passes device memory, waits
 * up to 20 us for the other ranks' posts. With every rank on the GPU it starts on the
 * engine at once; otherwise it is queued and started later from progress (coll_gpu_calls_progress), on the GPUs
 * or through the previous module. Starts keep the communicator's call order on every rank: once a call is queued,
 * every later nonblocking call of the communicator queues behind it (the glue queues its other nonblocking calls
 * too: coll_gpu_calls_queued), and a blocking call with a GPU path first lets the queue drain. One call runs on
 * the engine at a time: the next one on the GPUs starts when it has completed.
 *
 * What the queue does not know it asks its owner through coll_gpu_calls_ops_t: the agreement and its lock, the
 * claims on the engine, the engine itself (made collectively, its calls started and tested), a start through the
 * previous module, and a call's end. The owner serialises the queue's functions (one lock for all its queues),
 * and holds each call's memory until it has ended and left the queue.
 */
#ifndef COLL_GPU_ENGINE_CALLS_H
#define COLL_GPU_ENGINE_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/agree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The path bits of the agreement, what a rank's buffers allow; VLAYOUT with GPU: a call with counts whose
 * layout on this rank is not the allgather's or alltoall's (or a gather or scatter), so that every rank takes the
 * zero-copy path with counts, or a nonblocking move of equal blocks (coll_gpu_zero_copy_wins) that begins as such a
 * call does (the glue's plan has its arguments). */
enum { COLL_GPU_PATH_HOST = 1, COLL_GPU_PATH_GPU = 2, COLL_GPU_PATH_STAGE = 4, COLL_GPU_PATH_VLAYOUT = 8 };
/* Whether path bits say the GPU path (with or without VLAYOUT). */
static inline int coll_gpu_path_is_gpu(uint32_t bits) {
  return (bits & ~(uint32_t)COLL_GPU_PATH_VLAYOUT) == COLL_GPU_PATH_GPU;
}

/* One call as the queue sees it. The owner embeds it in its request and sets planned, mine and persistent; the
 * queue keeps the rest. */
typedef struct coll_gpu_call_s coll_gpu_call_t;
struct coll_gpu_call_s {
  coll_gpu_call_t *next;        /* in its queue (the owner may link a started call in lists of its own here) */
  coll_gpu_call_t *next_answer; /* in its queue's answers */
  int planned;                  /* it has a GPU path and takes part in the agreement */
  uint32_t mine;                /* this rank's path bits */
  int persistent;               /* a persistent call: posted at its init, started many times */
  int claimed;                  /* it posted the GPU path under a claim on the engine, not ended yet */
  int posted, answered;         /* its agreement: posted as number n; the answer `all` read */
  uint64_t n;
  uint32_t all;
  uint64_t since, next_check; /* a queued call's wait for the agreement */
  int reported;               /* its watchdog line written */
  int exchanging;             /* a call with counts whose zero-copy exchange is under way: first in the queue until it
                                 ends */
  int queued;                 /* in the queue: its agreement's post, or a start, waits there */
  int start_pending;          /* a persistent call's start came while it was queued for its post */
  int in_answers;             /* a persistent call in the answers: its post made at init, its answer not read yet */
};

/* How a call ended. */
typedef enum { COLL_GPU_CALL_DONE, COLL_GPU_CALL_MISMATCHED, COLL_GPU_CALL_FAILED } coll_gpu_call_end_t;

/* What the owner does for a queue (ctx: its coll_gpu_calls_t's). Statuses and why: the engine's. */
typedef struct {
  /* The communicator's agreement (made on first use); NULL when it has none. */
  coll_gpu_agree_t *(*agreement)(void *ctx);
  /* The agreement is one thread's at a time: lock, try (1: taken) and unlock it. */
  void (*agree_lock)(void *ctx);
  int (*agree_trylock)(void *ctx);
  void (*agree_unlock)(void *ctx);
  /* A claim on the engine for a call whose *mine is the GPU path: 1 when claimed; 0, with *mine made STAGE, where
   * another communicator's calls hold a shared engine. Each 1 is ended by one unclaim. */
  int (*claim)(void *ctx, uint32_t *mine);
  void (*unclaim)(void *ctx);
  /* The engine: made (has_engine), or off for good (engine_off: unavailable or failed); make_engine makes it,
   * collectively with the communicator's other ranks, for call c (1: made). */
  int (*has_engine)(void *ctx);
  int (*engine_off)(void *ctx);
  int (*make_engine)(void *ctx, coll_gpu_call_t *c);
  /* The engine idle: no call in flight (the owner's engine may be shared). */
  int (*engine_idle)(void *ctx);
  /* Starts c on the engine; its zero-copy exchange with counts (all VLAYOUT) moves on, *done when it ended
   * (COLL_GPU_UNAVAILABLE: not zero-copy, staged or through the FIFOs); the call on the engine moved on, *done when
   * it completed. */
  coll_gpu_status_t (*start_gpu)(void *ctx, coll_gpu_call_t *c, char *why, size_t len);
  coll_gpu_status_t (*start_counted)(void *ctx, coll_gpu_call_t *c, int *done, char *why, size_t len);
  coll_gpu_status_t (*test_gpu)(void *ctx, int *done, char *why, size_t len);
  /* Whether c, answered VLAYOUT and unavailable zero-copy, is a move of equal blocks (it runs through the FIFOs;
   * otherwise it is staged). */
  int (*equal_blocks)(void *ctx, coll_gpu_call_t *c);
  /* Starts c through the previous module (staged where its buffers need it); the owner ends it. */
  void (*start_previous)(void *ctx, coll_gpu_call_t *c);
  /* c has ended: done, its ranks' counts disagreed (why), or it failed (where, why: the communicator stages from
   * now on). A nonblocking call is unclaimed first. */
  void (*finish)(void *ctx, coll_gpu_call_t *c, coll_gpu_call_end_t end, const char *where, const char *why);
  /* A persistent call's post, or its answer, is done: the queue holds c no more. */
  void (*leave)(void *ctx, coll_gpu_call_t *c);
  /* The queue has calls queued, on the engine or waiting for an answer: progress must come. */
  void (*busy)(void *ctx);
  /* A debug line about c: what happened to it. */
  void (*debug)(void *ctx, coll_gpu_call_t *c, const char *what);
  /* The watchdog line for the first queued call: the ranks in `late` (a byte each) have not posted after
   * timeout_ns, their processes alive. */
  void (*report)(void *ctx, coll_gpu_call_t *c, const uint8_t *late);
} coll_gpu_calls_ops_t;

/* One communicator's queue. The owner sets ops, ctx, nranks, uniform, timeout_ns and late and missing (nranks bytes
 * each, the agreement's scratch, used under its lock); the rest starts zero. */
typedef struct {
  const coll_gpu_calls_ops_t *ops;
  void *ctx;
  int nranks;
  int uniform;         /* the user asserted uniform buffers: no agreement, every rank's path is its own */
  uint64_t timeout_ns; /* the watchdog line after this long */
  uint8_t *late, *missing;
  coll_gpu_agree_t *agree;             /* the agreement its calls posted to */
  coll_gpu_call_t *queue, *queue_tail; /* not started yet, in call order */
  coll_gpu_call_t *on_gpu;             /* started on the engine, not completed */
  coll_gpu_call_t *answers;            /* persistent calls whose agreement, posted at init, is unread */
} coll_gpu_calls_t;

/* What a new call does (coll_gpu_calls_post). */
typedef enum {
  COLL_GPU_CALLS_PREVIOUS, /* through the previous module at once (its agreement posted, or none) */
  COLL_GPU_CALLS_DEFER,    /* queued behind the calls queued before it (coll_gpu_calls_enqueue) */
  COLL_GPU_CALLS_OWN       /* a call of the queue's: the owner makes it from c and hands it to coll_gpu_calls_begin */
} coll_gpu_calls_way_t;

/* Whether q has calls queued: a later nonblocking call of the communicator queues behind them. */
static inline int coll_gpu_calls_queued(const coll_gpu_calls_t *q) { return q->queue != NULL; }
/* Whether q holds any call: queued, on the engine or waiting for its answer. */
int coll_gpu_calls_pending(const coll_gpu_calls_t *q);

/* A nonblocking call (c: planned, mine set, the rest zero) at its entry: claims, posts and reads its answer
 * (locking the agreement); the way it goes. With OWN, c holds its state for the call the owner makes. */
coll_gpu_calls_way_t coll_gpu_calls_post(coll_gpu_calls_t *q, coll_gpu_call_t *c);
/* The call made from post's OWN: started on the engine, or queued (its exchange with counts begun). */
void coll_gpu_calls_begin(coll_gpu_calls_t *q, coll_gpu_call_t *c);
/* Queues c (a call without a GPU path too: planned 0) behind the calls queued before it. */
void coll_gpu_calls_enqueue(coll_gpu_calls_t *q, coll_gpu_call_t *c);

/* A persistent call at its init (c: planned, mine set): claimed, and its agreement posted when nothing is queued
 * (locking the agreement). PREVIOUS: every start takes the previous module (no agreement, or its own bits decide);
 * OWN: the owner makes the call from c and hands it to coll_gpu_calls_init_done. */
coll_gpu_calls_way_t coll_gpu_calls_init(coll_gpu_calls_t *q, coll_gpu_call_t *c);
void coll_gpu_calls_init_done(coll_gpu_calls_t *q, coll_gpu_call_t *c);
/* MPI_Start of persistent call c: on the engine, through the previous module, or queued, in order. */
void coll_gpu_calls_start(coll_gpu_calls_t *q, coll_gpu_call_t *c);

/* A blocking call's agreement: this rank's bits `mine` posted and every rank's OR in *all, the wait watched by
 * `watch` (locking the agreement). With uniform buffers *all is mine. COLL_GPU_UNAVAILABLE: no agreement (the call
 * goes on through the previous module); another failure (the agreement's): a rank it waited for is gone, named in
 * why. */
coll_gpu_status_t coll_gpu_calls_agree(coll_gpu_calls_t *q, uint32_t mine, const coll_gpu_agree_watch_t *watch,
                                       uint32_t *all, char *why, size_t len);

/* Moves q on: the call on the engine tested, the answers read and the queued calls started as far as they go
 * (where the agreement's lock is free). Returns the events (calls ended or started). */
int coll_gpu_calls_progress(coll_gpu_calls_t *q);
/* Ends c's claim, if it holds one. */
void coll_gpu_calls_unclaim(coll_gpu_calls_t *q, coll_gpu_call_t *c);

#ifdef __cplusplus
}
#endif
#endif
