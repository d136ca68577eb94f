/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The transports' steps (engine/transport.h): IPC whole, and NET's connect and fill over its proxy and FIFOs
 * (engine/net.cc, or engine/net_none.cc without UCX).
 */
#include "engine/transport.h"

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
  const int rc = coll_gpu_ipc_get(scratch, entry(rank_) + 1);
  if (rc != 0) {
    coll_gpu_say(why, len, "cannot export the scratch through CUDA IPC: %s", coll_gpu_staging_error_string(rc));
    return COLL_GPU_CUDA_ERROR;
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
    if (r == rank_ || !links.linked[r] || links.node[r] != links.node[rank_]) continue;  // another node: NET's
    if (nmapped_ == kMaxMapped) {
      coll_gpu_say(why, len, "more than %d peers to map", kMaxMapped);
      return COLL_GPU_INTERNAL_ERROR;
    }
    if (entry(r)[0] == 0) {
      coll_gpu_say(why, len, "rank %d could not allocate or export its scratch", r);
      return COLL_GPU_CUDA_ERROR;
    }
    const int rc = coll_gpu_ipc_open(entry(r) + 1, mapped_[nmapped_].out());
    if (rc != 0) {
      coll_gpu_say(why, len, "cannot open the IPC handle of rank %d (GPU %s): %s", r, links.peers[r].busid,
                   coll_gpu_staging_error_string(rc));
      return COLL_GPU_CUDA_ERROR;
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

void Net::configure(int threads, int most, int here, coll_gpu_proxy_net_t kind, const char *ifname,
                    coll_gpu_log_fn log) {
  threads_ = threads;
  most_ = most;
  here_ = here;
  kind_ = kind;
  ifname_ = ifname;
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
