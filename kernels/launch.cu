/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The plain launch interface of the kernels (kernels/kernels.h) and the CUDA resources the engine needs: device
 * scratch, IPC handles, a stream, host-mapped status words. CUDA's results become the interface's status here
 * (kernels/error.h).
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_status.h"
#include "kernels/primitives.cuh"

extern "C" size_t coll_gpu_scratch_bytes(const coll_gpu_scratch_layout_t *l) { return coll_gpu::Layout(*l).total(); }

extern "C" coll_gpu_status_t coll_gpu_dev_comm_setup(coll_gpu_dev_comm_t *comm, coll_gpu_dev_conns_t *conns, int rank,
                                                     int nranks, const coll_gpu_scratch_layout_t *layout,
                                                     void *const *peer_scratch, int nrings, int span,
                                                     const uint16_t *rings, coll_gpu_dev_status_t *status,
                                                     volatile uint8_t *waiting, uint64_t timeout_ns,
                                                     uint64_t linger_ns) {
  if (nranks < 1 || nranks > COLL_GPU_MAX_COMM_RANKS || rank < 0 || rank >= nranks || nrings < 1 ||
      nrings > COLL_GPU_MAX_RINGS || span < 1 || layout->nranks != nranks || layout->nchannels < 0 ||
      layout->nchannels > COLL_GPU_MAX_CHANNELS)
    return coll_gpu_kernels_fail(COLL_GPU_INTERNAL_ERROR, "a rank, ring, span or channel count out of range");
  const coll_gpu::Layout L(*layout);
  auto at = [&](int r, size_t off) { return (char *)peer_scratch[r] + off; };
  memset(comm, 0, sizeof(*comm));
  comm->rank = rank;
  comm->nranks = nranks;
  comm->layout = *layout;
  comm->direct = L.direct();
  for (int r = 0; r < nranks && L.direct(); ++r) {
    comm->peer_scratch[r] = peer_scratch[r];
    if (peer_scratch[r] == nullptr) comm->direct = 0;
  }
  comm->status = status;
  comm->waiting = waiting;
  comm->timeout_ns = timeout_ns;
  comm->linger_ns = linger_ns;
  coll_gpu_dev_conns_t *dev = (coll_gpu_dev_conns_t *)at(rank, L.conns());
  const uint16_t *dev_rings = (const uint16_t *)at(rank, L.rings());
  comm->channels = dev->channels;
  comm->nrings = nrings;
  comm->span = span;
  comm->peers = dev->peers;
  memset(conns, 0, sizeof(*conns));
  // a ring holds every rank once
  uint8_t *seen = (uint8_t *)malloc((size_t)nranks);
  if (seen == nullptr) return coll_gpu_kernels_fail(COLL_GPU_SYSTEM_ERROR, "out of host memory");
  int pos[COLL_GPU_MAX_RINGS];
  for (int i = 0; i < nrings; ++i) {
    const uint16_t *ring = rings + (size_t)i * nranks;
    memset(seen, 0, (size_t)nranks);
    pos[i] = -1;
    for (int k = 0; k < nranks; ++k) {
      if (ring[k] >= nranks || seen[ring[k]]) {
        pos[i] = -1;
        break;
      }
      seen[ring[k]] = 1;
      if (ring[k] == rank) pos[i] = k;
    }
  }
  free(seen);
  for (int i = 0; i < nrings; ++i)
    if (pos[i] < 0) return coll_gpu_kernels_fail(COLL_GPU_INTERNAL_ERROR, "a ring that does not hold every rank once");
  for (int ch = 0; ch < layout->nchannels; ++ch) {
    coll_gpu_dev_channel_t &c = conns->channels[ch];
    const int i = coll_gpu_channel_ring(ch, nrings, span);
    const uint16_t *ring = rings + (size_t)i * nranks;
    c.pos = pos[i];
    c.ring = dev_rings + (size_t)i * nranks;
    c.next = ring[(c.pos + 1) % nranks];
    c.prev = ring[(c.pos + nranks - 1) % nranks];
    c.steps = (uint64_t *)at(rank, L.steps(ch));
  }
  for (int q = 0; L.p2p() && q < nranks; ++q) {
    coll_gpu_dev_peer_t &e = conns->peers[q];
    if (q == rank) continue;
    for (int c = 0; c < COLL_GPU_P2P_CONNS; ++c) e.steps[c] = (uint64_t *)at(rank, L.p2p_steps(q, c));
  }
  return COLL_GPU_SUCCESS;
}

extern "C" void coll_gpu_dev_ipc_conns(const coll_gpu_dev_comm_t *comm, coll_gpu_dev_conns_t *conns,
                                       void *const *peer_scratch) {
  const coll_gpu::Layout L(comm->layout);
  const int rank = comm->rank;
  auto at = [&](int r, size_t off) { return (char *)peer_scratch[r] + off; };
  // a FIFO in rank fr's scratch at `fifo`, its tail there at `tail`, its head in rank hr's at `head`; steps of any
  // size need no telling and no LL lines between GPUs
  auto conn = [&](int fr, size_t fifo, size_t tail, int hr, size_t head) {
    return coll_gpu_conn_t{at(fr, fifo), (uint64_t *)at(fr, tail), (uint64_t *)at(hr, head), nullptr, nullptr, 0};
  };
  for (int ch = 0; ch < comm->layout.nchannels; ++ch) {
    coll_gpu_dev_channel_t &c = conns->channels[ch];
    // to the next rank: its FIFO and tail, my head; from the previous one: my FIFO and tail, its head
    if (peer_scratch[c.next] != nullptr) c.send = conn(c.next, L.fifo(ch, 0), L.tail(ch), rank, L.head(ch));
    if (peer_scratch[c.prev] != nullptr) c.recv = conn(rank, L.fifo(ch, 0), L.tail(ch), c.prev, L.head(ch));
  }
  for (int q = 0; L.p2p() && q < comm->nranks; ++q) {
    coll_gpu_dev_peer_t &e = conns->peers[q];
    if (q == rank || peer_scratch[q] == nullptr) continue;
    for (int c = 0; c < COLL_GPU_P2P_CONNS; ++c) {
      // to q: its FIFO and tail for me, my head for q; from q: my FIFO and tail for q, its head for me
      e.send[c] = conn(q, L.p2p_fifo(rank, c, 0), L.p2p_tail(rank, c), rank, L.p2p_head(q, c));
      e.recv[c] = conn(rank, L.p2p_fifo(q, c, 0), L.p2p_tail(q, c), q, L.p2p_head(rank, c));
    }
  }
}

extern "C" coll_gpu_status_t coll_gpu_dev_comm_upload(const coll_gpu_dev_comm_t *comm,
                                                      const coll_gpu_dev_conns_t *conns, int nrings,
                                                      const uint16_t *rings) {
  const coll_gpu::Layout L(comm->layout);
  // the scratch is device memory (IPC) or pinned host memory mapped into the device (SHM): the copies take their
  // direction from the pointers
  cudaError_t err = cudaMemcpy((void *)comm->channels, conns, sizeof(*conns), cudaMemcpyDefault);
  if (err == cudaSuccess)
    err = cudaMemcpy((char *)comm->channels + (L.rings() - L.conns()), rings,
                     (size_t)nrings * comm->nranks * sizeof(uint16_t), cudaMemcpyDefault);
  return coll_gpu_cuda_status(err);
}

namespace coll_gpu {
int reduce_blocks(const coll_gpu_dev_comm_t &comm, const coll_gpu_work_t &p) {
  if (p.zc_parts > 0) return comm.nranks * p.zc_parts;  // the zero-copy reduce-scatter
  if (p.algo != COLL_GPU_ALGO_ONESHOT) return p.nchannels;
  size_t count = 0;  // reduce-scatter's direct kernel: the longest block (reduce's runs the one-shot body)
  for (int q = 0; q < comm.nranks; ++q) count = coll_gpu_max(count, rs_block(p, q).count);
  return ll_blocks(count * coll_gpu_dtype_size(p.type), comm.max_blocks);
}
}  // namespace coll_gpu

static bool is_reduction(coll_gpu_coll_t coll) {
  return coll == COLL_GPU_COLL_REDUCE || coll == COLL_GPU_COLL_REDUCE_SCATTER;
}

// The direct calls of allreduce and reduce: the one-shot kernel.
static bool oneshot_body(const coll_gpu_work_t &w) {
  return w.algo == COLL_GPU_ALGO_ONESHOT && (w.coll == COLL_GPU_COLL_ALLREDUCE || w.coll == COLL_GPU_COLL_REDUCE);
}

// The blocks of the kernel coll_gpu_work_launch picks.
extern "C" int coll_gpu_work_blocks(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w) {
  if (oneshot_body(*w)) return coll_gpu::oneshot_blocks(*comm, *w);
  if (is_reduction(w->coll)) return coll_gpu::reduce_blocks(*comm, *w);
  if (w->coll != COLL_GPU_COLL_ALLREDUCE) return coll_gpu::move_blocks(*comm, *w);
  return w->nchannels;
}

namespace {
// coll_gpu_work_launch's kernel: 0 or a cudaError_t value
int work_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *call, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  coll_gpu_work_t w = coll_gpu::bytewise(*call);
  const size_t slot = comm->layout.slot_bytes;
  w.chunk = w.chunk == 0 || w.chunk > slot ? slot : w.chunk / coll_gpu::kPack * coll_gpu::kPack;
  if (w.chunk == 0) return (int)cudaErrorInvalidValue;
  const coll_gpu_dev_comm_t &c = *comm;
  if (oneshot_body(w))
    COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::oneshot_typed, (int)cudaErrorInvalidValue, w.type, w.op, c, w, s);
  if (is_reduction(w.coll))
    COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::reduce_typed, (int)cudaErrorInvalidValue, w.type, w.op, c, w, s);
  if (w.coll != COLL_GPU_COLL_ALLREDUCE) return coll_gpu::move_launch(c, w, s);
  switch (w.algo) {
    case COLL_GPU_ALGO_TWOSHOT:
      COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::twoshot_typed, (int)cudaErrorInvalidValue, w.type, w.op, c, w, s);
    case COLL_GPU_ALGO_RING:
      COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::ring_typed, (int)cudaErrorInvalidValue, w.type, w.op, c, w, s);
    case COLL_GPU_ALGO_TREE:
      COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::tree_typed, (int)cudaErrorInvalidValue, w.type, w.op, c, w, s);
    case COLL_GPU_ALGO_ALLGATHER:  // the reduction after the engine's allgather: reduce.cuh's
      COLL_GPU_DISPATCH_BYTEWISE(coll_gpu::reduce_typed, (int)cudaErrorInvalidValue, w.type, w.op, c, w, s);
    default:
      return (int)cudaErrorInvalidValue;
  }
}
}  // namespace

extern "C" coll_gpu_status_t coll_gpu_work_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *call,
                                                  void *stream) {
  return coll_gpu_cuda_status((cudaError_t)work_launch(comm, call, stream));
}

extern "C" coll_gpu_status_t coll_gpu_zc_engines_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w,
                                                        void *stream, void *copy_stream, void *ready, void *copied) {
  return coll_gpu_cuda_status((cudaError_t)coll_gpu::move_zc_engines(
      *comm, *w, (cudaStream_t)stream, (cudaStream_t)copy_stream, (cudaEvent_t)ready, (cudaEvent_t)copied));
}

extern "C" coll_gpu_status_t coll_gpu_dev_alloc(void **ptr, size_t bytes) {
  cudaError_t err = cudaMalloc(ptr, bytes);
  if (err == cudaSuccess) err = cudaMemset(*ptr, 0, bytes);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  return coll_gpu_cuda_status(err);
}

extern "C" coll_gpu_status_t coll_gpu_dev_free(void *ptr) { return coll_gpu_cuda_status(cudaFree(ptr)); }

extern "C" int coll_gpu_ipc_handle_size(void) { return (int)sizeof(cudaIpcMemHandle_t); }

extern "C" coll_gpu_status_t coll_gpu_ipc_get(void *ptr, void *handle) {
  return coll_gpu_cuda_status(cudaIpcGetMemHandle((cudaIpcMemHandle_t *)handle, ptr));
}

extern "C" coll_gpu_status_t coll_gpu_ipc_open(const void *handle, void **ptr) {
  cudaIpcMemHandle_t h;
  memcpy(&h, handle, sizeof(h));
  return coll_gpu_cuda_status(cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess));
}

extern "C" coll_gpu_status_t coll_gpu_ipc_close(void *ptr) { return coll_gpu_cuda_status(cudaIpcCloseMemHandle(ptr)); }

extern "C" coll_gpu_status_t coll_gpu_stream_create(void **stream, int nonblocking) {
  return coll_gpu_cuda_status(
      cudaStreamCreateWithFlags((cudaStream_t *)stream, nonblocking ? cudaStreamNonBlocking : cudaStreamDefault));
}

extern "C" coll_gpu_status_t coll_gpu_stream_destroy(void *stream) {
  return coll_gpu_cuda_status(cudaStreamDestroy((cudaStream_t)stream));
}

extern "C" coll_gpu_status_t coll_gpu_event_create(void **event) {
  return coll_gpu_cuda_status(cudaEventCreateWithFlags((cudaEvent_t *)event, cudaEventDisableTiming));
}

extern "C" coll_gpu_status_t coll_gpu_event_destroy(void *event) {
  return coll_gpu_cuda_status(cudaEventDestroy((cudaEvent_t)event));
}

extern "C" coll_gpu_status_t coll_gpu_stream_sync(void *stream) {
  return coll_gpu_cuda_status(cudaStreamSynchronize((cudaStream_t)stream));
}

extern "C" coll_gpu_status_t coll_gpu_copy_async(void *dst, const void *src, size_t bytes, void *stream) {
  return coll_gpu_cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
}

extern "C" coll_gpu_status_t coll_gpu_legacy_stream_wait(void) {
  cudaError_t err = cudaStreamQuery(cudaStreamLegacy);
  return coll_gpu_cuda_status(err == cudaErrorNotReady ? cudaStreamSynchronize(cudaStreamLegacy) : err);
}

extern "C" coll_gpu_status_t coll_gpu_host_mapped_alloc(void **host, void **dev, size_t bytes) {
  cudaError_t err = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) return coll_gpu_cuda_status(err);
  memset(*host, 0, bytes);
  err = cudaHostGetDevicePointer(dev, *host, 0);
  if (err != cudaSuccess) cudaFreeHost(*host);
  return coll_gpu_cuda_status(err);
}

extern "C" coll_gpu_status_t coll_gpu_host_mapped_free(void *host) { return coll_gpu_cuda_status(cudaFreeHost(host)); }

extern "C" coll_gpu_status_t coll_gpu_host_register(void *host, size_t bytes, void **dev) {
  cudaError_t err = cudaHostRegister(host, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (err != cudaSuccess) return coll_gpu_cuda_status(err);
  err = cudaHostGetDevicePointer(dev, host, 0);
  if (err != cudaSuccess) cudaHostUnregister(host);
  return coll_gpu_cuda_status(err);
}

extern "C" coll_gpu_status_t coll_gpu_host_unregister(void *host) {
  return coll_gpu_cuda_status(cudaHostUnregister(host));
}

extern "C" coll_gpu_status_t coll_gpu_peer_access(int device, const char *busid, int *can) {
  int peer = -1;
  *can = 0;
  cudaError_t err = cudaDeviceGetByPCIBusId(&peer, busid);
  if (err == cudaSuccess && peer == device) {
    *can = 1;
    return COLL_GPU_SUCCESS;
  }
  if (err == cudaSuccess) err = cudaDeviceCanAccessPeer(can, device, peer);
  if (err == cudaSuccess) return COLL_GPU_SUCCESS;
  (void)cudaGetLastError();  // not a sticky error: clear it
  *can = 0;
  return coll_gpu_kernels_fail(COLL_GPU_UNAVAILABLE, cudaGetErrorString(err));
}

extern "C" coll_gpu_status_t coll_gpu_device_identity(int device, char uuid[16], char busid[32], int *sms) {
  cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return coll_gpu_cuda_status(err);
  memcpy(uuid, prop.uuid.bytes, 16);
  *sms = prop.multiProcessorCount;
  return coll_gpu_cuda_status(cudaDeviceGetPCIBusId(busid, 32, device));
}
