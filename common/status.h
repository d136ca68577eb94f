/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The project's one status type, returned by every engine and proxy function that can fail, with the reason in
 * words beside it (a `why` buffer the glue prints). In C++, COLL_GPU_CHECK(call) returns a failed status to the
 * caller and leaves a breadcrumb on the way up, as NCCL's NCCLCHECK does: at coll_gpu_verbose >= 60 (trace) each
 * function it passes through logs `engine/engine.cc:123 -> CUDA error`.
 */
#ifndef COLL_GPU_STATUS_H
#define COLL_GPU_STATUS_H

#include <stddef.h>

#include "common/log.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  COLL_GPU_SUCCESS = 0,
  COLL_GPU_UNAVAILABLE = 1,     /* the GPU path cannot serve this communicator; every rank got this answer */
  COLL_GPU_CUDA_ERROR = 2,      /* a CUDA runtime or driver call failed */
  COLL_GPU_SYSTEM_ERROR = 3,    /* an operating-system call failed, or host memory ran out */
  COLL_GPU_BOOTSTRAP_ERROR = 4, /* an exchange through the bootstrap interface (MPI) failed */
  COLL_GPU_PEER_GONE = 5,       /* a peer's process ended before the call completed */
  COLL_GPU_INTERNAL_ERROR = 6,  /* the engine was asked for something it cannot run: a bug */
  COLL_GPU_MISMATCH = 7,        /* the ranks' arguments of one call disagree (an erroneous program) */
  COLL_GPU_INVALID_INPUT = 8    /* what the user gave is not valid: a topology file, a value; the reason says where */
} coll_gpu_status_t;

/* "CUDA error", ... */
const char *coll_gpu_status_string(coll_gpu_status_t s);
/* Writes a reason into why (the engine's messages for the glue). */
void coll_gpu_say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Where breadcrumbs go (level COLL_GPU_LVL_TRACE, subsystem COLL_GPU_LOG_INIT); NULL: nowhere. The glue
 * sets it once, when the component opens. */
void coll_gpu_status_set_log(coll_gpu_log_fn log);

#ifdef __cplusplus
}

namespace coll_gpu {
// Logs `file:line -> status` (COLL_GPU_CHECK's breadcrumb).
void breadcrumb(const char *file, int line, coll_gpu_status_t s);
}  // namespace coll_gpu

// Returns a failed status to the caller, with a breadcrumb.
#define COLL_GPU_CHECK(call)                        \
  do {                                              \
    const coll_gpu_status_t s_ = (call);            \
    if (s_ != COLL_GPU_SUCCESS) {                   \
      coll_gpu::breadcrumb(__FILE__, __LINE__, s_); \
      return s_;                                    \
    }                                               \
  } while (0)
#endif

#endif
