/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/* Exits 0 when a CUDA device is usable here, 1 otherwise (the GPU test cases skip then). */
#include <cuda_runtime.h>
#include <stdio.h>

int main(void) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    printf("no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "count 0");
    return 1;
  }
  printf("%d CUDA device(s)\n", n);
  return 0;
}
