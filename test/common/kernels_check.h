/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/* For the programs that drive the kernels directly (test_gpu_kernels, coll_gpu_kernel_bench): a failed CUDA runtime
 * call (CHECK) or call of the kernels' interface (KCHECK, its reason in coll_gpu_kernels_error) ends the program with
 * where and why. */
#ifndef COLL_GPU_TEST_KERNELS_CHECK_H
#define COLL_GPU_TEST_KERNELS_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/error.h"

#define CHECK(call)                                                                                 \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)
#define KCHECK(call)                                                                                  \
  do {                                                                                                \
    if ((call) != COLL_GPU_SUCCESS) {                                                                 \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, coll_gpu_kernels_error()); \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

#endif
