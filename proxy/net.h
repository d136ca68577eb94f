/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The network a proxy thread moves its steps over (C++ only, every call on the thread): UCX
 * (proxy/net_ucx.h) or TCP sockets of its own (proxy/net_socket.h), the same tagged messages either way.
 * A switch per call instead of virtual functions: the proxy needs no C++ runtime library.
 */
#ifndef COLL_GPU_PROXY_NET_H
#define COLL_GPU_PROXY_NET_H

#include "proxy/net_socket.h"
#include "proxy/net_ucx.h"
#include "proxy/proxy.h"

namespace coll_gpu {

class ProxyNet {
 public:
  using FailFn = void (*)(void *ctx, int peer, const char *why);

  coll_gpu_status_t init(coll_gpu_proxy_net_t kind, int rank, int nranks, size_t eager_max, const char *ifname,
                         FailFn fail, void *ctx, char *why, size_t len) {
    socket_ = kind == COLL_GPU_PROXY_NET_SOCKET;
    eager_max_ = eager_max;
    return socket_ ? sock_.init(rank, nranks, ifname, fail, ctx, why, len)
                   : ucx_.init(nranks, eager_max, fail, ctx, why, len);
  }
  const void *address() const { return socket_ ? sock_.address() : ucx_.address(); }
  size_t address_bytes() const { return socket_ ? sock_.address_bytes() : ucx_.address_bytes(); }
  coll_gpu_status_t connect(int peer, const void *addr, bool same_host, char *why, size_t len) {
    return socket_ ? sock_.connect(peer, addr, same_host, why, len) : ucx_.connect(peer, addr, same_host, why, len);
  }
  bool connected(int peer) const { return socket_ ? sock_.connected(peer) : ucx_.connected(peer); }
  // UCX's registration of host memory (nullptr: none; sockets need none)
  void *map(void *buf, size_t bytes) { return socket_ ? nullptr : (void *)ucx_.map(buf, bytes); }
  void unmap(void *memh) {
    if (!socket_) ucx_.unmap((ucp_mem_h)memh);
  }
  // Whether a message of `bytes` goes as a synchronous send, which completes once the receiver has matched
  // it (so needs no credit): over UCX from eager_max up; over the sockets never (their credits hold the
  // sender back: a handshake per large step only cost it a round trip).
  bool synchronous(size_t bytes) const { return !socket_ && bytes >= eager_max_; }
  void send(int peer, uint64_t tag, const void *buf, size_t bytes, void *memh, NetOp *op) {
    if (socket_)
      sock_.send(peer, tag, buf, bytes, op);
    else
      ucx_.send(peer, tag, buf, bytes, synchronous(bytes), (ucp_mem_h)memh, op);
  }
  void recv(uint64_t tag, void *buf, size_t bytes, void *memh, NetOp *op) {
    if (socket_)
      sock_.recv(tag, buf, bytes, op);
    else
      ucx_.recv(tag, buf, bytes, (ucp_mem_h)memh, op);
  }
  void test(NetOp *op) {
    if (!socket_) ucx_.test(op);
  }
  void cancel(NetOp *op) { socket_ ? sock_.cancel(op) : ucx_.cancel(op); }
  void release(NetOp *op) { socket_ ? sock_.release(op) : ucx_.release(op); }
  unsigned progress() { return socket_ ? sock_.progress() : ucx_.progress(); }
  // Before a sleep: a descriptor that polls readable when progress() has a peer's message to take (the sockets'
  // epoll set, UCX's worker armed for its events), so that a sleeping thread sees a late peer's step at once;
  // -1 where there is none (the sockets while frames wait for room, a UCX without wakeup: sleep the time out),
  // or kEventsWaiting where a message is already there (UCX: do not sleep, progress).
  static constexpr int kEventsWaiting = UcxNet::kEventsWaiting;
  int event_fd() { return socket_ ? sock_.event_fd() : ucx_.arm(); }
  const char *last_error() const { return socket_ ? sock_.last_error() : ucs_status_string(ucx_.last_error()); }
  void close_endpoints() { socket_ ? sock_.close_endpoints() : ucx_.close_endpoints(); }
  void close() {
    sock_.close();
    ucx_.close();
  }

 private:
  bool socket_ = false;
  size_t eager_max_ = 0;
  UcxNet ucx_;
  SockNet sock_;
};

}  // namespace coll_gpu

#endif
