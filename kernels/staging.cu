/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Host staging copies for device buffers, through the CUDA runtime linked statically.
 *
 * Copies run on the legacy default stream of the current context, so they are ordered after the
 * application's work on blocking streams, as CUDA-aware MPI users expect. Pinned bounce buffers are
 * portable: usable from every context of the process.
 */
#include <cuda_runtime.h>

#include "kernels/cuda_status.h"
#include "staging.h"

extern "C" coll_gpu_status_t coll_gpu_staging_host_alloc(void **ptr, size_t bytes) {
  return coll_gpu_cuda_status(cudaHostAlloc(ptr, bytes, cudaHostAllocPortable));
}

extern "C" coll_gpu_status_t coll_gpu_staging_host_free(void *ptr) { return coll_gpu_cuda_status(cudaFreeHost(ptr)); }

extern "C" coll_gpu_status_t coll_gpu_staging_copy(void *dst, const void *src, size_t bytes) {
  // cudaMemcpy from or to pinned memory returns once the copy is complete (CUDA runtime API docs,
  // "API synchronization behavior"); the explicit synchronize also covers pageable fallbacks.
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, 0);
  if (err == cudaSuccess) err = cudaStreamSynchronize(0);
  return coll_gpu_cuda_status(err);
}
