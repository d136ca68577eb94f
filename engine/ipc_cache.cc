/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The exported and mapped user buffers (engine/ipc_cache.h).
 */
#include "engine/ipc_cache.h"

#include <string.h>

#include "kernels/kernels.h"

namespace coll_gpu {

namespace {
coll_gpu_status_t cuda_get(void *, void *base, unsigned char *handle) { return coll_gpu_ipc_get(base, handle); }
coll_gpu_status_t cuda_open(void *, const unsigned char *handle, void **mapped) {
  return coll_gpu_ipc_open(handle, mapped);
}
coll_gpu_status_t cuda_close(void *, void *mapped) { return coll_gpu_ipc_close(mapped); }
}  // namespace

IpcOps cuda_ipc_ops() { return IpcOps{nullptr, cuda_get, cuda_open, cuda_close}; }

coll_gpu_status_t IpcExports::handle(const IpcOps &ops, unsigned long long id, void *base, unsigned char *out) {
  ++tick_;
  for (int i = 0; i < n_; ++i)
    if (e_[i].id == id) {
      e_[i].used = tick_;
      memcpy(out, e_[i].h, kIpcHandleBytes);
      return COLL_GPU_SUCCESS;
    }
  const coll_gpu_status_t st = ops.get(ops.ctx, base, out);
  if (st != COLL_GPU_SUCCESS) return st;
  int at = n_;
  if (n_ < kEntries) {
    ++n_;
  } else {  // the least recently used goes
    at = 0;
    for (int i = 1; i < n_; ++i)
      if (e_[i].used < e_[at].used) at = i;
  }
  e_[at].id = id;
  e_[at].used = tick_;
  memcpy(e_[at].h, out, kIpcHandleBytes);
  return COLL_GPU_SUCCESS;
}

bool IpcImports::close_lru(const IpcOps &ops, uint64_t call) {
  int at = -1;
  for (int i = 0; i < n_; ++i)
    if (e_[i].call != call && (at < 0 || e_[i].used < e_[at].used)) at = i;
  if (at < 0) return false;
  (void)ops.close(ops.ctx, e_[at].mapped);
  bytes_ -= e_[at].bytes;
  e_[at] = e_[--n_];
  return true;
}

coll_gpu_status_t IpcImports::map(const IpcOps &ops, int peer, unsigned long long id, size_t bytes,
                                  const unsigned char *handle, uint64_t call, void **mapped) {
  ++tick_;
  for (int i = 0; i < n_; ++i)
    if (e_[i].peer == peer && e_[i].id == id) {
      e_[i].used = tick_;
      e_[i].call = call;
      *mapped = e_[i].mapped;
      return COLL_GPU_SUCCESS;
    }
  while ((n_ > 0 && bytes_ + bytes > bound_) || n_ == kEntries)
    if (!close_lru(ops, call)) break;
  if (n_ == kEntries) return COLL_GPU_UNAVAILABLE;  // every entry the current call's
  void *m = nullptr;
  const coll_gpu_status_t st = ops.open(ops.ctx, handle, &m);
  if (st != COLL_GPU_SUCCESS) return st;
  e_[n_++] = Entry{peer, id, bytes, m, call, tick_};
  bytes_ += bytes;
  *mapped = m;
  return COLL_GPU_SUCCESS;
}

void IpcImports::clear(const IpcOps &ops) {
  for (int i = 0; i < n_; ++i) (void)ops.close(ops.ctx, e_[i].mapped);
  n_ = 0;
  bytes_ = 0;
}

}  // namespace coll_gpu
