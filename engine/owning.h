/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Owning types for the engine's GPU resources (C++ only): each frees what it holds when it goes, moves and
 * never copies, so that no failure path of the engine leaks a device allocation, a mapping or a stream.
 * They free in the context current at the time: the engine enters its device's context (ContextScope)
 * around creating and destroying them.
 */
#ifndef COLL_GPU_OWNING_H
#define COLL_GPU_OWNING_H

#include <stdlib.h>

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "common/status.h"
#include "kernels/gpu_mem.h"
#include "kernels/kernels.h"

namespace coll_gpu {

// Host memory comes from malloc, not operator new: the engine does not link the C++ runtime library, so
// loading the component costs a CPU-only program no extra library. An object made by make_host, or an
// array of plain data made by make_host_array (zeroed), is destroyed and freed when its pointer goes;
// nullptr when memory ran out.
template <typename T>
struct HostDelete {
  void operator()(T *p) const {
    if (p == nullptr) return;
    p->~T();
    free((void *)p);
  }
};
template <typename T>
struct HostDelete<T[]> {
  static_assert(std::is_trivially_destructible<T>::value, "host arrays hold plain data");
  void operator()(T *p) const { free((void *)p); }
};
template <typename T>
using HostPtr = std::unique_ptr<T, HostDelete<T>>;

template <typename T, typename... Args>
HostPtr<T> make_host(Args &&...args) {
  void *m = malloc(sizeof(T));
  return HostPtr<T>(m != nullptr ? new (m) T(std::forward<Args>(args)...) : nullptr);
}
template <typename T>
HostPtr<T[]> make_host_array(size_t n) {
  return HostPtr<T[]>((T *)calloc(n > 0 ? n : 1, sizeof(T)));
}

// A handle of the kernels' C API, given back through Free when it goes (Free's errors are ignored: the
// application may have reset the device already).
template <coll_gpu_status_t (*Free)(void *)>
class Owned {
 public:
  Owned() = default;
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  Owned(Owned &&o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Owned &operator=(Owned &&o) noexcept {
    reset();
    h_ = o.h_;
    o.h_ = nullptr;
    return *this;
  }
  ~Owned() { reset(); }
  void *get() const { return h_; }
  void reset() {
    if (h_ != nullptr) Free(h_);
    h_ = nullptr;
  }
  // Where a C API that creates the resource writes its handle.
  void **out() {
    reset();
    return &h_;
  }

 private:
  void *h_ = nullptr;
};

using DeviceMemory = Owned<coll_gpu_dev_free>;              // coll_gpu_dev_alloc
using IpcMapping = Owned<coll_gpu_ipc_close>;               // coll_gpu_ipc_open
using Stream = Owned<coll_gpu_stream_destroy>;              // coll_gpu_stream_create
using Event = Owned<coll_gpu_event_destroy>;                // coll_gpu_event_create
using HostMappedMemory = Owned<coll_gpu_host_mapped_free>;  // coll_gpu_host_mapped_alloc

// While it lives, the current context is the one that owns `mem` (kernels/gpu_mem.h); the one before
// comes back when it goes. With enter false it changes nothing (rc() is COLL_GPU_UNAVAILABLE).
class ContextScope {
 public:
  explicit ContextScope(const coll_gpu_meminfo_t &mem, bool enter = true)
      : rc_(enter ? coll_gpu_mem_ctx_enter(&mem, &saved_) : COLL_GPU_UNAVAILABLE),
        why_(rc_ == COLL_GPU_SUCCESS ? nullptr : coll_gpu_kernels_error()) {}
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
  ~ContextScope() {
    if (rc_ == COLL_GPU_SUCCESS) coll_gpu_mem_ctx_leave(saved_);
  }
  coll_gpu_status_t rc() const { return rc_; }  // COLL_GPU_SUCCESS once entered
  const char *why() const { return why_; }      // where entering failed: the reason

 private:
  void *saved_ = nullptr;
  coll_gpu_status_t rc_;
  const char *why_;
};

// Fails with the reason when `ctx` could not enter the context of mem's device.
inline coll_gpu_status_t entered(const ContextScope &ctx, const coll_gpu_meminfo_t &mem, char *why, size_t len) {
  if (ctx.rc() == COLL_GPU_SUCCESS) return COLL_GPU_SUCCESS;
  coll_gpu_say(why, len, "cannot enter the context of device %d: %s", mem.device, ctx.why());
  return COLL_GPU_CUDA_ERROR;
}

}  // namespace coll_gpu

#endif
