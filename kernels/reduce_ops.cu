/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Host side of the reduction functors: which (type, op) pairs the kernels implement, element sizes, and
 * the same reductions on host memory (the tests' way to check the functors and their dispatch).
 */
#include <string.h>

#include "kernels/reduce_ops.cuh"

namespace {

template <typename T, typename Op>
int supported() {
  return 1;
}

template <typename T, typename Op>
coll_gpu_status_t reduce_host(void *dst, const void *a, const void *b, size_t count) {
  Op op;
  for (size_t i = 0; i < count; ++i) {
    T x, y;
    memcpy(&x, (const char *)a + i * sizeof(T), sizeof(T));
    memcpy(&y, (const char *)b + i * sizeof(T), sizeof(T));
    T z = op(x, y);
    memcpy((char *)dst + i * sizeof(T), &z, sizeof(T));
  }
  return COLL_GPU_SUCCESS;
}

int dispatch_supported(coll_gpu_dtype_t type, coll_gpu_redop_t op) { COLL_GPU_DISPATCH(supported, 0, type, op); }

coll_gpu_status_t dispatch_reduce(coll_gpu_dtype_t type, coll_gpu_redop_t op, void *dst, const void *a, const void *b,
                                  size_t count) {
  COLL_GPU_DISPATCH(reduce_host, coll_gpu_kernels_fail(COLL_GPU_INVALID_INPUT, "no such reduction"), type, op, dst, a,
                    b, count);
}

}  // namespace

extern "C" size_t coll_gpu_dtype_size(coll_gpu_dtype_t type) {
  switch (type) {
    case COLL_GPU_INT8:
    case COLL_GPU_UINT8:
    case COLL_GPU_BOOL:
      return 1;
    case COLL_GPU_INT16:
    case COLL_GPU_UINT16:
      return 2;
    case COLL_GPU_INT32:
    case COLL_GPU_UINT32:
    case COLL_GPU_FLOAT:
      return 4;
    case COLL_GPU_INT64:
    case COLL_GPU_UINT64:
    case COLL_GPU_DOUBLE:
      return 8;
    case COLL_GPU_FLOAT_INT:
      return sizeof(coll_gpu::FloatInt);
    case COLL_GPU_DOUBLE_INT:
      return sizeof(coll_gpu::DoubleInt);
    case COLL_GPU_LONG_INT:
      return sizeof(coll_gpu::LongInt);
    case COLL_GPU_2INT:
      return sizeof(coll_gpu::TwoInt);
    case COLL_GPU_SHORT_INT:
      return sizeof(coll_gpu::ShortInt);
    default:
      return 0;
  }
}

extern "C" int coll_gpu_op_supported(coll_gpu_dtype_t type, coll_gpu_redop_t op) {
  return dispatch_supported(type, op);
}

extern "C" coll_gpu_status_t coll_gpu_reduce_host(coll_gpu_dtype_t type, coll_gpu_redop_t op, void *dst, const void *a,
                                                  const void *b, size_t count) {
  return dispatch_reduce(type, op, dst, a, b, count);
}
