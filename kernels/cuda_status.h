/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/* For kernels/'s CUDA sources: a CUDA runtime result as the interface's status (kernels/error.h). */
#ifndef COLL_GPU_KERNELS_CUDA_STATUS_H
#define COLL_GPU_KERNELS_CUDA_STATUS_H

#include <cuda_runtime.h>

#include "kernels/error.h"

static inline coll_gpu_status_t coll_gpu_cuda_status(cudaError_t err) {
  return err == cudaSuccess ? COLL_GPU_SUCCESS : coll_gpu_kernels_fail(COLL_GPU_CUDA_ERROR, cudaGetErrorString(err));
}

#endif
