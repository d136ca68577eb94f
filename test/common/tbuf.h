/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Test buffers of a chosen memory kind. Built without TEST_WITH_CUDA only host memory exists; with it,
 * device, managed, pinned, pool (cudaMallocAsync), vmm (the virtual memory management API: cuMemCreate and
 * cuMemMap, as PyTorch's expandable segments allocate) and per-rank mixed kinds too.
 */
#ifndef COLL_GPU_TEST_TBUF_H
#define COLL_GPU_TEST_TBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TEST_WITH_CUDA
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#define TBUF_CHECK(call)                                                                            \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      abort();                                                                                      \
    }                                                                                               \
  } while (0)
#endif

typedef enum { TBUF_HOST, TBUF_DEVICE, TBUF_MANAGED, TBUF_PINNED, TBUF_POOL, TBUF_VMM, TBUF_MIXED } tbuf_kind_t;

static inline const char *tbuf_kind_name(tbuf_kind_t k) {
  static const char *names[] = {"host", "device", "managed", "pinned", "pool", "vmm", "mixed"};
  return names[k];
}

static inline int tbuf_parse_kind(const char *s, tbuf_kind_t *k) {
  for (int i = 0; i <= TBUF_MIXED; ++i) {
    if (strcmp(s, tbuf_kind_name((tbuf_kind_t)i)) == 0) {
#ifndef TEST_WITH_CUDA
      if (i != TBUF_HOST) return -1;
#endif
      *k = (tbuf_kind_t)i;
      return 0;
    }
  }
  return -1;
}

/* The kind a rank actually uses: mixed cycles device, host, managed, pinned, pool over the ranks. */
static inline tbuf_kind_t tbuf_rank_kind(tbuf_kind_t k, int rank) {
  static const tbuf_kind_t cycle[] = {TBUF_DEVICE, TBUF_HOST, TBUF_MANAGED, TBUF_PINNED, TBUF_POOL};
  return k == TBUF_MIXED ? cycle[rank % 5] : k;
}

/* Each rank on a GPU of its own, round robin over the GPUs present (nothing without CUDA). */
static inline void tbuf_select_device(int rank) {
#ifdef TEST_WITH_CUDA
  int ndev = 0;
  TBUF_CHECK(cudaGetDeviceCount(&ndev));
  TBUF_CHECK(cudaSetDevice(rank % ndev));
#else
  (void)rank;
#endif
}

#ifdef TEST_WITH_CUDA
/* A driver API function as of CUDA version `version`, through the runtime (the tests link no libcuda). */
static inline void *tbuf_driver(const char *name, unsigned int version) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult found;
  TBUF_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found));
  if (fn == NULL || found != cudaDriverEntryPointSuccess) {
    fprintf(stderr, "%s:%d: no driver function %s\n", __FILE__, __LINE__, name);
    abort();
  }
  return fn;
}
/* Calls driver function fn of version v (its cudaTypedefs.h name PFN_fn_vV), aborting on an error. */
#define TBUF_DRIVER(fn, v, ...)                                                                 \
  do {                                                                                          \
    CUresult r_ = ((PFN_##fn##_v##v)tbuf_driver(#fn, v))(__VA_ARGS__);                          \
    if (r_ != CUDA_SUCCESS) {                                                                   \
      fprintf(stderr, "%s:%d: %s failed: driver error %d\n", __FILE__, __LINE__, #fn, (int)r_); \
      abort();                                                                                  \
    }                                                                                           \
  } while (0)

/* Device memory of the current device mapped through the virtual memory management API: a physical
 * allocation (no shareable handle) mapped at a reserved range, read-write for this device. */
static inline void *tbuf_vmm_alloc(size_t bytes) {
  int dev = 0;
  TBUF_CHECK(cudaGetDevice(&dev));
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t gran = 0;
  TBUF_DRIVER(cuMemGetAllocationGranularity, 10020, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const size_t size = (bytes + gran - 1) / gran * gran;
  CUdeviceptr p = 0;
  CUmemGenericAllocationHandle h;
  TBUF_DRIVER(cuMemAddressReserve, 10020, &p, size, (size_t)0, (CUdeviceptr)0, 0ULL);
  TBUF_DRIVER(cuMemCreate, 10020, &h, size, &prop, 0ULL);
  TBUF_DRIVER(cuMemMap, 10020, p, size, (size_t)0, h, 0ULL);
  CUmemAccessDesc access;
  memset(&access, 0, sizeof(access));
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  TBUF_DRIVER(cuMemSetAccess, 10020, p, size, &access, (size_t)1);
  TBUF_DRIVER(cuMemRelease, 10020, h); /* the mapping keeps the memory until it is unmapped */
  return (void *)(uintptr_t)p;
}

static inline void tbuf_vmm_free(void *p) {
  CUdeviceptr base = 0;
  size_t size = 0;
  TBUF_DRIVER(cuMemGetAddressRange, 3020, &base, &size, (CUdeviceptr)(uintptr_t)p);
  TBUF_CHECK(cudaDeviceSynchronize());
  TBUF_DRIVER(cuMemUnmap, 10020, base, size);
  TBUF_DRIVER(cuMemAddressFree, 10020, base, size);
}
#endif

static inline void *tbuf_alloc(tbuf_kind_t k, size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 1;
  switch (k) {
#ifdef TEST_WITH_CUDA
    case TBUF_DEVICE:
      TBUF_CHECK(cudaMalloc(&p, bytes));
      break;
    case TBUF_MANAGED:
      TBUF_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
      break;
    case TBUF_PINNED:
      TBUF_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
      break;
    case TBUF_POOL: /* stream-ordered allocation from the device's default memory pool */
      TBUF_CHECK(cudaMallocAsync(&p, bytes, 0));
      TBUF_CHECK(cudaStreamSynchronize(0));
      break;
    case TBUF_VMM:
      p = tbuf_vmm_alloc(bytes);
      break;
#endif
    default:
      p = malloc(bytes);
      if (p == NULL) abort();
  }
  return p;
}

static inline void tbuf_free(tbuf_kind_t k, void *p) {
  switch (k) {
#ifdef TEST_WITH_CUDA
    case TBUF_DEVICE:
    case TBUF_MANAGED:
      TBUF_CHECK(cudaFree(p));
      break;
    case TBUF_PINNED:
      TBUF_CHECK(cudaFreeHost(p));
      break;
    case TBUF_POOL:
      TBUF_CHECK(cudaFreeAsync(p, 0));
      TBUF_CHECK(cudaStreamSynchronize(0));
      break;
    case TBUF_VMM:
      tbuf_vmm_free(p);
      break;
#endif
    default:
      free(p);
  }
}

/* Copies between a test buffer and host memory. */
static inline void tbuf_put(tbuf_kind_t k, void *dst, const void *src, size_t bytes) {
#ifdef TEST_WITH_CUDA
  if (k == TBUF_DEVICE || k == TBUF_MANAGED || k == TBUF_POOL || k == TBUF_VMM) {
    TBUF_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
    return;
  }
#endif
  (void)k;
  memcpy(dst, src, bytes);
}

static inline void tbuf_get(tbuf_kind_t k, void *dst, const void *src, size_t bytes) { tbuf_put(k, dst, src, bytes); }

#endif
