/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The proxy's network over plain TCP sockets (NCCL's socket transport; C++ only, every call on the proxy's
 * thread): the same tagged messages as proxy/net_ucx.h, written straight from the FIFO slots into the
 * socket and read from the socket into the slot of the receive that matches: straight where a payload has
 * a few KiB or more still to come, else through a buffer of a few KiB that one read fills with as many
 * frames as have arrived, so that a small step costs the receiver one system call.
 *
 * Each thread listens on a port of its own (its address: the port, the IPv4 addresses of the interfaces
 * it takes and a random nonce). Two ranks' threads share one socket, both ways, which the lower rank
 * connects (so that acknowledgements ride on the data going back). A socket carries frames of a 24-byte
 * header (kind, tag, bytes) and the payload:
 *   EAGER: a message whole. Read into the receive posted for its tag, else into memory of its own until
 *     one is posted (the proxy sends only within its credits, for posted receives, so that is seldom and
 *     bounded). The send completes when the payload is written;
 *   BYE: the sender closes on purpose; the end of the stream after it is no failure.
 * Every message goes so, however large: the proxy's credits are its clear-to-send, and a handshake per
 * message (announced, answered once its receive was posted, then sent) had cost the steps of 64 KiB and
 * more a round trip each (docs/benchmarks.md).
 * A peer's socket that ends without BYE, or fails, fails the peer (FailFn), as UCX's peer-failure mode does;
 * TCP keep-alive probes find a host that went away within about 10 s.
 */
#ifndef COLL_GPU_PROXY_NET_SOCKET_H
#define COLL_GPU_PROXY_NET_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "proxy/net_op.h"

namespace coll_gpu {

class SockNet {
 public:
  using FailFn = void (*)(void *ctx, int peer, const char *why);
  // The most interface addresses an address carries.
  static constexpr int kMaxAddrs = 8;

  SockNet() = default;
  SockNet(const SockNet &) = delete;
  SockNet &operator=(const SockNet &) = delete;
  ~SockNet() { close(); }

  // Listens for `nranks` peers on the IPv4 addresses of the interfaces `ifname` names (NCCL's
  // NCCL_SOCKET_IFNAME: comma-separated name prefixes, a leading ^ to exclude them instead; NULL or "": every
  // interface that is up but loopback and docker*, virbr*; none such: loopback only).
  coll_gpu_status_t init(int rank, int nranks, const char *ifname, FailFn fail, void *ctx, char *why, size_t len);
  const void *address() const { return &addr_; }
  size_t address_bytes() const { return sizeof(addr_); }
  // Connects to a peer of a higher rank by its address: loopback first where it is on this host, else its
  // addresses in turn, each answered within a few seconds; a socket that reaches another listener is
  // refused by the nonce. A peer of a lower rank connects to this one: the call waits for its socket (at
  // most 60 s). Meanwhile it accepts its peers' sockets, which may be connecting to it at the same time.
  coll_gpu_status_t connect(int peer, const void *addr, bool same_host, char *why, size_t len);
  bool connected(int peer) const;

  void send(int peer, uint64_t tag, const void *buf, size_t bytes, NetOp *op);
  void recv(uint64_t tag, void *buf, size_t bytes, NetOp *op);
  // Ops complete in progress(): test has nothing to add.
  void test(NetOp *) {}
  // Takes a receive back; its memory is not written afterwards.
  void cancel(NetOp *op);
  void release(NetOp *op);
  unsigned progress();
  // A descriptor that polls readable once progress() has something to read (a frame from a peer, a peer's
  // connection), for a thread to sleep on; -1 while frames wait for room in a socket or a hello is due,
  // which nothing would announce.
  int event_fd() const { return queued_ == 0 && nfresh_ == 0 ? epoll_ : -1; }
  const char *last_error() const { return last_error_; }
  // Says BYE to every peer and closes every socket; the sends in flight fail. Then close() stops listening.
  void close_endpoints();
  void close();

  struct Header;
  struct Frame;
  struct Recv;
  struct Unexpected;
  struct Peer;
  struct Address {
    uint32_t magic;
    uint16_t port;
    uint16_t naddrs;
    uint64_t nonce;
    uint32_t addrs[kMaxAddrs];  // IPv4, network byte order
  };

 private:
  bool accept_peers();
  void settle(int fd, int rank);
  bool write_out(Peer &p);
  bool read_in(Peer &p);
  bool consume(Peer &p, const char *b, size_t n);
  bool header_arrived(Peer &p);
  void payload_arrived(Peer &p);
  bool push(Peer &p, const Header &h, const char *payload, size_t bytes, NetOp *op);
  void drop_sends(Peer &p);
  void broken(Peer &p, const char *what, int err);
  void fail_op(NetOp *op);
  Recv *receive_for(Peer &p, uint64_t tag, uint64_t bytes, bool *bad);
  Unexpected *early(Peer &p, uint64_t tag, size_t bytes);

  // sockets accepted whose hello has not come yet
  struct Fresh {
    int fd;
    uint32_t hello[4];
    size_t got;
    uint64_t until;
  };
  static constexpr int kMaxFresh = 64;

  int rank_ = 0;
  int listen_ = -1, epoll_ = -1;
  int queued_ = 0;  // frames not yet written, over every peer
  Fresh fresh_[kMaxFresh];
  int nfresh_ = 0;
  Address addr_{};
  Peer *peers_ = nullptr;
  int nranks_ = 0;
  int *active_ = nullptr;  // the peers with a socket, either way
  int nactive_ = 0;
  Recv *posted_ = nullptr, *posted_last_ = nullptr;  // receives not yet filled, in order
  Unexpected *unexpected_ = nullptr, *unexpected_last_ = nullptr;
  FailFn fail_ = nullptr;
  void *fail_ctx_ = nullptr;
  char last_error_[160] = "";
  // what read_in reads headers and small payloads into, before they go where they belong
  static constexpr size_t kReadChunk = 4096;
  char in_[kReadChunk];
};

}  // namespace coll_gpu

#endif
