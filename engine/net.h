/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's NET connections (C++ only): the network proxy of one engine and the host FIFOs it moves,
 * as the kernels see them. A ring hop or point-to-point pair between ranks of different nodes gets one:
 * depth COLL_GPU_RING_SLOTS slots in host memory mapped into the GPU's address space, with its tail,
 * head and step sizes beside them; the sending kernel writes steps there and the proxy sends them, the
 * receiving proxy writes steps there and the kernel reads them (proxy/proxy.h). engine/net.cc with UCX;
 * built without it (configure --without-ucx), engine/net_none.cc stands in: setup fails saying so, and
 * the rest has nothing to do.
 */
#ifndef COLL_GPU_ENGINE_NET_H
#define COLL_GPU_ENGINE_NET_H

#include <stddef.h>
#include <stdint.h>

#include "common/ll.h"
#include "common/status.h"
#include "engine/bootstrap.h"
#include "engine/owning.h"
#include "engine/transport.h"
#include "kernels/kernels.h"
#include "proxy/proxy.h"

namespace coll_gpu {

// The NET transport (engine/transport.h): the ranks of other nodes that this rank has connections with.
class Net {
 public:
  static constexpr const char *kName = "NET";
  // Ring channels and point-to-point connections both ways: every FIFO an engine can have.
  static constexpr int kMaxFifos = 2 * COLL_GPU_MAX_CHANNELS + 2 * COLL_GPU_MAX_DIRECT * COLL_GPU_P2P_CONNS;
  // Connection ids: a ring channel's is its number; the point-to-point ones take the ids after them.
  static constexpr int kP2pId = COLL_GPU_MAX_CHANNELS;

  Net() = default;
  Net(const Net &) = delete;
  Net &operator=(const Net &) = delete;
  ~Net() { reset(); }

  // Collective over b: starts this rank's proxy (on the CPUs near its GPU, peers[b->rank].busid, but the
  // core the rank is bound to, or those of the rank's CPUs near it: coll_gpu_proxy_cpus; all of this
  // machine's stand for near when the topology does not place the GPU) with `threads` progress threads, or
  // with threads 0 as many as its share of those CPUs allows
  // (coll_gpu_proxy_auto_threads: `here` ranks on this machine), at most `most`; allgathers the proxies'
  // addresses and connects to every rank of another node it has connections with (node[r] != node[b->rank]
  // and linked[r]), watching those of other hosts (peers[r].host). Every rank gets the same success or failure, the
  // reason in why (the first failing rank's, named).
  coll_gpu_status_t setup(const coll_gpu_bootstrap_t *b, const uint16_t *node, const uint8_t *linked,
                          const coll_gpu_peer_t *peers, int threads, int most, int here, coll_gpu_log_fn log, char *why,
                          size_t len);
  // The transport's steps: connect is setup over the links with the threads configure gave (threads 0:
  // as many as the rank's share of the CPUs allows, at most `most`; `here` ranks on this machine); fill
  // puts a FIFO on every ring hop to or from another node and, with 3 to COLL_GPU_MAX_DIRECT ranks, every
  // point-to-point connection with a rank of another node. Steps of 1 to ll_bytes bytes (at most a slot) may
  // travel as LL lines (common/ll.h; 0: none).
  void configure(int threads, int most, int here, coll_gpu_proxy_net_t kind, const char *ifname, size_t ll_bytes,
                 coll_gpu_log_fn log);
  coll_gpu_status_t connect(const TransportLinks &links, char *why, size_t len);
  coll_gpu_status_t fill(const coll_gpu_dev_comm_t &comm, coll_gpu_dev_conns_t *conns, char *why, size_t len);
  // The proxy (nullptr before setup): for tests that move steps of their own over its connections.
  coll_gpu_proxy_t *proxy() const { return proxy_; }
  // A FIFO to (SEND) or from (RECV) `peer`, connection `id`, as the kernels reach it (*conn), in the current
  // device context; the proxy moves it from now on.
  coll_gpu_status_t fifo(coll_gpu_proxy_dir_t dir, int peer, int id, size_t slot_bytes, coll_gpu_conn_t *conn,
                         char *why, size_t len);
  // The proxy's threads (0: none started).
  int threads() const;
  // Before a launch whose kernels use the FIFOs of connections first_id .. first_id + count - 1: wakes
  // their proxy threads (the others' stay asleep).
  void wake(int first_id, int count) const;
  // The first failure the proxy saw (a peer on another node gone, the network); COLL_GPU_SUCCESS while none.
  coll_gpu_status_t failed(int *peer, char *why, size_t len) const;
  // The proxy stops, then the FIFOs go (in the device's context: the caller enters it).
  void reset();

 private:
  coll_gpu_status_t start(int rank, int nranks, int threads, int most, int here, const char *busid, bool remote,
                          coll_gpu_log_fn log, char *why, size_t len);

  coll_gpu_proxy_t *proxy_ = nullptr;
  HostMappedMemory mem_[kMaxFifos];
  int nmem_ = 0;
  int threads_ = 0, most_ = 1, here_ = 1;  // configure
  coll_gpu_proxy_net_t kind_ = COLL_GPU_PROXY_NET_UCX;
  const char *ifname_ = nullptr;
  size_t ll_bytes_ = 0;
  coll_gpu_log_fn log_ = nullptr;
  const uint16_t *node_ = nullptr;  // connect's links
};

}  // namespace coll_gpu

#endif
