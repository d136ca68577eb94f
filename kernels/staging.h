/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Host staging copies for device buffers: pinned bounce memory and synchronous copies in the
 * current context. No MPI here; the caller makes the owning context current (gpu_mem.h).
 * Every function returns the project's status, the reason of a failure in coll_gpu_kernels_error (kernels/error.h).
 */
#ifndef COLL_GPU_KERNELS_STAGING_H
#define COLL_GPU_KERNELS_STAGING_H

#include <stddef.h>

#include "kernels/error.h"

#ifdef __cplusplus
extern "C" {
#endif

coll_gpu_status_t coll_gpu_staging_host_alloc(void **ptr, size_t bytes);
coll_gpu_status_t coll_gpu_staging_host_free(void *ptr);
/* Copies bytes between host and device memory; returns once the data has arrived. */
coll_gpu_status_t coll_gpu_staging_copy(void *dst, const void *src, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
