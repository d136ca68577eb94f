/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The status type's words and the breadcrumbs of COLL_GPU_CHECK (common/status.h).
 */
#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>

namespace {
coll_gpu_log_fn breadcrumb_log = nullptr;  // set once by the glue, before any engine call
}  // namespace

const char *coll_gpu_status_string(coll_gpu_status_t s) {
  switch (s) {
    case COLL_GPU_SUCCESS:
      return "success";
    case COLL_GPU_UNAVAILABLE:
      return "GPU path unavailable";
    case COLL_GPU_CUDA_ERROR:
      return "CUDA error";
    case COLL_GPU_SYSTEM_ERROR:
      return "system error";
    case COLL_GPU_BOOTSTRAP_ERROR:
      return "bootstrap error";
    case COLL_GPU_PEER_GONE:
      return "peer process gone";
    case COLL_GPU_INTERNAL_ERROR:
      return "internal error";
    case COLL_GPU_MISMATCH:
      return "arguments differ between ranks";
    case COLL_GPU_INVALID_INPUT:
      return "input not valid";
  }
  return "unknown status";
}

void coll_gpu_say(char *why, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
}

void coll_gpu_status_set_log(coll_gpu_log_fn log) { breadcrumb_log = log; }

namespace coll_gpu {
void breadcrumb(const char *file, int line, coll_gpu_status_t s) {
  if (breadcrumb_log != nullptr)
    breadcrumb_log(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_INIT, "%s:%d -> %s", file, line, coll_gpu_status_string(s));
}
}  // namespace coll_gpu
