/*
 * The plain launch interface of the allreduce kernels (kernels/allreduce.h) and the CUDA resources the
 * engine needs: device scratch, IPC handles, a stream, host-mapped status words.
 */
#include <cuda_runtime.h>
#include <string.h>

#include "kernels/primitives.cuh"

extern "C" size_t coll_gpu_ar_scratch_bytes(const coll_gpu_ar_layout_t *l) { return coll_gpu::Layout(*l).total(); }

namespace coll_gpu {
int reduce_blocks(const coll_gpu_ar_params_t &p) {
  if (p.algo != COLL_GPU_ALGO_ONESHOT) return p.nchannels;
  size_t count = p.count;  // reduce: one part; reduce-scatter: the longest block
  if (p.coll == COLL_GPU_COLL_REDUCE_SCATTER)
    for (int q = 0; q < p.nranks; ++q) count = coll_gpu_max(count, p.blocks[q].count);
  return ll_blocks(count * coll_gpu_dtype_size(p.type));
}
}  // namespace coll_gpu

static bool is_reduction(coll_gpu_coll_t coll) {
  return coll == COLL_GPU_COLL_REDUCE || coll == COLL_GPU_COLL_REDUCE_SCATTER;
}

extern "C" int coll_gpu_ar_blocks(const coll_gpu_ar_params_t *p) {
  if (is_reduction(p->coll)) return coll_gpu::reduce_blocks(*p);
  if (p->coll != COLL_GPU_COLL_ALLREDUCE) return coll_gpu::move_blocks(*p);
  return p->algo == COLL_GPU_ALGO_ONESHOT ? coll_gpu::oneshot_blocks(*p) : p->nchannels;
}

extern "C" int coll_gpu_ar_launch(const coll_gpu_ar_params_t *call, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const coll_gpu_ar_params_t p = coll_gpu::bytewise(*call);
  if (is_reduction(p.coll))
    COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::reduce_typed, (int)cudaErrorInvalidValue, p.type, p.op, p, s);
  if (p.coll != COLL_GPU_COLL_ALLREDUCE) return coll_gpu::move_launch(p, s);
  switch (p.algo) {
    case COLL_GPU_ALGO_ONESHOT:
      return coll_gpu::oneshot_launch(p, s);
    case COLL_GPU_ALGO_TWOSHOT:
      COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::twoshot_typed, (int)cudaErrorInvalidValue, p.type, p.op, p, s);
    case COLL_GPU_ALGO_RING:
      COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::ring_typed, (int)cudaErrorInvalidValue, p.type, p.op, p, s);
    default:
      return (int)cudaErrorInvalidValue;
  }
}

extern "C" int coll_gpu_dev_alloc(void **ptr, size_t bytes) {
  cudaError_t err = cudaMalloc(ptr, bytes);
  if (err == cudaSuccess) err = cudaMemset(*ptr, 0, bytes);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  return (int)err;
}

extern "C" int coll_gpu_dev_free(void *ptr) { return (int)cudaFree(ptr); }

extern "C" int coll_gpu_ipc_handle_size(void) { return (int)sizeof(cudaIpcMemHandle_t); }

extern "C" int coll_gpu_ipc_get(void *ptr, void *handle) {
  return (int)cudaIpcGetMemHandle((cudaIpcMemHandle_t *)handle, ptr);
}

extern "C" int coll_gpu_ipc_open(const void *handle, void **ptr) {
  cudaIpcMemHandle_t h;
  memcpy(&h, handle, sizeof(h));
  return (int)cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
}

extern "C" int coll_gpu_ipc_close(void *ptr) { return (int)cudaIpcCloseMemHandle(ptr); }

extern "C" int coll_gpu_stream_create(void **stream, int nonblocking) {
  return (int)cudaStreamCreateWithFlags((cudaStream_t *)stream,
                                        nonblocking ? cudaStreamNonBlocking : cudaStreamDefault);
}

extern "C" int coll_gpu_stream_destroy(void *stream) { return (int)cudaStreamDestroy((cudaStream_t)stream); }

extern "C" int coll_gpu_stream_sync(void *stream) { return (int)cudaStreamSynchronize((cudaStream_t)stream); }

extern "C" int coll_gpu_legacy_stream_wait(void) {
  cudaError_t err = cudaStreamQuery(cudaStreamLegacy);
  return (int)(err == cudaErrorNotReady ? cudaStreamSynchronize(cudaStreamLegacy) : err);
}

extern "C" int coll_gpu_host_mapped_alloc(void **host, void **dev, size_t bytes) {
  cudaError_t err = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) return (int)err;
  memset(*host, 0, bytes);
  err = cudaHostGetDevicePointer(dev, *host, 0);
  if (err != cudaSuccess) cudaFreeHost(*host);
  return (int)err;
}

extern "C" int coll_gpu_host_mapped_free(void *host) { return (int)cudaFreeHost(host); }

extern "C" int coll_gpu_device_identity(int device, char uuid[16], char busid[32]) {
  cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return (int)err;
  memcpy(uuid, prop.uuid.bytes, 16);
  return (int)cudaDeviceGetPCIBusId(busid, 32, device);
}
