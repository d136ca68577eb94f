/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The engine's NET set-up across virtual nodes under mpirun, without GPUs (engine/net.h, Net::setup): each
// rank's proxy starts, the addresses travel through the MPI bootstrap, and every rank connects to the ranks
// of the other nodes and to no other. Steps then move around the ring over those connections, several per
// neighbour so that both proxy threads work, a host thread playing the kernel on each rank (host FIFOs of
// random-sized steps, checked byte by byte and poisoned once consumed), over UCX's choice, over UCX's tcp and
// over the proxy's own sockets. A
// neighbour of the same node has no connection: a FIFO to it is refused. A rank whose proxy cannot start
// makes every rank fail alike, naming it. With -H (on real hosts, as in the mini-cluster of
// contrib/minicluster.sh) the steps also go around a ring whose nodes are the hosts: only the hops between
// hosts have connections.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <random>
#include <vector>

#include "common/wait.h"
#include "engine/bootstrap.h"
#include "engine/net.h"
#include "engine/nodes.h"
#include "engine/rings.h"
#include "mpi_bootstrap.h"
#include "test/common/fd_io.h"

namespace {

int rank = 0, failures = 0;

constexpr int kThreads = 2;  // proxy threads
constexpr int kConns = 4;    // per neighbour: connection ids 0-3, over both proxy threads
constexpr int kDepth = 8;
constexpr size_t kSlot = 96 << 10;  // steps up to it: over UCX, from 64 KiB synchronous sends
constexpr uint64_t kSteps = 120;

uint8_t pattern(uint64_t seed, int sender, int id, uint64_t step, size_t at) {
  uint64_t x = seed ^ ((uint64_t)sender << 56) ^ ((uint64_t)id << 44) ^ (step << 24) ^ at;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return (uint8_t)x;
}
size_t step_bytes(uint64_t seed, int sender, int id, uint64_t step) {
  std::mt19937_64 r(seed ^ ((uint64_t)sender << 40) ^ ((uint64_t)id << 32) ^ step);
  const uint64_t k = r() % 8;
  return k == 0 ? 0 : k < 4 ? kSlot : 1 + r() % kSlot;
}

// One FIFO, as the kernel and the proxy share it.
struct Fifo {
  std::vector<char> buf = std::vector<char>(kDepth * kSlot);
  uint64_t words[2 + COLL_GPU_PROXY_MAX_DEPTH] = {};  // tail, head, sizes
  uint64_t count = 0;                                 // steps posted (send) or consumed (receive)
  volatile uint64_t *tail() { return &words[0]; }
  volatile uint64_t *head() { return &words[1]; }
  volatile uint64_t *sizes() { return &words[2]; }
  coll_gpu_proxy_fifo_t fifo(coll_gpu_proxy_dir_t dir, int peer, int id) {
    return coll_gpu_proxy_fifo_t{dir, peer, id, buf.data(), kSlot, kDepth, tail(), head(), sizes(), nullptr, 0};
  }
};

// Ranks in virtual nodes of `vn`, UCX transports `tls` (nullptr: UCX's choice; "sockets": the proxy's own
// sockets instead of UCX): the set-up, then the steps.
void ring_over_net(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *peers, int vn, const char *tls,
                   uint64_t seed) {
  const int n = b->size, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const bool sockets = tls != nullptr && strcmp(tls, "sockets") == 0;
  if (tls != nullptr && !sockets) setenv("COLL_GPU_UCX_TLS", tls, 1);
  std::vector<uint16_t> node(n);
  std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(n));
  const int nodes = coll_gpu_nodes_assign(peers, n, vn, node.data(), scratch.data());
  std::vector<uint8_t> linked(n);  // the ring's neighbours
  linked[next] = linked[prev] = 1;
  std::vector<Fifo> out(kConns), in(kConns);  // declared before the proxy: it reads them until it stops
  coll_gpu::Net net;
  if (sockets) net.configure(kThreads, kThreads, n, COLL_GPU_PROXY_NET_SOCKET, nullptr, 0, nullptr);
  char why[512] = "";
  const coll_gpu_status_t s =
      net.setup(b, node.data(), linked.data(), peers, kThreads, kThreads, n, nullptr, why, sizeof(why));
  if (tls != nullptr && !sockets) unsetenv("COLL_GPU_UCX_TLS");
  EXPECT(s == COLL_GPU_SUCCESS, "%d nodes of %d, %s: %s", nodes, vn, tls != nullptr ? tls : "UCX's choice", why);
  if (s != COLL_GPU_SUCCESS) return;
  EXPECT(coll_gpu_proxy_threads(net.proxy()) == kThreads, "%d proxy threads", coll_gpu_proxy_threads(net.proxy()));
  const bool send = node[next] != node[rank], recv = node[prev] != node[rank];
  for (int id = 0; id < kConns; ++id) {
    coll_gpu_proxy_fifo_t o = out[id].fifo(COLL_GPU_PROXY_SEND, next, id),
                          i = in[id].fifo(COLL_GPU_PROXY_RECV, prev, id);
    const coll_gpu_status_t so = coll_gpu_proxy_add(net.proxy(), &o, why, sizeof(why));
    EXPECT((so == COLL_GPU_SUCCESS) == send, "a FIFO to rank %d (node %d, this node %d): %s", next, node[next],
           node[rank], so == COLL_GPU_SUCCESS ? "added" : why);
    const coll_gpu_status_t si = coll_gpu_proxy_add(net.proxy(), &i, why, sizeof(why));
    EXPECT((si == COLL_GPU_SUCCESS) == recv, "a FIFO from rank %d (node %d, this node %d): %s", prev, node[prev],
           node[rank], si == COLL_GPU_SUCCESS ? "added" : why);
  }
  // the kernel's part, until every step went out and came in
  const uint64_t deadline = coll_gpu_now_ns() + 60000000000ull;
  for (bool done = false; !done && coll_gpu_now_ns() < deadline;) {
    done = true;
    net.wake(0, kConns);
    for (int id = 0; id < kConns; ++id) {
      Fifo &o = out[id], &i = in[id];
      if (send && o.count < kSteps && o.count < load_acquire(o.head()) + kDepth) {
        const int slot = (int)(o.count % kDepth);
        const size_t bytes = step_bytes(seed, rank, id, o.count);
        for (size_t k = 0; k < bytes; ++k) o.buf[slot * kSlot + k] = (char)pattern(seed, rank, id, o.count, k);
        o.sizes()[slot] = bytes;
        store_release(o.tail(), ++o.count);
      }
      if (recv && i.count < load_acquire(i.tail())) {
        const int slot = (int)(i.count % kDepth);
        const size_t bytes = step_bytes(seed, prev, id, i.count);
        EXPECT(i.sizes()[slot] == bytes, "step %llu of connection %d from rank %d: %llu bytes, %zu sent",
               (unsigned long long)i.count, id, prev, (unsigned long long)i.sizes()[slot], bytes);
        size_t bad = bytes;
        for (size_t k = 0; k < bytes && bad == bytes; ++k)
          if ((uint8_t)i.buf[slot * kSlot + k] != pattern(seed, prev, id, i.count, k)) bad = k;
        EXPECT(bad == bytes, "step %llu of connection %d from rank %d: byte %zu of %zu wrong",
               (unsigned long long)i.count, id, prev, bad, bytes);
        memset(&i.buf[slot * kSlot], 0x5a, kSlot);  // poison: a step delivered twice shows
        store_release(i.head(), ++i.count);
      }
      if ((send && load_acquire(o.head()) < kSteps) || (recv && i.count < kSteps)) done = false;
    }
    char fwhy[256];
    int peer = -1;
    if (coll_gpu_proxy_failed(net.proxy(), &peer, fwhy, sizeof(fwhy)) != COLL_GPU_SUCCESS) {
      EXPECT(false, "the proxy failed: %s", fwhy);
      break;
    }
    if (failures > 0) break;
  }
  EXPECT(!send || load_acquire(out[0].head()) == kSteps, "not every step sent within 60 s");
  EXPECT(!recv || in[0].count == kSteps, "not every step received within 60 s");
  MPI_Barrier(*(MPI_Comm *)b->ctx);  // every rank done before any proxy stops
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const coll_gpu_bootstrap_t b = {rank, size, &comm, mpi_allgather, mpi_bcast, mpi_barrier};
  uint64_t seed = (uint64_t)time(nullptr) ^ ((uint64_t)getpid() << 20);
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, comm);
  coll_gpu_peer_t me{};
  me.host = coll_gpu_host_id();
  me.pid = getpid();
  snprintf(me.busid, sizeof(me.busid), "0000:%02x:00.0", rank);  // no GPU: the proxy goes on any CPU
  std::vector<coll_gpu_peer_t> peers(size);
  EXPECT(coll_gpu_peers_exchange(&b, &me, peers.data()) == COLL_GPU_SUCCESS, "peer exchange");

  const bool hosts = argc > 1 && strcmp(argv[1], "-H") == 0;
  ring_over_net(&b, peers.data(), 1, nullptr, seed);
  ring_over_net(&b, peers.data(), 1, "tcp", seed + 1);
  ring_over_net(&b, peers.data(), 1, "sockets", seed + 5);
  if (size >= 4) ring_over_net(&b, peers.data(), 2, nullptr, seed + 2);
  if (hosts) {
    std::vector<uint16_t> node(size);
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(size));
    const int nodes = coll_gpu_nodes_assign(peers.data(), size, 0, node.data(), scratch.data());
    EXPECT(nodes > 1, "-H: the ranks are on %d host(s)", nodes);
    ring_over_net(&b, peers.data(), 0, nullptr, seed + 3);
    ring_over_net(&b, peers.data(), 0, "tcp", seed + 4);
    ring_over_net(&b, peers.data(), 0, "sockets", seed + 6);
  }

  // the last rank's proxy cannot start (no such transport): everyone fails, the others naming it
  if (rank == size - 1) setenv("COLL_GPU_UCX_TLS", "no-such-transport", 1);
  {
    std::vector<uint16_t> node(size);
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(size));
    coll_gpu_nodes_assign(peers.data(), size, 1, node.data(), scratch.data());
    std::vector<uint8_t> linked(size, 1);
    coll_gpu::Net net;
    char why[512] = "";
    const coll_gpu_status_t s =
        net.setup(&b, node.data(), linked.data(), peers.data(), 1, 1, size, nullptr, why, sizeof(why));
    EXPECT(s != COLL_GPU_SUCCESS, "a set-up without rank %d's proxy succeeded", size - 1);
    char name[32];
    snprintf(name, sizeof(name), "rank %d", size - 1);
    EXPECT(rank == size - 1 || strstr(why, name) != nullptr, "the reason does not name %s: %s", name, why);
    EXPECT(rank != size - 1 || strstr(why, "UCX") != nullptr, "the failing rank's reason is not UCX's: %s", why);
  }
  unsetenv("COLL_GPU_UCX_TLS");

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0)
    printf("test_net: %d ranks, seed %llu: %s (%d failures)\n", size, (unsigned long long)seed,
           all == 0 ? "passed" : "FAILED", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
