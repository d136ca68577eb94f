/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Memory classification through the CUDA driver, without ever initializing CUDA.
 *
 * The driver is looked up only once the application itself has loaded libcuda: until then no device
 * pointer can exist. The check costs one pointer read while no library has been loaded after the
 * sentinel object (coll_gpu_mem_init); after that, one dl_iterate_phdr() call (the loader's counter,
 * no lookup unless it moved). No MPI here.
 */
#ifndef COLL_GPU_KERNELS_GPU_MEM_H
#define COLL_GPU_KERNELS_GPU_MEM_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  COLL_GPU_MEM_HOST = 0,   /* pageable or pinned host memory: the CPU may touch it directly */
  COLL_GPU_MEM_DEVICE = 1, /* cudaMalloc, cudaMallocAsync (pools), cuMemCreate mappings */
  COLL_GPU_MEM_MANAGED = 2 /* cudaMallocManaged */
} coll_gpu_memkind_t;

typedef struct {
  coll_gpu_memkind_t kind;
  int device; /* CUDA ordinal owning the memory, -1 for host memory */
  void *ctx;  /* CUcontext the memory belongs to (NULL for pool/VMM allocations and host memory) */
} coll_gpu_meminfo_t;

/* Names the sentinel object, which the first coll_gpu_mem_cuda_loaded() loads: call it at start-up,
 * and the first check should come after the start-up's own library loading. Without a sentinel (no
 * call, or it cannot be loaded) every check uses the counter. */
void coll_gpu_mem_init(const char *sentinel_path);

/* True once libcuda is loaded in this process (then device pointers may exist). Cheap; thread safe. */
bool coll_gpu_mem_cuda_loaded(void);

/* Classifies ptr. Host memory when CUDA is not loaded or not initialized. Never initializes CUDA. */
void coll_gpu_mem_classify(const void *ptr, coll_gpu_meminfo_t *info);

/* The allocation that holds a device pointer, for the node's other processes to map (CUDA IPC): its first byte
 * and size, the id CUDA gives it (unique in this process over its life: memory freed and allocated again at the
 * same address gets another), and whether cudaIpcGetMemHandle can export it (cudaMalloc memory: not that of a
 * pool, of the virtual memory management API or managed memory). */
typedef struct {
  void *base;
  size_t size;
  unsigned long long id;
  int exportable;
} coll_gpu_alloc_t;
/* COLL_GPU_CUDA_ERROR where the driver fails or CUDA is not loaded (the reason in coll_gpu_kernels_error). */
coll_gpu_status_t coll_gpu_mem_alloc_of(const void *ptr, coll_gpu_alloc_t *a);

/* Makes the context that owns `info`'s memory current on this thread; *saved receives what was
 * current, for coll_gpu_mem_ctx_leave. COLL_GPU_CUDA_ERROR where the driver fails. */
coll_gpu_status_t coll_gpu_mem_ctx_enter(const coll_gpu_meminfo_t *info, void **saved);
void coll_gpu_mem_ctx_leave(void *saved);

/* How many times the check took its slow path (it looked at the loader's counter): for tests. */
unsigned long coll_gpu_mem_slow_checks(void);

/* Releases the primary contexts retained by coll_gpu_mem_ctx_enter (at component close). */
void coll_gpu_mem_fini(void);

#ifdef __cplusplus
}
#endif
#endif
