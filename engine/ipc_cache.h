/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The user buffers of a node's ranks, mapped into each other's processes through CUDA IPC, for the calls that
 * move data straight from one user buffer into another (engine/engine_zero_copy.cc's exchange). C++ only.
 *
 * A rank exports an allocation once: its handle, kept by the id CUDA gave the allocation (coll_gpu_alloc_t).
 * A rank maps a peer's allocation once, kept by the peer and that id: memory freed and allocated again at the
 * same address has another id, so it is never served the old mapping; the sub-allocations of a caching
 * allocator (a CuPy pool, PyTorch's caching allocator) share their allocation's one. The mappings are bounded
 * by the bytes they map: before a mapping opens past the bound, the least recently used are closed, never one
 * the current call uses; all of them when the cache goes (clear).
 *
 * A mapping of an allocation its owner has freed is never used again (its id never comes back), so what the
 * owner puts there later is never written through it.
 */
#ifndef COLL_GPU_IPC_CACHE_H
#define COLL_GPU_IPC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

namespace coll_gpu {

constexpr int kIpcHandleBytes = 64;  // cudaIpcMemHandle_t

// How the caches reach CUDA: the runtime's IPC calls (cuda_ipc_ops, the kernels' interface), or a test's.
struct IpcOps {
  void *ctx;
  coll_gpu_status_t (*get)(void *ctx, void *base, unsigned char *handle);
  coll_gpu_status_t (*open)(void *ctx, const unsigned char *handle, void **mapped);
  coll_gpu_status_t (*close)(void *ctx, void *mapped);
};
IpcOps cuda_ipc_ops();

// This process's allocations, exported: their handles by id.
class IpcExports {
 public:
  static constexpr int kEntries = 64;
  // The handle of allocation `id` at `base` into out: kept, or exported now (then kept, the least recently used
  // one dropped when all are taken). SUCCESS or ops.get's failure.
  coll_gpu_status_t handle(const IpcOps &ops, unsigned long long id, void *base, unsigned char *out);
  int count() const { return n_; }

 private:
  struct Entry {
    unsigned long long id;
    uint64_t used;
    unsigned char h[kIpcHandleBytes];
  };
  Entry e_[kEntries] = {};
  int n_ = 0;
  uint64_t tick_ = 0;
};

// Peers' allocations mapped here.
class IpcImports {
 public:
  static constexpr int kEntries = 256;
  explicit IpcImports(size_t bound) : bound_(bound) {}
  IpcImports(const IpcImports &) = delete;
  IpcImports &operator=(const IpcImports &) = delete;
  // In *mapped: allocation `id` of rank `peer` (of `bytes`, exported as `handle`), as mapped here: kept, or opened
  // now, after closing the least recently used mappings of other calls than `call` while the bytes mapped would
  // pass the bound (or no entry is free). The mapping serves `call` (a number that grows with each call). SUCCESS,
  // COLL_GPU_UNAVAILABLE where every entry is the current call's, or ops.open's failure.
  coll_gpu_status_t map(const IpcOps &ops, int peer, unsigned long long id, size_t bytes, const unsigned char *handle,
                        uint64_t call, void **mapped);
  // Closes every mapping (errors ignored: the peer may be gone).
  void clear(const IpcOps &ops);
  size_t bytes() const { return bytes_; }
  int count() const { return n_; }

 private:
  struct Entry {
    int peer;
    unsigned long long id;
    size_t bytes;
    void *mapped;
    uint64_t call;  // the last call that used it
    uint64_t used;  // tick of its last use
  };
  bool close_lru(const IpcOps &ops, uint64_t call);
  Entry e_[kEntries] = {};
  int n_ = 0;
  size_t bytes_ = 0;
  const size_t bound_;
  uint64_t tick_ = 0;
};

}  // namespace coll_gpu

#endif
