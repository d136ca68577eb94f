/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The transports' steps (engine/transport.h): IPC and SHM whole, and NET's connect and fill over its proxy and
 * FIFOs (engine/net.cc, or engine/net_none.cc without UCX).
 */
#include "engine/transport.h"

#include <string.h>
#include <unistd.h>

#include <atomic>

#include "engine/net.h"
#include "kernels/staging.h"

namespace coll_gpu {

bool Ipc::alloc(int rank, int nranks, const coll_gpu_meminfo_t *mem) {
  mem_ = mem;
  rank_ = rank;
  nranks_ = nranks;
  hsize_ = coll_gpu_ipc_handle_size();
  handles_ = make_host_array<char>((size_t)nranks * (1 + hsize_));
  view_ = make_host_array<void *>(nranks);
  if (handles_ == nullptr || view_ == nullptr) return false;
  entry(rank_)[0] = 0;
  return true;
}

coll_gpu_status_t Ipc::set_own(void *scratch, char *why, size_t len) {
  const coll_gpu_status_t rc = coll_gpu_ipc_get(scratch, entry(rank_) + 1);
  if (rc != COLL_GPU_SUCCESS) {
    coll_gpu_say(why, len, "cannot export the scratch through CUDA IPC: %s", coll_gpu_kernels_error());
    return rc;
  }
  view_[rank_] = scratch;
  entry(rank_)[0] = 1;
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Ipc::connect(const TransportLinks &links, char *why, size_t len) {
  const coll_gpu_bootstrap_t *b = links.b;
  if (b->allgather(b->ctx, entry(rank_), handles_.get(), (size_t)(1 + hsize_)) != 0) {
    coll_gpu_say(why, len, "the IPC handle allgather failed");
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  ContextScope ctx(*mem_);
  COLL_GPU_CHECK(entered(ctx, *mem_, why, len));
  for (int r = 0; r < nranks_; ++r) {
    if (!links.node_peer(r, rank_)) continue;  // another node's: NET's
    if (nmapped_ == kMaxMapped) {
      coll_gpu_say(why, len, "more than %d peers to map", kMaxMapped);
      return COLL_GPU_INTERNAL_ERROR;
    }
    if (entry(r)[0] == 0) {
      coll_gpu_say(why, len, "rank %d could not allocate or export its scratch", r);
      return COLL_GPU_CUDA_ERROR;
    }
    const coll_gpu_status_t rc = coll_gpu_ipc_open(entry(r) + 1, mapped_[nmapped_].out());
    if (rc != COLL_GPU_SUCCESS) {
      coll_gpu_say(why, len,
                   "cannot open the IPC handle of rank %d (GPU %s): %s (where the GPUs have no peer access, "
                   "coll_gpu_node_transport shm reaches them through shared host memory)",
                   r, links.peers[r].busid, coll_gpu_kernels_error());
      return rc;
    }
    view_[r] = mapped_[nmapped_++].get();
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Ipc::fill(const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *, size_t) {
  coll_gpu_dev_ipc_conns(&comm, conns, view_.get());
  return COLL_GPU_SUCCESS;
}

void Ipc::reset() {
  for (auto &m : mapped_) m.reset();
  nmapped_ = 0;
}

namespace {
std::atomic<uint32_t> segments{0};  // this process's scratch segments, for their names
constexpr const char *kShmKind = "scratch";
coll_gpu_status_t cuda_pin(void *, void *host, size_t bytes, void **dev) {
  return coll_gpu_host_register(host, bytes, dev);
}
coll_gpu_status_t cuda_unpin(void *, void *host) { return coll_gpu_host_unregister(host); }
}  // namespace

PinOps cuda_pin_ops() { return PinOps{nullptr, cuda_pin, cuda_unpin}; }

void Shm::Pinned::reset(const PinOps &ops) {
  if (dev != nullptr) ops.unpin(ops.ctx, seg.base());
  dev = nullptr;
  seg.reset();
}

bool Shm::alloc(int rank, int nranks, const coll_gpu_meminfo_t *mem, const PinOps &ops) {
  mem_ = mem;
  ops_ = ops;
  rank_ = rank;
  nranks_ = nranks;
  names_ = make_host_array<char>((size_t)nranks * (1 + kNameBytes));
  view_ = make_host_array<void *>(nranks);
  return names_ != nullptr && view_ != nullptr;
}

// Makes (this rank's) or opens (a peer's) segment `name` of bytes_ and pins it, in the device's context.
coll_gpu_status_t Shm::pin(Pinned *p, const char *name, bool make, char *why, size_t len) {
  const char *what = make ? "the scratch's shared memory" : "a peer's scratch";
  COLL_GPU_CHECK(make ? p->seg.make(name, bytes_, what, why, len) : p->seg.open(name, bytes_, what, why, len));
  ContextScope ctx(*mem_, mem_->device >= 0);
  if (mem_->device >= 0 && ctx.rc() != COLL_GPU_SUCCESS) {
    p->reset(ops_);
    return entered(ctx, *mem_, why, len);
  }
  const coll_gpu_status_t rc = ops_.pin(ops_.ctx, p->seg.base(), bytes_, &p->dev);
  if (rc != COLL_GPU_SUCCESS) {
    p->dev = nullptr;
    p->reset(ops_);
    coll_gpu_say(why, len, "cannot pin %s, %zu bytes of shared host memory: %s", what, bytes_,
                 coll_gpu_kernels_error());
    return rc;
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Shm::set_own(size_t bytes, char *why, size_t len) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  bytes_ = (bytes + page - 1) / page * page;  // whole pages to pin, the same on every rank
  ShmSegment::sweep(kShmKind);
  ShmSegment::name_for(kShmKind, (int)getpid(), segments.fetch_add(1) + 1, own_name_, sizeof(own_name_));
  const coll_gpu_status_t st = pin(&own_, own_name_, true, why, len);
  if (st != COLL_GPU_SUCCESS) {
    unlink_own();
    return st;
  }
  view_[rank_] = own_.dev;
  entry(rank_)[0] = 1;
  memcpy(entry(rank_) + 1, own_name_, kNameBytes);
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Shm::map_peers(const TransportLinks &links, char *why, size_t len) {
  for (int r = 0; r < nranks_; ++r) {
    if (!links.node_peer(r, rank_)) continue;  // another node's: NET's
    if (nmapped_ == Ipc::kMaxMapped) {
      coll_gpu_say(why, len, "more than %d peers to map", Ipc::kMaxMapped);
      return COLL_GPU_INTERNAL_ERROR;
    }
    if (entry(r)[0] == 0) {
      coll_gpu_say(why, len, "rank %d could not make or pin its scratch in shared host memory", r);
      return COLL_GPU_SYSTEM_ERROR;
    }
    char name[kNameBytes + 1];
    memcpy(name, entry(r) + 1, kNameBytes);
    name[kNameBytes] = '\0';
    COLL_GPU_CHECK(pin(&mapped_[nmapped_], name, false, why, len));
    view_[r] = mapped_[nmapped_++].dev;
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Shm::connect(const TransportLinks &links, char *why, size_t len) {
  const coll_gpu_bootstrap_t *b = links.b;
  coll_gpu_status_t st = COLL_GPU_SUCCESS;
  if (b->allgather(b->ctx, entry(rank_), names_.get(), (size_t)(1 + kNameBytes)) != 0) {
    coll_gpu_say(why, len, "the shared memory names' allgather failed");
    st = COLL_GPU_BOOTSTRAP_ERROR;
  }
  if (st == COLL_GPU_SUCCESS) st = map_peers(links, why, len);
  // every rank has mapped the segments it needs (or failed): each maker unlinks its own, and nothing stays on the
  // host whatever happens next; a failure is every rank's at the engine's next step
  int bad = -1;
  coll_gpu_all_ok(b, st == COLL_GPU_SUCCESS ? 0 : 1, &bad);
  unlink_own();
  return st;
}

coll_gpu_status_t Shm::fill(const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *, size_t) {
  coll_gpu_dev_ipc_conns(&comm, conns, view_.get());
  return COLL_GPU_SUCCESS;
}

void Shm::reset() {
  for (auto &m : mapped_) m.reset(ops_);
  nmapped_ = 0;
  own_.reset(ops_);
  unlink_own();
}

void Shm::unlink_own() {
  if (own_name_[0] != '\0') ShmSegment::unlink(own_name_);
  own_name_[0] = '\0';
}

void Net::configure(int threads, int most, int here, coll_gpu_proxy_net_t kind, const char *ifname, size_t ll_bytes,
                    coll_gpu_log_fn log) {
  threads_ = threads;
  most_ = most;
  here_ = here;
  kind_ = kind;
  ifname_ = ifname;
  ll_bytes_ = ll_bytes < COLL_GPU_LL_MAX_BYTES ? ll_bytes : COLL_GPU_LL_MAX_BYTES;
  log_ = log;
}

coll_gpu_status_t Net::connect(const TransportLinks &links, char *why, size_t len) {
  node_ = links.node;
  return setup(links.b, links.node, links.linked, links.peers, threads_, most_, here_, log_, why, len);
}

coll_gpu_status_t Net::fill(const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *why, size_t len) {
  const int rank = comm.rank;
  for (int ch = 0; ch < comm.layout.nchannels; ++ch) {
    coll_gpu_dev_channel_t &c = conns->channels[ch];
    if (node_[c.next] != node_[rank])
      COLL_GPU_CHECK(fifo(COLL_GPU_PROXY_SEND, c.next, ch, comm.layout.slot_bytes, &c.send, why, len));
    if (node_[c.prev] != node_[rank])
      COLL_GPU_CHECK(fifo(COLL_GPU_PROXY_RECV, c.prev, ch, comm.layout.slot_bytes, &c.recv, why, len));
  }
  for (int q = 0; comm.nranks > 2 && comm.nranks <= COLL_GPU_MAX_DIRECT && q < comm.nranks; ++q) {
    if (node_[q] == node_[rank]) continue;
    for (int c = 0; c < COLL_GPU_P2P_CONNS; ++c) {
      coll_gpu_dev_peer_t &e = conns->peers[q];
      COLL_GPU_CHECK(fifo(COLL_GPU_PROXY_SEND, q, kP2pId + c, COLL_GPU_P2P_SLOT_BYTES, &e.send[c], why, len));
      COLL_GPU_CHECK(fifo(COLL_GPU_PROXY_RECV, q, kP2pId + c, COLL_GPU_P2P_SLOT_BYTES, &e.recv[c], why, len));
    }
  }
  return COLL_GPU_SUCCESS;
}

}  // namespace coll_gpu
