/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A communicator's hold on the GPU path, below both of the glue's ways onto the GPUs (blocking calls, and the queue
 * of nonblocking and persistent ones): whether its engine and its path agreement are there, its engine, and the
 * claims its calls hold on the engine (engine.h), counted here until the engine is made. No MPI, no CUDA.
 */
#ifndef COLL_GPU_HOLD_H
#define COLL_GPU_HOLD_H

#include <stdint.h>

#include "engine/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the engine and the agreement are: not made yet (made at the first call that needs them), there, or off for
 * good (unavailable, or a call on the GPUs failed): every later call of the communicator stages. */
typedef enum { COLL_GPU_STATE_NONE = 0, COLL_GPU_STATE_READY, COLL_GPU_STATE_OFF } coll_gpu_state_t;

typedef struct {
  coll_gpu_engine_t *engine; /* made, or shared with a communicator over the same ranks; NULL before */
  int engine_state;          /* a coll_gpu_state_t */
  int agree_state;           /* a coll_gpu_state_t: the path agreement's (the glue makes the agreement) */
  uint64_t claims;           /* before the engine: calls that posted the GPU path, not ended; atomic */
  uint32_t tag;              /* names the communicator in its engine's claims: its own number in this process, not 0 */
} coll_gpu_hold_t;

/* NONE, no engine, no claim, a tag no other hold of this process has. */
void coll_gpu_hold_init(coll_gpu_hold_t *h);
/* A call whose post was *mine counts on the engine: 0 where *mine is not the GPU path; before the engine, 1 (counted
 * here); then 1 where the engine takes the claim, else 0 with *mine set to COLL_GPU_PATH_STAGE (another
 * communicator's calls hold the engine). Thread-safe, as is unclaim. */
int coll_gpu_hold_claim(coll_gpu_hold_t *h, uint32_t *mine);
/* A claim ends (its call completed, or will not run on the GPUs). */
void coll_gpu_hold_unclaim(coll_gpu_hold_t *h);
/* What the engine's creation is told of this communicator: `members` (0: it shares no engine), its tag, the claims
 * counted so far, and whether another communicator's engine of its own may be offered (`own_ok`, engine.h). */
coll_gpu_engine_share_t coll_gpu_hold_share(const coll_gpu_hold_t *h, uint64_t members, int own_ok);
/* The creation's end: with engine e the engine counts the claims from now on and the engine is READY; NULL: OFF. */
void coll_gpu_hold_made(coll_gpu_hold_t *h, coll_gpu_engine_t *e);
/* A call on the GPUs failed, or the communicator has no GPU path: the engine and the agreement are OFF. */
void coll_gpu_hold_off(coll_gpu_hold_t *h);

#ifdef __cplusplus
}
#endif
#endif
