/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Reduction functors for the MPI predefined types and ops, thread-level, for device and host.
 *
 * SUM, PROD and the bitwise and logical ops run on unsigned types (two's complement wraps the same way
 * for signed values, and unsigned overflow is defined); MAX and MIN keep the signedness. MAXLOC and
 * MINLOC follow MPI: the larger (smaller) value, and the smaller index on a tie.
 *
 * Compiled by nvcc for the kernels and by the host compiler for coll_gpu_reduce_host and its tests.
 */
#ifndef COLL_GPU_KERNELS_REDUCE_OPS_CUH
#define COLL_GPU_KERNELS_REDUCE_OPS_CUH

#include <stdint.h>

#include "kernels/kernels.h"

#ifdef __CUDACC__
#define COLL_GPU_HD __host__ __device__ __forceinline__
#else
#define COLL_GPU_HD inline
#endif

namespace coll_gpu {

// The pair types, laid out as C lays out MPI's struct { value; int index; }.
template <typename V>
struct Pair {
  V v;
  int i;
};
using FloatInt = Pair<float>;
using DoubleInt = Pair<double>;
using LongInt = Pair<long>;
using TwoInt = Pair<int>;
using ShortInt = Pair<short>;

template <typename T>
struct OpSum {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a + b); }
};
template <typename T>
struct OpProd {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a * b); }
};
template <typename T>
struct OpMax {
  COLL_GPU_HD T operator()(T a, T b) const { return a < b ? b : a; }
};
template <typename T>
struct OpMin {
  COLL_GPU_HD T operator()(T a, T b) const { return b < a ? b : a; }
};
template <typename T>
struct OpLand {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a != 0 && b != 0); }
};
template <typename T>
struct OpLor {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a != 0 || b != 0); }
};
template <typename T>
struct OpLxor {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)((a != 0) != (b != 0)); }
};
template <typename T>
struct OpBand {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a & b); }
};
template <typename T>
struct OpBor {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a | b); }
};
template <typename T>
struct OpBxor {
  COLL_GPU_HD T operator()(T a, T b) const { return (T)(a ^ b); }
};
template <typename P>
struct OpMaxloc {
  COLL_GPU_HD P operator()(P a, P b) const {
    if (a.v > b.v) return a;
    if (b.v > a.v) return b;
    return a.i <= b.i ? a : b;
  }
};
template <typename P>
struct OpMinloc {
  COLL_GPU_HD P operator()(P a, P b) const {
    if (a.v < b.v) return a;
    if (b.v < a.v) return b;
    return a.i <= b.i ? a : b;
  }
};

}  // namespace coll_gpu

// Calls F<T, Op>(args...) for the runtime (type, op), or evaluates to NOT_FOUND when the kernels do not
// implement the pair. F is a function template: template <typename T, typename Op> int F(...).
#define COLL_GPU_DISPATCH_INT(F, T_SIGNED, T_UNSIGNED, T_BITS, op, ...) \
  switch (op) {                                                         \
    case COLL_GPU_SUM:                                                  \
      return F<T_UNSIGNED, coll_gpu::OpSum<T_UNSIGNED>>(__VA_ARGS__);   \
    case COLL_GPU_PROD:                                                 \
      return F<T_UNSIGNED, coll_gpu::OpProd<T_UNSIGNED>>(__VA_ARGS__);  \
    case COLL_GPU_MAX:                                                  \
      return F<T_SIGNED, coll_gpu::OpMax<T_SIGNED>>(__VA_ARGS__);       \
    case COLL_GPU_MIN:                                                  \
      return F<T_SIGNED, coll_gpu::OpMin<T_SIGNED>>(__VA_ARGS__);       \
    case COLL_GPU_LAND:                                                 \
      return F<T_UNSIGNED, coll_gpu::OpLand<T_UNSIGNED>>(__VA_ARGS__);  \
    case COLL_GPU_LOR:                                                  \
      return F<T_UNSIGNED, coll_gpu::OpLor<T_UNSIGNED>>(__VA_ARGS__);   \
    case COLL_GPU_LXOR:                                                 \
      return F<T_UNSIGNED, coll_gpu::OpLxor<T_UNSIGNED>>(__VA_ARGS__);  \
    case COLL_GPU_BAND:                                                 \
      return F<T_BITS, coll_gpu::OpBand<T_BITS>>(__VA_ARGS__);          \
    case COLL_GPU_BOR:                                                  \
      return F<T_BITS, coll_gpu::OpBor<T_BITS>>(__VA_ARGS__);           \
    case COLL_GPU_BXOR:                                                 \
      return F<T_BITS, coll_gpu::OpBxor<T_BITS>>(__VA_ARGS__);          \
    default:                                                            \
      break;                                                            \
  }                                                                     \
  break;
#define COLL_GPU_DISPATCH_FLOAT(F, T, op, ...)       \
  switch (op) {                                      \
    case COLL_GPU_SUM:                               \
      return F<T, coll_gpu::OpSum<T>>(__VA_ARGS__);  \
    case COLL_GPU_PROD:                              \
      return F<T, coll_gpu::OpProd<T>>(__VA_ARGS__); \
    case COLL_GPU_MAX:                               \
      return F<T, coll_gpu::OpMax<T>>(__VA_ARGS__);  \
    case COLL_GPU_MIN:                               \
      return F<T, coll_gpu::OpMin<T>>(__VA_ARGS__);  \
    default:                                         \
      break;                                         \
  }                                                  \
  break;
#define COLL_GPU_DISPATCH_PAIR(F, P, op, ...)          \
  switch (op) {                                        \
    case COLL_GPU_MAXLOC:                              \
      return F<P, coll_gpu::OpMaxloc<P>>(__VA_ARGS__); \
    case COLL_GPU_MINLOC:                              \
      return F<P, coll_gpu::OpMinloc<P>>(__VA_ARGS__); \
    default:                                           \
      break;                                           \
  }                                                    \
  break;
// C bool holds 0 or 1: the logical ops on its byte; MPI allows no other op on it.
#define COLL_GPU_DISPATCH_BOOL(F, op, ...)                       \
  switch (op) {                                                  \
    case COLL_GPU_LAND:                                          \
      return F<uint8_t, coll_gpu::OpLand<uint8_t>>(__VA_ARGS__); \
    case COLL_GPU_LOR:                                           \
      return F<uint8_t, coll_gpu::OpLor<uint8_t>>(__VA_ARGS__);  \
    case COLL_GPU_LXOR:                                          \
      return F<uint8_t, coll_gpu::OpLxor<uint8_t>>(__VA_ARGS__); \
    default:                                                     \
      break;                                                     \
  }                                                              \
  break;

#define COLL_GPU_DISPATCH_WITH(BITS, F, NOT_FOUND, type, op, ...)                     \
  do {                                                                                \
    switch (type) {                                                                   \
      case COLL_GPU_INT8:                                                             \
        COLL_GPU_DISPATCH_INT(F, int8_t, uint8_t, BITS(uint8_t), op, __VA_ARGS__)     \
      case COLL_GPU_UINT8:                                                            \
        COLL_GPU_DISPATCH_INT(F, uint8_t, uint8_t, BITS(uint8_t), op, __VA_ARGS__)    \
      case COLL_GPU_INT16:                                                            \
        COLL_GPU_DISPATCH_INT(F, int16_t, uint16_t, BITS(uint16_t), op, __VA_ARGS__)  \
      case COLL_GPU_UINT16:                                                           \
        COLL_GPU_DISPATCH_INT(F, uint16_t, uint16_t, BITS(uint16_t), op, __VA_ARGS__) \
      case COLL_GPU_INT32:                                                            \
        COLL_GPU_DISPATCH_INT(F, int32_t, uint32_t, BITS(uint32_t), op, __VA_ARGS__)  \
      case COLL_GPU_UINT32:                                                           \
        COLL_GPU_DISPATCH_INT(F, uint32_t, uint32_t, BITS(uint32_t), op, __VA_ARGS__) \
      case COLL_GPU_INT64:                                                            \
        COLL_GPU_DISPATCH_INT(F, int64_t, uint64_t, BITS(uint64_t), op, __VA_ARGS__)  \
      case COLL_GPU_UINT64:                                                           \
        COLL_GPU_DISPATCH_INT(F, uint64_t, uint64_t, BITS(uint64_t), op, __VA_ARGS__) \
      case COLL_GPU_FLOAT:                                                            \
        COLL_GPU_DISPATCH_FLOAT(F, float, op, __VA_ARGS__)                            \
      case COLL_GPU_DOUBLE:                                                           \
        COLL_GPU_DISPATCH_FLOAT(F, double, op, __VA_ARGS__)                           \
      case COLL_GPU_BOOL:                                                             \
        COLL_GPU_DISPATCH_BOOL(F, op, __VA_ARGS__)                                    \
      case COLL_GPU_FLOAT_INT:                                                        \
        COLL_GPU_DISPATCH_PAIR(F, coll_gpu::FloatInt, op, __VA_ARGS__)                \
      case COLL_GPU_DOUBLE_INT:                                                       \
        COLL_GPU_DISPATCH_PAIR(F, coll_gpu::DoubleInt, op, __VA_ARGS__)               \
      case COLL_GPU_LONG_INT:                                                         \
        COLL_GPU_DISPATCH_PAIR(F, coll_gpu::LongInt, op, __VA_ARGS__)                 \
      case COLL_GPU_2INT:                                                             \
        COLL_GPU_DISPATCH_PAIR(F, coll_gpu::TwoInt, op, __VA_ARGS__)                  \
      case COLL_GPU_SHORT_INT:                                                        \
        COLL_GPU_DISPATCH_PAIR(F, coll_gpu::ShortInt, op, __VA_ARGS__)                \
      default:                                                                        \
        break;                                                                        \
    }                                                                                 \
    return NOT_FOUND;                                                                 \
  } while (0)

// COLL_GPU_DISPATCH: every pair at its own type. COLL_GPU_DISPATCH_BYTEWISE: BAND, BOR and BXOR of every
// integer width at uint8_t (they act on bytes alike), for calls whose count is in bytes for those ops
// (coll_gpu::bytewise, kernels/primitives.cuh): the kernels exist once for them.
#define COLL_GPU_BITS_SAME(T) T
#define COLL_GPU_BITS_BYTES(T) uint8_t
#define COLL_GPU_DISPATCH(F, NOT_FOUND, type, op, ...) \
  COLL_GPU_DISPATCH_WITH(COLL_GPU_BITS_SAME, F, NOT_FOUND, type, op, __VA_ARGS__)
#define COLL_GPU_DISPATCH_BYTEWISE(F, NOT_FOUND, type, op, ...) \
  COLL_GPU_DISPATCH_WITH(COLL_GPU_BITS_BYTES, F, NOT_FOUND, type, op, __VA_ARGS__)

#endif
