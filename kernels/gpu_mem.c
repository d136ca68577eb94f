/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Memory classification through the CUDA driver, looked up with dlsym from the libcuda that the
 * application loaded. See gpu_mem.h.
 */
#define _GNU_SOURCE
#include "gpu_mem.h"

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*get_attrs_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*primary_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*primary_release_fn)(CUdevice);
typedef CUresult (*device_get_fn)(CUdevice *, int);
typedef CUresult (*error_string_fn)(CUresult, const char **);

static struct {
  get_attrs_fn get_attrs;
  ctx_get_fn ctx_get;
  ctx_set_fn ctx_set;
  primary_retain_fn primary_retain;
  primary_release_fn primary_release;
  device_get_fn device_get;
  error_string_fn error_string; /* NULL: the driver has none */
} drv;

static int cuda_loaded;              /* 1 once the driver entry points are resolved */
static unsigned long long seen_adds; /* dlpi_adds at the last look for libcuda */
static struct link_map *sentinel;    /* our never-unloaded object; NULL without one */
static char *sentinel_file;          /* its path, until the first check loads it */
static unsigned long slow_checks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Primary contexts retained for pool/VMM memory, which carries no context of its own. */
#define MAX_DEVICES 64 /* more GPUs than any node has today; extra devices fall back to no switch */
static CUcontext primary[MAX_DEVICES];

static int read_adds(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_adds;
  return 1; /* the counter is the same in every entry: stop at the first */
}

static int resolve(void *h) {
  drv.get_attrs = (get_attrs_fn)dlsym(h, "cuPointerGetAttributes");
  drv.ctx_get = (ctx_get_fn)dlsym(h, "cuCtxGetCurrent");
  drv.ctx_set = (ctx_set_fn)dlsym(h, "cuCtxSetCurrent");
  drv.primary_retain = (primary_retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain_v2");
  if (drv.primary_retain == NULL) drv.primary_retain = (primary_retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
  drv.primary_release = (primary_release_fn)dlsym(h, "cuDevicePrimaryCtxRelease_v2");
  if (drv.primary_release == NULL) drv.primary_release = (primary_release_fn)dlsym(h, "cuDevicePrimaryCtxRelease");
  drv.device_get = (device_get_fn)dlsym(h, "cuDeviceGet");
  drv.error_string = (error_string_fn)dlsym(h, "cuGetErrorString");
  return drv.get_attrs && drv.ctx_get && drv.ctx_set && drv.primary_retain && drv.primary_release && drv.device_get;
}

void coll_gpu_mem_init(const char *sentinel_path) {
  pthread_mutex_lock(&lock);
  if (sentinel_file == NULL && sentinel_path != NULL)
    __atomic_store_n(&sentinel_file, strdup(sentinel_path), __ATOMIC_RELAXED);
  pthread_mutex_unlock(&lock);
}

/* Loads the sentinel, once, under the lock. */
static void load_sentinel(void) {
  void *h = dlopen(sentinel_file, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  struct link_map *lm = NULL;
  if (h != NULL && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0) {
    /* a look for libcuda made before the sentinel was loaded must not validate the fast path */
    __atomic_store_n(&seen_adds, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sentinel, lm, __ATOMIC_RELEASE);
  }
  free(sentinel_file); /* one try: without a sentinel the counter check serves */
  __atomic_store_n(&sentinel_file, NULL, __ATOMIC_RELAXED);
}

unsigned long coll_gpu_mem_slow_checks(void) { return __atomic_load_n(&slow_checks, __ATOMIC_RELAXED); }

bool coll_gpu_mem_cuda_loaded(void) {
  if (__atomic_load_n(&cuda_loaded, __ATOMIC_ACQUIRE)) return true;
  /* glibc appends newly loaded objects at the end of the list: nothing after the sentinel means nothing
   * loaded since; seen_adds != 0 means libcuda was looked for (below) after the sentinel was loaded */
  struct link_map *s = __atomic_load_n(&sentinel, __ATOMIC_ACQUIRE);
  if (s != NULL && __atomic_load_n(&s->l_next, __ATOMIC_RELAXED) == NULL &&
      __atomic_load_n(&seen_adds, __ATOMIC_RELAXED) != 0)
    return false;
  __atomic_fetch_add(&slow_checks, 1, __ATOMIC_RELAXED);
  unsigned long long adds = 0;
  dl_iterate_phdr(read_adds, &adds);
  if (adds == __atomic_load_n(&seen_adds, __ATOMIC_RELAXED) &&
      __atomic_load_n(&sentinel_file, __ATOMIC_RELAXED) == NULL)
    return false;
  pthread_mutex_lock(&lock);
  if (sentinel_file != NULL) load_sentinel();
  if (!cuda_loaded) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) {
      if (resolve(h)) __atomic_store_n(&cuda_loaded, 1, __ATOMIC_RELEASE);
      dlclose(h); /* drops only our reference: the application keeps libcuda loaded */
    }
    __atomic_store_n(&seen_adds, adds, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&lock);
  return cuda_loaded;
}

void coll_gpu_mem_classify(const void *ptr, coll_gpu_meminfo_t *info) {
  info->kind = COLL_GPU_MEM_HOST;
  info->device = -1;
  info->ctx = NULL;
  if (ptr == NULL || !coll_gpu_mem_cuda_loaded()) return;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_CONTEXT};
  unsigned int memtype = 0;
  unsigned int managed = 0;
  int ordinal = -1;
  CUcontext ctx = NULL;
  void *data[] = {&memtype, &managed, &ordinal, &ctx};
  /* Not initialized (CUDA_ERROR_NOT_INITIALIZED) or any other failure: the CPU owns the pointer. */
  if (drv.get_attrs(4, attrs, data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) return;
  if (managed) {
    info->kind = COLL_GPU_MEM_MANAGED;
  } else if (memtype == CU_MEMORYTYPE_DEVICE) {
    info->kind = COLL_GPU_MEM_DEVICE;
  } else {
    return; /* unregistered host memory, or cudaHostAlloc / cudaHostRegister memory */
  }
  info->device = ordinal;
  info->ctx = ctx;
}

/* A driver result as the kernels' status (kernels/error.h). */
static coll_gpu_status_t driver_status(CUresult rc) {
  if (rc == CUDA_SUCCESS) return COLL_GPU_SUCCESS;
  const char *reason = NULL;
  if (drv.error_string == NULL || drv.error_string(rc, &reason) != CUDA_SUCCESS || reason == NULL)
    reason = "a CUDA driver error";
  return coll_gpu_kernels_fail(COLL_GPU_CUDA_ERROR, reason);
}

coll_gpu_status_t coll_gpu_mem_alloc_of(const void *ptr, coll_gpu_alloc_t *a) {
  memset(a, 0, sizeof(*a));
  if (!coll_gpu_mem_cuda_loaded()) return coll_gpu_kernels_fail(COLL_GPU_CUDA_ERROR, "CUDA is not loaded");
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  CUdeviceptr base = 0;
  size_t size = 0;
  unsigned long long id = 0;
  int legacy = 0; /* a bool the driver writes: its low byte */
  void *data[] = {&base, &size, &id, &legacy};
  const CUresult rc = drv.get_attrs(4, attrs, data, (CUdeviceptr)(uintptr_t)ptr);
  if (rc != CUDA_SUCCESS) return driver_status(rc);
  a->base = (void *)(uintptr_t)base;
  a->size = size;
  a->id = id;
  a->exportable = (legacy & 0xff) != 0;
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t coll_gpu_mem_ctx_enter(const coll_gpu_meminfo_t *info, void **saved) {
  CUcontext cur = NULL;
  *saved = NULL;
  CUresult rc = drv.ctx_get(&cur);
  if (rc != CUDA_SUCCESS) return driver_status(rc);
  *saved = cur;
  CUcontext want = (CUcontext)info->ctx;
  if (want == NULL) {
    /* pool or VMM memory: use the primary context of the device that owns it */
    if (info->device < 0 || info->device >= MAX_DEVICES)
      return driver_status(cur != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE);
    pthread_mutex_lock(&lock);
    if (primary[info->device] == NULL) {
      CUdevice dev;
      rc = drv.device_get(&dev, info->device);
      if (rc == CUDA_SUCCESS) rc = drv.primary_retain(&primary[info->device], dev);
    }
    want = primary[info->device];
    pthread_mutex_unlock(&lock);
    if (rc != CUDA_SUCCESS) return driver_status(rc);
  }
  if (want == cur) return COLL_GPU_SUCCESS;
  return driver_status(drv.ctx_set(want));
}

void coll_gpu_mem_ctx_leave(void *saved) {
  CUcontext cur = NULL;
  if (drv.ctx_get(&cur) == CUDA_SUCCESS && cur != (CUcontext)saved) drv.ctx_set((CUcontext)saved);
}

void coll_gpu_mem_fini(void) {
  if (!cuda_loaded) return;
  for (int d = 0; d < MAX_DEVICES; ++d) {
    if (primary[d] == NULL) continue;
    CUdevice dev;
    if (drv.device_get(&dev, d) == CUDA_SUCCESS) drv.primary_release(dev);
    primary[d] = NULL;
  }
}
