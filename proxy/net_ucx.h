/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The proxy's network: a UCX context and a single-threaded worker, an endpoint per peer, and tagged sends
 * and receives of host memory (C++ only; every call on the proxy's thread). What the proxy moves is
 * steps; what this moves is messages, each an Op the proxy tests until it has completed.
 */
#ifndef COLL_GPU_PROXY_NET_UCX_H
#define COLL_GPU_PROXY_NET_UCX_H

#include <stddef.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include "common/status.h"
#include "proxy/net_op.h"

namespace coll_gpu {

class UcxNet {
 public:
  // A peer's endpoint failed: called on the proxy's thread, from progress.
  using FailFn = void (*)(void *ctx, int peer, const char *why);

  UcxNet() = default;
  UcxNet(const UcxNet &) = delete;
  UcxNet &operator=(const UcxNet &) = delete;
  ~UcxNet() { close(); }

  // UCX for `nranks` peers; messages below eager_max go eagerly unless the user set UCX's rendezvous
  // threshold (COLL_GPU_UCX_RNDV_THRESH or UCX_RNDV_THRESH).
  coll_gpu_status_t init(int nranks, size_t eager_max, FailFn fail, void *ctx, char *why, size_t len);
  // UCX's worker address (valid until close).
  const void *address() const { return addr_; }
  size_t address_bytes() const { return addr_bytes_; }
  // Connects to a peer by its UCX address; one on another host is watched: its failure is reported.
  coll_gpu_status_t connect(int peer, const void *addr, bool same_host, char *why, size_t len);
  bool connected(int peer) const { return peers_ != nullptr && peers_[peer].ep != nullptr; }

  // Starts a message; op->state says how it went (kOpFailed: op->bytes unused, the reason logged by the
  // caller from the status in *failed).
  // Registers host memory with UCX once (nullptr when it cannot: the messages then go without a handle),
  // so that the messages in it need no registration-cache lookup: zero-copy transports (rc, dc) use it.
  ucp_mem_h map(void *buf, size_t bytes);
  void unmap(ucp_mem_h memh);
  // sync: the send completes once the receiver has matched it (else once UCX is done with buf). memh:
  // map()'s handle of the memory buf is in, or nullptr.
  void send(int peer, uint64_t tag, const void *buf, size_t bytes, bool sync, ucp_mem_h memh, NetOp *op);
  void recv(uint64_t tag, void *buf, size_t bytes, ucp_mem_h memh, NetOp *op);
  // Updates op->state (and a receive's op->bytes) once the message has completed.
  void test(NetOp *op);
  // Cancels a receive in flight and waits until UCX has given its request back.
  void cancel(NetOp *op);
  // Gives back a message's request without waiting for it (teardown, after close_endpoints).
  void release(NetOp *op);
  // Moves UCX's work; the number of events it saw.
  unsigned progress() { return worker_ != nullptr ? ucp_worker_progress(worker_) : 0; }
  // Arms the worker for a sleep: its event descriptor, which polls readable when a message arrives;
  // kEventsWaiting where events are already there (progress again, do not sleep); kNoDescriptor without one.
  static constexpr int kEventsWaiting = -2;
  static constexpr int kNoDescriptor = -1;
  int arm();
  // The status of the last failed op (for the message).
  ucs_status_t last_error() const { return last_error_; }
  // Closes every endpoint, forcibly: the sends in flight end. Then close() gives back the worker.
  void close_endpoints();
  void close();

 private:
  struct Peer {
    UcxNet *net;
    int rank;
    ucp_ep_h ep;
  };
  static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);
  void finish(NetOp *op, ucs_status_t s);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;  // the worker's event descriptor (UCP_FEATURE_WAKEUP), or -1
  ucp_address_t *addr_ = nullptr;
  size_t addr_bytes_ = 0;
  Peer *peers_ = nullptr;
  int nranks_ = 0;
  FailFn fail_ = nullptr;
  void *fail_ctx_ = nullptr;
  ucs_status_t last_error_ = UCS_OK;
};

}  // namespace coll_gpu

#endif
