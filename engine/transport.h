/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Transports (C++ only; NCCL's ncclTransport): the ways a rank's kernels reach a peer. IPC reaches the
 * peers of the rank's node through their scratch, mapped here with CUDA IPC (this file); SHM the same peers where
 * their GPUs lack peer access, through scratch in pinned shared host memory (this file); NET reaches the
 * ranks of other nodes through FIFOs in host memory that the network proxy moves (engine/net.h). Each peer
 * this rank has connections with belongs to exactly one of them, by node (a communicator's node peers are all IPC's
 * or all SHM's).
 *
 * Engine creation runs in steps (engine/engine_create.cc): peer exchange -> nodes and channels (the rings, and
 * which ranks this rank's kernels have connections with) -> the scratch, sized for those channels ->
 * transports -> layout. In the transports step
 * each transport connects the peers it reaches (connect: a collective step, which every rank makes in the
 * same order even after a local failure); in the layout step the kernels' view of the communicator is set
 * up (coll_gpu_dev_comm_setup) and each transport fills the connections of its peers into it (fill). Both
 * run in the engine's device context.
 *
 * A transport is a table of functions over its object, as NCCL's is: no virtual functions, so the engine
 * needs no C++ runtime library (engine/owning.h).
 */
#ifndef COLL_GPU_ENGINE_TRANSPORT_H
#define COLL_GPU_ENGINE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/bootstrap.h"
#include "engine/owning.h"
#include "engine/shm_segment.h"
#include "kernels/kernels.h"

namespace coll_gpu {

// What the steps before the transports decided, for every rank.
struct TransportLinks {
  const coll_gpu_bootstrap_t *b;
  const coll_gpu_peer_t *peers;  // the peer exchange
  const uint16_t *node;          // every rank's node (its lowest rank)
  const uint8_t *linked;         // 1: this rank's kernels have connections with that rank
  // Whether rank r is a peer of `rank`'s node that its kernels have connections with (IPC's or SHM's to reach).
  bool node_peer(int r, int rank) const { return r != rank && linked[r] && node[r] == node[rank]; }
};

// One transport: its name and its two steps, over its object.
struct Transport {
  const char *name;
  void *self;
  // Reaches the peers it serves. A collective step: every rank calls it; the status is this rank's.
  coll_gpu_status_t (*connect)(void *self, const TransportLinks &links, char *why, size_t len);
  // The connections of the peers it reaches, into conns (as coll_gpu_dev_comm_setup set them up).
  coll_gpu_status_t (*fill)(void *self, const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *why,
                            size_t len);
};

// The table of a transport class T with members name (a string), connect and fill of the signatures above.
template <typename T>
Transport transport_of(T *t) {
  return Transport{
      T::kName, t,
      [](void *s, const TransportLinks &l, char *why, size_t len) { return static_cast<T *>(s)->connect(l, why, len); },
      [](void *s, const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *why, size_t len) {
        return static_cast<T *>(s)->fill(comm, conns, why, len);
      }};
}

// IPC: the peers of this rank's node that it has connections with (every peer of a direct communicator,
// otherwise its rings' neighbours), their scratch mapped here from the handles of the communicator's own
// exchange.
class Ipc {
 public:
  static constexpr const char *kName = "IPC";
  // The peers' scratch a rank maps at most: every peer of a direct communicator, or both neighbours in
  // each ring.
  static constexpr int kMaxMapped =
      COLL_GPU_MAX_DIRECT > 2 * COLL_GPU_MAX_RINGS ? COLL_GPU_MAX_DIRECT : 2 * COLL_GPU_MAX_RINGS;

  Ipc() = default;
  Ipc(const Ipc &) = delete;
  Ipc &operator=(const Ipc &) = delete;

  // Before any collective step: the per-rank arrays for nranks ranks, the mappings to go into mem's
  // context; false when host memory ran out.
  bool alloc(int rank, int nranks, const coll_gpu_meminfo_t *mem);
  // This rank's own scratch and its IPC handle, in the device's context. Until it succeeds the exchange
  // below says this rank has no scratch.
  coll_gpu_status_t set_own(void *scratch, char *why, size_t len);
  // Allgathers the handles, then maps the scratch of the peers on this node that this rank has
  // connections with, in the device's context. Fails where a peer it maps has no scratch.
  coll_gpu_status_t connect(const TransportLinks &links, char *why, size_t len);
  // Their connections: coll_gpu_dev_ipc_conns over the mapped scratch.
  coll_gpu_status_t fill(const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *why, size_t len);
  // Every rank's scratch as this rank sees it: its own, the mapped peers', NULL for the others.
  void *const *view() const { return view_.get(); }
  // The mappings go, in the current context (the engine's device's).
  void reset();

 private:
  // every rank's entry: a byte that says it has scratch, then its handle
  char *entry(int r) const { return handles_.get() + (size_t)r * (1 + hsize_); }

  int rank_ = 0, nranks_ = 0, hsize_ = 0;
  const coll_gpu_meminfo_t *mem_ = nullptr;
  HostPtr<char[]> handles_;  // every rank's entry, 1 + hsize_ bytes each
  HostPtr<void *[]> view_;
  IpcMapping mapped_[kMaxMapped];
  int nmapped_ = 0;
};

// How SHM pins host memory and maps it into the device: the runtime's (cuda_pin_ops), or a test's. pin returns the
// kernels' status (the reason of a failure in coll_gpu_kernels_error, kernels/error.h), dev the memory's device view.
struct PinOps {
  void *ctx;
  coll_gpu_status_t (*pin)(void *ctx, void *host, size_t bytes, void **dev);
  coll_gpu_status_t (*unpin)(void *ctx, void *host);
};
PinOps cuda_pin_ops();

// SHM: the same peers where CUDA peer access between their GPUs is unavailable (NCCL's shared memory transport):
// every rank's scratch lies in pinned host memory, a shared memory segment of its own (engine/shm_segment.h) that
// the peers it connects with map too, so that the kernels' stores into a peer's scratch and their polls of their
// own cross PCIe into host memory, with no proxy and no copy by a CPU. Its connections are IPC's over those
// mappings (coll_gpu_dev_ipc_conns). The segments are unlinked once every rank has mapped its peers'.
class Shm {
 public:
  static constexpr const char *kName = "SHM";
  static constexpr int kNameBytes = 48;  // "/coll_gpu_scratch.PID.K"

  Shm() = default;
  Shm(const Shm &) = delete;
  Shm &operator=(const Shm &) = delete;
  ~Shm() { reset(); }

  // As Ipc::alloc; pins through ops. A meminfo of no device (device -1, a test's) enters no context.
  bool alloc(int rank, int nranks, const coll_gpu_meminfo_t *mem, const PinOps &ops = cuda_pin_ops());
  // This rank's scratch: a new segment of `bytes` zero bytes, pinned and mapped into the device's context (view()'s
  // entry of this rank). Until it succeeds the exchange below says this rank has no scratch.
  coll_gpu_status_t set_own(size_t bytes, char *why, size_t len);
  // Allgathers the segments' names, maps and pins those of the peers on this node that this rank has connections
  // with, then (a collective step, made whatever failed) unlinks its own once every rank is past its mappings.
  coll_gpu_status_t connect(const TransportLinks &links, char *why, size_t len);
  coll_gpu_status_t fill(const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *why, size_t len);
  // As Ipc::view: every rank's scratch as this rank's kernels see it.
  void *const *view() const { return view_.get(); }
  // The mappings go, this rank's scratch with them, in the current context (the engine's device's).
  void reset();

 private:
  // A segment mapped here and pinned.
  struct Pinned {
    ShmSegment seg;
    void *dev = nullptr;
    void reset(const PinOps &ops);
  };
  coll_gpu_status_t pin(Pinned *p, const char *name, bool make, char *why, size_t len);
  char *entry(int r) const { return names_.get() + (size_t)r * (1 + kNameBytes); }
  coll_gpu_status_t map_peers(const TransportLinks &links, char *why, size_t len);
  void unlink_own();  // this rank's segment leaves the host's names (its mappings stay)

  int rank_ = 0, nranks_ = 0;
  size_t bytes_ = 0;
  const coll_gpu_meminfo_t *mem_ = nullptr;
  PinOps ops_ = {};
  HostPtr<char[]> names_;  // every rank's entry: a byte that says it has scratch, then its segment's name
  HostPtr<void *[]> view_;
  Pinned own_;
  char own_name_[kNameBytes] = "";  // until it is unlinked
  Pinned mapped_[Ipc::kMaxMapped];
  int nmapped_ = 0;
};

}  // namespace coll_gpu

#endif
