/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The stand-alone probes' CUDA check (contrib/nvlink-rates.cu, contrib/alltoall-ceiling.cu): a failed call prints
 * where and why, and ends the program.
 */
#ifndef COLL_GPU_CONTRIB_CUDA_CHECK_H
#define COLL_GPU_CONTRIB_CUDA_CHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#endif
