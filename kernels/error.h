/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * How the kernels' C interface (kernels.h, staging.h, gpu_mem.h) fails: with the project's status
 * (common/status.h), COLL_GPU_CUDA_ERROR where the CUDA runtime or driver failed, COLL_GPU_INTERNAL_ERROR for
 * arguments out of range, COLL_GPU_SYSTEM_ERROR where host memory ran out; and, as CUDA keeps its last error,
 * the reason of the calling thread's last failure, for the caller's message.
 */
#ifndef COLL_GPU_KERNELS_ERROR_H
#define COLL_GPU_KERNELS_ERROR_H

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reason of this thread's last failed call of the kernels' interface ("no error" before any): CUDA's words for
 * its error, or what was wrong. */
const char *coll_gpu_kernels_error(void);
/* Records `reason` (a string that lives as long as the program) as this thread's last failure; returns st. */
coll_gpu_status_t coll_gpu_kernels_fail(coll_gpu_status_t st, const char *reason);

#ifdef __cplusplus
}
#endif
#endif
