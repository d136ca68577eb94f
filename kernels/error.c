/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/* The kernels' interface's last failure, per thread (kernels/error.h). */
#include "kernels/error.h"

static __thread const char *last_failure = "no error";

const char *coll_gpu_kernels_error(void) { return last_failure; }

coll_gpu_status_t coll_gpu_kernels_fail(coll_gpu_status_t st, const char *reason) {
  last_failure = reason;
  return st;
}
