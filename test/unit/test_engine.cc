/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The engine's status type and COLL_GPU_CHECK's breadcrumbs, and the engine's set-up through the bootstrap
// interface where no GPU path can be had (one rank; a bootstrap that fails): the answer, the reason, the
// collective calls made, nothing handed out.
#include <gtest/gtest.h>
#include <stdarg.h>
#include <string.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/engine.h"
#include "engine/nodes.h"
#include "engine/proxy_cpus.h"

namespace {

std::vector<std::string> lines;  // what the logger was given: "<level> <line>"
void capture(int level, int /*subsys*/, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  lines.push_back(std::to_string(level) + " " + buf);
}

int inner_line, outer_line;  // the lines of the two checks below
coll_gpu_status_t inner(coll_gpu_status_t s, int *reached) {
  inner_line = __LINE__ + 1;
  COLL_GPU_CHECK(s);
  ++*reached;
  return COLL_GPU_SUCCESS;
}
coll_gpu_status_t outer(coll_gpu_status_t s, int *reached) {
  outer_line = __LINE__ + 1;
  COLL_GPU_CHECK(inner(s, reached));
  ++*reached;
  return COLL_GPU_SUCCESS;
}

TEST(Status, EveryStatusHasItsOwnWords) {
  std::set<std::string> seen;
  for (int s = COLL_GPU_SUCCESS; s <= COLL_GPU_INVALID_INPUT; ++s) {
    const std::string w = coll_gpu_status_string((coll_gpu_status_t)s);
    EXPECT_FALSE(w.empty());
    EXPECT_NE(w, "unknown status") << s;
    EXPECT_TRUE(seen.insert(w).second) << w;
  }
  EXPECT_STREQ(coll_gpu_status_string((coll_gpu_status_t)99), "unknown status");
}

TEST(Status, CheckReturnsTheFailureWithABreadcrumbPerFunction) {
  lines.clear();
  coll_gpu_status_set_log(capture);
  int reached = 0;
  EXPECT_EQ(outer(COLL_GPU_PEER_GONE, &reached), COLL_GPU_PEER_GONE);
  EXPECT_EQ(reached, 0) << "a failed check must return at once";
  ASSERT_EQ(lines.size(), 2u);
  const std::string here = "test_engine.cc:";
  EXPECT_NE(lines[0].find(here + std::to_string(inner_line) + " -> peer process gone"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(here + std::to_string(outer_line) + " -> peer process gone"), std::string::npos) << lines[1];
  for (const std::string &l : lines) EXPECT_EQ(l.rfind(std::to_string(COLL_GPU_LVL_TRACE) + " ", 0), 0u) << l;

  lines.clear();
  EXPECT_EQ(outer(COLL_GPU_SUCCESS, &reached), COLL_GPU_SUCCESS);
  EXPECT_EQ(reached, 2);
  EXPECT_TRUE(lines.empty());

  coll_gpu_status_set_log(nullptr);  // no logger: the status still comes back
  EXPECT_EQ(outer(COLL_GPU_CUDA_ERROR, &reached), COLL_GPU_CUDA_ERROR);
  EXPECT_TRUE(lines.empty());
}

// A bootstrap over one process: counts its calls; `fail` makes every call fail.
struct Fake {
  bool fail = false;
  int calls = 0;
};
int fake_allgather(void *ctx, const void *send, void *recv, size_t bytes) {
  Fake *f = (Fake *)ctx;
  ++f->calls;
  if (f->fail) return 1;
  memcpy(recv, send, bytes);
  return 0;
}
int fake_bcast(void *ctx, void *, size_t, int) {
  Fake *f = (Fake *)ctx;
  ++f->calls;
  return f->fail ? 1 : 0;
}
int fake_barrier(void *ctx) { return fake_bcast(ctx, nullptr, 0, 0); }

coll_gpu_status_t create(Fake *f, coll_gpu_engine_t **e, char *why, size_t len) {
  const coll_gpu_bootstrap_t b = {0, 1, f, fake_allgather, fake_bcast, fake_barrier};
  coll_gpu_engine_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.name = "test";
  coll_gpu_meminfo_t mem;
  memset(&mem, 0, sizeof(mem));
  mem.kind = COLL_GPU_MEM_HOST;
  mem.device = -1;
  *e = (coll_gpu_engine_t *)&cfg;  // poisoned: must come back NULL
  const coll_gpu_engine_share_t share = {0x5eed, 1, 1, 0};
  return coll_gpu_engine_create(&b, &cfg, &mem, &share, e, why, len);
}

TEST(Engine, OneRankGetsNoGpuPathAndSaysWhy) {
  Fake f;
  coll_gpu_engine_t *e;
  char why[256] = "";
  EXPECT_EQ(create(&f, &e, why, sizeof(why)), COLL_GPU_UNAVAILABLE);
  EXPECT_EQ(e, nullptr);
  EXPECT_STREQ(why, "a single rank needs no GPU path");
  EXPECT_EQ(f.calls, 2) << "the offers and the peer exchange are made even by a rank that cannot qualify";
}

TEST(Engine, FailedBootstrapGetsNoGpuPathAndSaysWhy) {
  Fake f;
  f.fail = true;
  coll_gpu_engine_t *e;
  char why[256] = "";
  EXPECT_EQ(create(&f, &e, why, sizeof(why)), COLL_GPU_UNAVAILABLE);
  EXPECT_EQ(e, nullptr);
  EXPECT_STREQ(why, "the offer allgather failed");
  coll_gpu_engine_release(nullptr);  // nothing to release: a no-op
}

// Nodes: hosts, or virtual nodes of consecutive ranks of a host (coll_gpu_virtual_nodes).
std::vector<int> nodes_of(const std::vector<uint64_t> &hosts, int virtual_nodes, int *count) {
  std::vector<coll_gpu_peer_t> peers(hosts.size());
  for (size_t r = 0; r < hosts.size(); ++r) peers[r].host = hosts[r];
  std::vector<uint16_t> node(hosts.size());
  std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(hosts.size()));
  *count = coll_gpu_nodes_assign(peers.data(), (int)hosts.size(), virtual_nodes, node.data(), scratch.data());
  return std::vector<int>(node.begin(), node.end());
}

// The nodes of n ranks on 1 to 128 hosts (ranks placed on hosts at random, or in blocks of consecutive ranks as
// mpirun places them), virtual nodes or not; their count in *count.
std::vector<int> random_nodes(std::mt19937 &gen, int n, int *count) {
  const int nhosts = 1 + (int)(gen() % (n < 128 ? n : 128));
  std::vector<uint64_t> hosts(n);
  const bool blocks = gen() % 2 == 0;
  for (int r = 0; r < n; ++r) hosts[r] = blocks ? (uint64_t)r * nhosts / n : gen() % nhosts;
  return nodes_of(hosts, (int)(gen() % 4), count);
}

// What the network proxy moves steps over: a forced choice stays; auto takes UCX where any host has RDMA
// or the nodes are virtual (one host: UCX's shared memory), the proxy's sockets otherwise.
TEST(Engine, NetworkChoiceAsNcclMakesIt) {
  for (int forced : {COLL_GPU_ENGINE_PROXY_NET_UCX, COLL_GPU_ENGINE_PROXY_NET_SOCKETS})
    for (int rdma : {0, 1})
      for (int vn : {0, 2}) EXPECT_EQ(forced, coll_gpu_net_choose(forced, rdma, vn));
  EXPECT_EQ(COLL_GPU_ENGINE_PROXY_NET_SOCKETS, coll_gpu_net_choose(COLL_GPU_ENGINE_PROXY_NET_AUTO, 0, 0));
  EXPECT_EQ(COLL_GPU_ENGINE_PROXY_NET_UCX, coll_gpu_net_choose(COLL_GPU_ENGINE_PROXY_NET_AUTO, 1, 0));
  EXPECT_EQ(COLL_GPU_ENGINE_PROXY_NET_UCX, coll_gpu_net_choose(COLL_GPU_ENGINE_PROXY_NET_AUTO, 0, 2));
  EXPECT_EQ(COLL_GPU_ENGINE_PROXY_NET_UCX, coll_gpu_net_choose(COLL_GPU_ENGINE_PROXY_NET_AUTO, 1, 2));
}

TEST(Nodes, HostsOrBlocksOfConsecutiveRanksOfAHost) {
  int n = 0;
  EXPECT_EQ(nodes_of({7, 7, 7, 7, 7, 7, 7, 7}, 0, &n), std::vector<int>(8, 0));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(nodes_of({7, 7, 7, 7, 7, 7, 7, 7}, 2, &n), (std::vector<int>{0, 0, 2, 2, 4, 4, 6, 6}));
  EXPECT_EQ(n, 4);
  EXPECT_EQ(nodes_of({7, 7, 7, 7, 7, 7, 7, 7}, 3, &n), (std::vector<int>{0, 0, 0, 3, 3, 3, 6, 6}));
  EXPECT_EQ(n, 3);
  EXPECT_EQ(nodes_of({7, 7, 7}, 8, &n), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(n, 1);
  // two hosts, ranks interleaved: a host's ranks are counted among its own
  EXPECT_EQ(nodes_of({1, 2, 1, 2}, 0, &n), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(nodes_of({1, 2, 1, 2, 1, 2}, 2, &n), (std::vector<int>{0, 1, 0, 1, 4, 5}));
  EXPECT_EQ(n, 4);
  EXPECT_EQ(nodes_of({1, 2, 1, 2}, 1, &n), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(n, 4);
}

// At any size, against the definition: a rank's node is the lowest rank of its host in the same block of
// virtual_nodes of that host's ranks.
TEST(Nodes, AnySizeMatchesTheDefinition) {
  std::mt19937 gen((unsigned)time(nullptr));
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + (int)(gen() % 1024), nhosts = 1 + (int)(gen() % 128), vn = (int)(gen() % 9);
    std::vector<uint64_t> hosts(n);
    for (auto &h : hosts) h = 1000 + gen() % nhosts;
    int count = 0;
    const std::vector<int> node = nodes_of(hosts, vn, &count);
    std::map<uint64_t, int> seen;  // a host's ranks so far
    std::map<std::pair<uint64_t, int>, int> first;
    for (int r = 0; r < n; ++r) {
      const int local = seen[hosts[r]]++;
      const auto key = std::make_pair(hosts[r], vn > 0 ? local / vn : 0);
      if (first.count(key) == 0) first[key] = r;
      ASSERT_EQ(node[r], first[key]) << "rank " << r << " of " << n << ", " << nhosts << " hosts, virtual nodes " << vn;
    }
    EXPECT_EQ(count, (int)first.size());
  }
}

// The most ranks on one GPU: against a count by host and UUID, at any size, ranks in any order.
TEST(Nodes, RanksSharingAGpuMatchTheDefinition) {
  std::mt19937 gen((unsigned)time(nullptr));
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + (int)(gen() % 1024), nhosts = 1 + (int)(gen() % 16), ngpus = 1 + (int)(gen() % 8);
    std::vector<coll_gpu_peer_t> peers(n);
    std::map<std::pair<uint64_t, int>, int> count;
    int most = 0;
    for (auto &p : peers) {
      p.host = 1000 + gen() % nhosts;
      const int gpu = (int)(gen() % ngpus);
      p.uuid[gpu % 2 == 0 ? 0 : 15] = (uint8_t)(gpu + 1);
      most = std::max(most, ++count[std::make_pair(p.host, gpu)]);
    }
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(n));
    ASSERT_EQ(coll_gpu_gpu_ranks(peers.data(), n, scratch.data()), most) << n << " ranks";
  }
  // the same GPU UUID on two hosts is two GPUs
  std::vector<coll_gpu_peer_t> two(4, coll_gpu_peer_t{});
  two[0].host = two[1].host = 1;
  two[2].host = two[3].host = 2;
  two[3].uuid[0] = 9;
  std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(4));
  EXPECT_EQ(coll_gpu_gpu_ranks(two.data(), 4, scratch.data()), 2);
}

// The proxy's threads left to the engine: every rank's threads and the rank itself fit the CPUs near its
// GPU, within 1 and a thread per channel.
TEST(Nodes, ProxyThreadsFitTheRanksShareOfTheCpus) {
  EXPECT_EQ(coll_gpu_proxy_auto_threads(16, 2, 8), 7) << "2 ranks on a 16-core machine";
  EXPECT_EQ(coll_gpu_proxy_auto_threads(32, 2, 8), 8) << "a thread per channel at most";
  EXPECT_EQ(coll_gpu_proxy_auto_threads(128, 8, 8), 8);
  EXPECT_EQ(coll_gpu_proxy_auto_threads(2, 2, 8), 1) << "at least one";
  EXPECT_EQ(coll_gpu_proxy_auto_threads(0, 0, 8), 1);
  EXPECT_EQ(coll_gpu_proxy_auto_threads(16, 1, 3), 3);
  for (int cpus = 1; cpus <= 256; ++cpus)
    for (int ranks = 1; ranks <= 16; ++ranks)
      for (int most = 1; most <= 8; ++most) {
        const int t = coll_gpu_proxy_auto_threads(cpus, ranks, most);
        EXPECT_GE(t, 1);
        EXPECT_LE(t, most);
        if (t > 1) {
          EXPECT_LE(ranks * (t + 1), cpus) << cpus << " CPUs, " << ranks << " ranks";
        }
        if (t < most) {
          EXPECT_GT(ranks * (t + 2), cpus) << "a thread more would fit";
        }
      }
}

// The proxy's CPUs: near the GPU, off the core a rank is bound to, within the CPUs a rank may run on
// otherwise; against a reference made of sets.
TEST(Nodes, ProxyThreadsRunNearTheGpuOffTheRanksCore) {
  int shared = -1;
  auto choose = [&shared](const std::vector<int> &near, const std::vector<int> &mine) {
    const size_t room = std::max(near.size(), mine.size());
    std::vector<int> out(room + 1, -1);
    const int n =
        coll_gpu_proxy_cpus(near.data(), (int)near.size(), mine.data(), (int)mine.size(), out.data(), &shared);
    EXPECT_EQ(out[room], -1) << "wrote past its room";
    return std::vector<int>(out.begin(), out.begin() + n);
  };
  const std::vector<int> near = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(choose(near, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), near) << "not bound: the GPU's CPUs";
  EXPECT_EQ(shared, 8);
  EXPECT_EQ(choose(near, {3}), (std::vector<int>{0, 1, 2, 4, 5, 6, 7})) << "bound to a core near the GPU";
  EXPECT_EQ(shared, 8) << "the ranks of the machine share near";
  EXPECT_EQ(choose(near, {3, 11}), (std::vector<int>{0, 1, 2, 4, 5, 6, 7})) << "a core's two hardware threads";
  EXPECT_EQ(choose(near, {12, 13}), near) << "bound to a core far from it";
  EXPECT_EQ(choose(near, near), near) << "bound around the GPU";
  EXPECT_EQ(choose(near, {}), near);
  EXPECT_EQ(choose(near, {2, 3, 4, 5, 20, 21}), (std::vector<int>{2, 3, 4, 5}))
      << "confined to CPUs of which some are near: never the others";
  EXPECT_EQ(shared, 4) << "the ranks of a confined host share its CPUs near the GPU";
  EXPECT_EQ(choose(near, {16, 17, 18}), (std::vector<int>{16, 17, 18})) << "kept off the GPU's CPUs: its own";
  EXPECT_EQ(shared, 3);
  std::mt19937 gen((unsigned)time(nullptr));
  for (int trial = 0; trial < 1000; ++trial) {
    std::set<int> a, b;
    for (int c = 0; c < 64; ++c) {
      if (gen() % 3 == 0) a.insert(c);
      if (gen() % (trial % 2 ? 4 : 40) == 0) b.insert(c);  // odd trials: sets; even: mostly a core or two
    }
    if (a.empty()) a.insert(0);
    const bool bound = !b.empty() && b.size() <= 2;
    std::vector<int> pick;
    if (bound)
      std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(pick));
    else if (b.empty())
      pick.assign(a.begin(), a.end());
    else
      std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(pick));
    if (pick.empty()) pick = bound ? std::vector<int>(a.begin(), a.end()) : std::vector<int>(b.begin(), b.end());
    ASSERT_EQ(choose(std::vector<int>(a.begin(), a.end()), std::vector<int>(b.begin(), b.end())), pick);
    ASSERT_EQ(shared, bound ? (int)a.size() : (int)pick.size());
  }
}

// Where the proxy's threads belong: the CPUs near both the GPU and its NIC port, the NIC's where none is near both,
// the GPU's without a NIC; against a reference made of sets.
TEST(Nodes, ProxyThreadsRunNearTheNicAndTheGpu) {
  int by_gpu = -1, by_nic = -1;
  auto near = [&](const std::vector<int> &gpu, const std::vector<int> &nic) {
    const size_t room = std::max(gpu.size(), nic.size());
    std::vector<int> out(room + 1, -1);
    const int n =
        coll_gpu_proxy_near(gpu.data(), (int)gpu.size(), nic.data(), (int)nic.size(), out.data(), &by_gpu, &by_nic);
    EXPECT_EQ(out[room], -1) << "wrote past its room";
    return std::vector<int>(out.begin(), out.begin() + n);
  };
  const std::vector<int> socket0 = {0, 1, 2, 3, 16, 17, 18, 19}, socket1 = {4, 5, 6, 7, 20, 21, 22, 23};
  EXPECT_EQ(near(socket0, socket0), socket0) << "one CPU above both";
  EXPECT_EQ(1, by_gpu);
  EXPECT_EQ(1, by_nic);
  EXPECT_EQ(near(socket0, {2, 3, 4, 5, 18}), (std::vector<int>{2, 3, 18})) << "the CPUs near both";
  EXPECT_EQ(near(socket0, socket1), socket1) << "the NIC under the other CPU: its CPUs";
  EXPECT_EQ(0, by_gpu);
  EXPECT_EQ(1, by_nic);
  EXPECT_EQ(near(socket0, {}), socket0) << "no NIC (one machine): the GPU's";
  EXPECT_EQ(1, by_gpu);
  EXPECT_EQ(0, by_nic);
  EXPECT_EQ(near({}, socket1), socket1) << "the GPU not placed: the NIC's";
  EXPECT_EQ(0, by_gpu);
  EXPECT_EQ(near({}, {}), std::vector<int>{}) << "neither placed";
  EXPECT_EQ(0, by_gpu);
  EXPECT_EQ(0, by_nic);
  std::mt19937 gen((unsigned)time(nullptr));
  for (int trial = 0; trial < 1000; ++trial) {
    std::set<int> g, c;
    for (int cpu = 0; cpu < 128; ++cpu) {
      if (gen() % (trial % 2 ? 3 : 50) == 0) g.insert(cpu);  // odd trials: overlapping sets; even: sparse ones
      if (gen() % (trial % 3 ? 3 : 50) == 0) c.insert(cpu);
    }
    std::vector<int> both;
    std::set_intersection(g.begin(), g.end(), c.begin(), c.end(), std::back_inserter(both));
    const std::vector<int> pick = !both.empty() ? both
                                  : !c.empty()  ? std::vector<int>(c.begin(), c.end())
                                                : std::vector<int>(g.begin(), g.end());
    ASSERT_EQ(near(std::vector<int>(g.begin(), g.end()), std::vector<int>(c.begin(), c.end())), pick) << trial;
    ASSERT_EQ(by_gpu, !g.empty() && (!both.empty() || c.empty()) ? 1 : 0);
    ASSERT_EQ(by_nic, c.empty() ? 0 : 1);
  }
}

// UCX_NET_DEVICES's devices, with or without their ports, name a NIC port; unset, empty or "all" every one.
TEST(Nodes, UcxNetDevicesNameThePorts) {
  for (const char *all : {(const char *)nullptr, "", "all"}) EXPECT_EQ(1, coll_gpu_ucx_devices_take(all, "mlx5_0"));
  EXPECT_EQ(1, coll_gpu_ucx_devices_take("mlx5_0:1", "mlx5_0"));
  EXPECT_EQ(1, coll_gpu_ucx_devices_take("eth0,mlx5_1:1", "mlx5_1"));
  EXPECT_EQ(1, coll_gpu_ucx_devices_take("eth0,mlx5_1:1", "eth0"));
  EXPECT_EQ(0, coll_gpu_ucx_devices_take("eth0,mlx5_1:1", "mlx5_0"));
  EXPECT_EQ(0, coll_gpu_ucx_devices_take("mlx5_10:1", "mlx5_1")) << "a prefix is another device";
  EXPECT_EQ(0, coll_gpu_ucx_devices_take("mlx5", "mlx5_0"));
  EXPECT_EQ(0, coll_gpu_ucx_devices_take("eth0,", "eth1"));
}

// Any communicator size: 1 to 1024 ranks over 1 to 128 hosts (random_nodes).
TEST(Nodes, RingsVisitTheNodesOneAfterAnother) {
  std::mt19937 gen((unsigned)time(nullptr));
  const int sizes[] = {1, 2, 3, 5, 8, 9, 16, 24, 64, 100, 256, 1000, 1024};
  for (int trial = 0; trial < 600; ++trial) {
    const int n =
        trial < 400 ? 1 + (int)(gen() % COLL_GPU_MAX_DIRECT) : sizes[gen() % (sizeof(sizes) / sizeof(*sizes))];
    int nnodes = 0;
    const std::vector<int> node = random_nodes(gen, n, &nnodes);
    std::vector<uint16_t> node16(node.begin(), node.end());
    coll_gpu_rings_t rings{};
    ASSERT_EQ(coll_gpu_rings_alloc(&rings, n), COLL_GPU_SUCCESS);
    EXPECT_EQ(rings.nrings, 1);
    for (int k = 0; k < n; ++k) ASSERT_EQ(coll_gpu_ring(&rings, 0)[k], k) << "rank order";
    rings.nrings = 1 + (int)(gen() % COLL_GPU_MAX_RINGS);
    for (int i = 0; i < rings.nrings; ++i) {
      uint16_t *ring = coll_gpu_ring(&rings, i);
      for (int r = 0; r < n; ++r) ring[r] = (uint16_t)r;
      std::shuffle(ring, ring + n, gen);
    }
    const std::vector<uint16_t> before(rings.order, rings.order + (size_t)rings.nrings * n);
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(n));
    coll_gpu_rings_by_node(&rings, node16.data(), scratch.data());
    for (int i = 0; i < rings.nrings; ++i) {
      const uint16_t *a = before.data() + (size_t)i * n, *b = coll_gpu_ring(&rings, i);
      EXPECT_TRUE(std::is_permutation(a, a + n, b)) << "ring " << i << " lost or doubled a rank";
      int crossings = 0;
      for (int k = 0; k < n; ++k) crossings += node[b[k]] != node[b[(k + 1) % n]];
      EXPECT_EQ(crossings, nnodes > 1 ? nnodes : 0) << "ring " << i << ": " << nnodes << " nodes, " << n << " ranks";
      // inside a node, the ranks keep the order the ring had: each node's ranks, in ring order, before and after
      std::map<int, std::vector<int>> was, is;
      for (int k = 0; k < n; ++k) {
        was[node[a[k]]].push_back(a[k]);
        is[node[b[k]]].push_back(b[k]);
      }
      EXPECT_EQ(was, is) << "ring " << i << ": a node's ranks changed order";
      if (HasFailure()) {
        coll_gpu_rings_free(&rings);
        return;
      }
    }
    coll_gpu_rings_free(&rings);
    EXPECT_EQ(rings.order, nullptr);
  }
}

// The rings turned inside each node, and the chains of bcast and reduce: on random hosts and rings, every
// ring still visits each node once, in the base ring's node order, with each node's ranks turned as a
// cycle; every rank starts its node's run on some ring and ends it on another where the rings had room for
// a turn per rank, the first ring's first rank with 2 turns already; and the rings a bcast from or a reduce
// to any root takes are exactly those whose chain crosses between nodes once per node (nodes - 1 times),
// against the chain written out.
TEST(Nodes, RingsTurnEachNodesRanksAndChainsCrossOncePerNode) {
  std::mt19937 gen((unsigned)time(nullptr));
  for (int trial = 0; trial < 1500; ++trial) {
    const int n = 1 + (int)(gen() % (trial < 1200 ? 24 : 1024));
    int nnodes = 0;
    const std::vector<int> node = random_nodes(gen, n, &nnodes);
    std::vector<uint16_t> node16(node.begin(), node.end());
    std::map<int, int> size;
    for (int r = 0; r < n; ++r) ++size[node[r]];
    int most = 0;
    for (const auto &ns : size) most = std::max(most, ns.second);
    coll_gpu_rings_t rings{};
    ASSERT_EQ(coll_gpu_rings_alloc(&rings, n), COLL_GPU_SUCCESS);
    const int nbase = 1 + (int)(gen() % COLL_GPU_MAX_RINGS);
    rings.nrings = nbase;
    for (int i = 0; i < nbase; ++i) {
      uint16_t *ring = coll_gpu_ring(&rings, i);
      for (int r = 0; r < n; ++r) ring[r] = (uint16_t)r;
      std::shuffle(ring, ring + n, gen);
    }
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(n));
    coll_gpu_rings_by_node(&rings, node16.data(), scratch.data());
    const std::vector<uint16_t> base(rings.order, rings.order + (size_t)nbase * n);
    const int turn_bounds[] = {1, 2, 2, 3, 4, 8, 17};
    const int most_turns = turn_bounds[gen() % 7];
    const int got = coll_gpu_rings_rotate_nodes(&rings, node16.data(), most_turns, scratch.data());
    const bool turned = nnodes > 1 && std::min(most, most_turns) > 1;
    if (!turned) {
      ASSERT_EQ(rings.nrings, nbase);
      ASSERT_TRUE(std::equal(base.begin(), base.end(), rings.order)) << "rings turned on one node or one rank a node";
    }
    ASSERT_GE(rings.nrings, 1);
    ASSERT_LE(rings.nrings, COLL_GPU_MAX_RINGS);
    // a turn per rank of the largest node up to most_turns, on as many base rings as leave room for them
    const int want = std::min(most, most_turns);
    const int bases = turned ? std::min(nbase, std::max(1, COLL_GPU_MAX_RINGS / want)) : nbase;
    const int turns = turned ? std::min(want, COLL_GPU_MAX_RINGS / bases) : 1;
    ASSERT_EQ(bases * turns, rings.nrings) << most << " ranks on the largest of " << nnodes << " nodes";
    ASSERT_EQ(turns, got);
    std::set<int> firsts, lasts;
    for (int j = 0; j < rings.nrings; ++j) {
      const uint16_t *a = base.data() + (size_t)(j / turns) * n, *b = coll_gpu_ring(&rings, j);
      // node by node: the same nodes in the same order, each node's ranks the base's turned by j mod turns
      int k = 0;
      while (k < n) {
        const int len = size[node[a[k]]];
        ASSERT_EQ(node[a[k]], node[b[k]]) << "ring " << j << " visits the nodes in another order";
        std::vector<uint16_t> want(a + k, a + k + len);
        std::rotate(want.begin(), want.begin() + j % turns % len, want.end());
        ASSERT_TRUE(std::equal(want.begin(), want.end(), b + k)) << "ring " << j << ", node " << node[a[k]];
        if (nnodes > 1) {
          firsts.insert(b[k]);
          lasts.insert(b[k + len - 1]);
        }
        k += len;
      }
    }
    if (nnodes > 1 && turns == most) {
      EXPECT_EQ((int)firsts.size(), n) << "a rank never starts its node's run";
      EXPECT_EQ((int)lasts.size(), n) << "a rank never ends its node's run";
    }
    // the chains, from random roots and from the first rank of the first ring (rank 0 in rings in rank order)
    for (int t = 0; t < 8; ++t) {
      const int root = t == 0 ? base[0] : (int)(gen() % n);
      for (coll_gpu_coll_t coll : {COLL_GPU_COLL_BCAST, COLL_GPU_COLL_REDUCE, COLL_GPU_COLL_ALLGATHER}) {
        const unsigned mask = coll_gpu_rings_chain(&rings, node16.data(), coll, root);
        unsigned once = 0;  // the rings whose chain crosses nodes - 1 times
        for (int j = 0; j < rings.nrings; ++j) {
          const uint16_t *ring = coll_gpu_ring(&rings, j);
          int at = 0;
          while (ring[at] != root) ++at;
          int crossings = 0;  // the chain's n - 1 hops: from the root on, or up to it
          for (int h = 0; h < n - 1; ++h) {
            const int from = coll == COLL_GPU_COLL_REDUCE ? at + 1 + h : at + h;
            crossings += node[ring[from % n]] != node[ring[(from + 1) % n]];
          }
          if (crossings == nnodes - 1) once |= 1u << j;
        }
        const bool every = coll == COLL_GPU_COLL_ALLGATHER || once == 0 || once == (1u << rings.nrings) - 1;
        ASSERT_EQ(every ? 0u : once, mask)
            << coll_gpu_coll_name(coll) << " root " << root << ", " << nnodes << " nodes";
        if (coll != COLL_GPU_COLL_ALLGATHER && nnodes > 1 && (turns == most || (t == 0 && turns > 1))) {
          ASSERT_NE(0u, once) << coll_gpu_coll_name(coll) << " root " << root << ": no ring crosses once per node";
        }
      }
    }
    coll_gpu_rings_free(&rings);
  }
}

// The allgather on turned rings (coll_gpu_rings_run_turns): offered exactly where every node has the same
// k >= 2 ranks on 2 or more nodes and the k rings are made of runs of a node's k ranks from position 0, every
// rank starting one and ending one (always where one base ring took k turns; by chance with several base rings: beyond
// 2 ranks a node, ranks that start once may not end once, as in the case written out first); then, following the
// steps the kernel takes (on each ring the blocks of positions 0, k, 2k, ... go round, a rank i places into its node's
// run receiving those s = i mod k hops from their start and pushing each on below n - 1 hops), every rank's block
// reaches every other rank once, enters each other node once, and each rank receives on every ring the blocks its
// previous rank pushes, in the order it pushes them; and, following the reduce-scatter's steps, every rank's
// block sums every rank's part once, is kept by its rank, and crosses between nodes nodes - 1 times.
TEST(Nodes, AllgatherAndReduceScatterOnTurnedRingsEnterEachNodeOnce) {
  {  // 2 nodes of 3 ranks, 3 rings of runs of 3: turns of one base ring, then rings where every rank starts its
     // node's run once but ranks 2 and 5 end it twice (and 1 and 4 never: their blocks would have no sum)
    const uint16_t node6[] = {0, 0, 0, 1, 1, 1};
    const uint16_t turned[3][6] = {{0, 1, 2, 3, 4, 5}, {1, 2, 0, 4, 5, 3}, {2, 0, 1, 5, 3, 4}};
    const uint16_t unequal[3][6] = {{0, 1, 2, 3, 4, 5}, {1, 0, 2, 4, 3, 5}, {2, 1, 0, 5, 4, 3}};
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(6));
    for (const auto *set : {turned, unequal}) {
      coll_gpu_rings_t rings{};
      ASSERT_EQ(coll_gpu_rings_alloc(&rings, 6), COLL_GPU_SUCCESS);
      rings.nrings = 3;
      for (int i = 0; i < 3; ++i) std::copy(set[i], set[i] + 6, coll_gpu_ring(&rings, i));
      EXPECT_EQ(set == turned ? 3 : 0, coll_gpu_rings_run_turns(&rings, node6, scratch.data()));
      coll_gpu_rings_free(&rings);
    }
  }
  std::mt19937 gen((unsigned)time(nullptr));
  int offered = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    int n = 0, nnodes = 0;
    std::vector<int> node;
    if (trial % 2 == 0) {  // nodes of k ranks each
      const int k = 1 + (int)(gen() % 5), hosts = 1 + (int)(gen() % (trial % 10 == 0 ? 128 : 8));
      n = k * hosts;
      std::vector<uint64_t> host(n);
      for (int r = 0; r < n; ++r) host[r] = gen() % 2 ? (uint64_t)(r / k) : 0;  // blocks or interleaved
      if (host[0] == 0 && host[n - 1] == 0)
        for (int r = 0; r < n; ++r) host[r] = (uint64_t)(r % hosts);
      node = nodes_of(host, 0, &nnodes);
    } else {
      n = 1 + (int)(gen() % 24);
      node = random_nodes(gen, n, &nnodes);
    }
    std::vector<uint16_t> node16(node.begin(), node.end());
    std::map<int, int> size;
    for (int r = 0; r < n; ++r) ++size[node[r]];
    coll_gpu_rings_t rings{};
    ASSERT_EQ(coll_gpu_rings_alloc(&rings, n), COLL_GPU_SUCCESS);
    rings.nrings = gen() % 3 == 0 ? 1 + (int)(gen() % 4) : 1;
    for (int i = 0; i < rings.nrings; ++i) {
      uint16_t *ring = coll_gpu_ring(&rings, i);
      for (int r = 0; r < n; ++r) ring[r] = (uint16_t)r;
      std::shuffle(ring, ring + n, gen);
    }
    std::vector<char> scratch(COLL_GPU_NODES_SCRATCH(n));
    coll_gpu_rings_by_node(&rings, node16.data(), scratch.data());
    const int most_turns = 1 + (int)(gen() % 6);
    const int turns = coll_gpu_rings_rotate_nodes(&rings, node16.data(), most_turns, scratch.data());
    const int k = size.begin()->second;
    bool equal = true;
    for (const auto &ns : size) equal &= ns.second == k;
    // where one base ring took k turns, or the search's rings happen to do as turns would: k rings of runs of
    // k ranks of one node each from position 0, on which the ranks at positions 0, k, 2k, ... are every rank,
    // and so are those at positions k - 1, 2k - 1, ...
    bool runs = equal && nnodes > 1 && k > 1 && rings.nrings == k;
    std::multiset<int> firsts, lasts;
    for (int t = 0; runs && t < rings.nrings; ++t) {
      const uint16_t *ring = coll_gpu_ring(&rings, t);
      for (int at = 0; at < n; at += k) {
        firsts.insert(ring[at]);
        lasts.insert(ring[at + k - 1]);
        for (int j = 1; j < k; ++j) runs &= node[ring[at + j]] == node[ring[at]];
        runs &= node[ring[(at + k) % n]] != node[ring[at]];
      }
    }
    for (int r = 0; runs && r < n; ++r) runs &= firsts.count(r) == 1 && lasts.count(r) == 1;
    const int want = runs ? k : 0;
    if (turns == k && k > 1 && rings.nrings == k && equal && nnodes > 1) {
      ASSERT_EQ(want, k) << "k turns of one base ring";
    }
    const int got = coll_gpu_rings_run_turns(&rings, node16.data(), scratch.data());
    ASSERT_EQ(want, got) << n << " ranks, " << nnodes << " nodes, " << rings.nrings << " rings";
    if (got == 0) {
      coll_gpu_rings_free(&rings);
      continue;
    }
    ++offered;
    std::vector<std::vector<int>> has(n, std::vector<int>(n, 0));      // [rank][owner]: copies received
    std::vector<std::vector<int>> entered(n, std::vector<int>(n, 0));  // [owner][node]: times entered
    for (int t = 0; t < rings.nrings; ++t) {
      const uint16_t *ring = coll_gpu_ring(&rings, t);
      std::vector<std::vector<int>> pushed(n), received(n);  // by position: owners, in step order
      for (int pos = 0; pos < n; ++pos) {
        const int i = pos % k, me = ring[pos];
        if (i == 0) {
          pushed[pos].push_back(me);
          ++has[me][me];
        }
        for (int s = i == 0 ? k : i; s <= n - 1; s += k) {
          const int owner = ring[(pos - s + n) % n];
          received[pos].push_back(owner);
          ++has[me][owner];
          if (s < n - 1) pushed[pos].push_back(owner);
        }
      }
      for (int pos = 0; pos < n; ++pos) {
        ASSERT_EQ(pushed[(pos + n - 1) % n], received[pos]) << "ring " << t << ", position " << pos;
        const int from = ring[(pos + n - 1) % n], to = ring[pos];
        if (node[from] != node[to])
          for (int owner : received[pos]) ++entered[owner][node[to]];
      }
    }
    for (int r = 0; r < n; ++r)
      for (int q = 0; q < n; ++q) {
        ASSERT_EQ(1, has[r][q]) << "rank " << r << " holds rank " << q << "'s block " << has[r][q] << " times";
        if (node[q] != node[r]) {
          ASSERT_EQ(1, entered[q][node[r]]) << "rank " << q << "'s block, node " << node[r];
        } else {
          ASSERT_EQ(0, entered[q][node[r]]) << "rank " << q << "'s block came back home";
        }
      }
    // the reduce-scatter: on each ring the blocks of positions k - 1, 2k - 1, ... are reduced along n - 1 hops
    // from the rank after their owner, a rank i places into its run taking those s = i mod k hops from their
    // start (s = 0 sends its own data, s = n - 1 keeps the sum)
    std::vector<std::vector<int>> sum(n, std::vector<int>(n, 0));  // [owner][rank]: times added in
    std::vector<int> crossed(n, 0), kept(n, 0);                    // by owner: hops to another node; sums kept
    for (int t = 0; t < rings.nrings; ++t) {
      const uint16_t *ring = coll_gpu_ring(&rings, t);
      std::vector<std::vector<int>> pushed(n), received(n);  // by position: owners, in step order
      for (int pos = 0; pos < n; ++pos) {
        const int i = pos % k, me = ring[pos];
        for (int s = i; s < n; s += k) {
          const int owner = ring[(pos - 1 - s + 2 * n) % n];
          ++sum[owner][me];
          if (s > 0) received[pos].push_back(owner);
          if (s < n - 1) pushed[pos].push_back(owner);
          if (s == n - 1) {
            ASSERT_EQ(owner, me) << "ring " << t << ": the sum ends at another rank";
            ++kept[me];
          }
        }
      }
      for (int pos = 0; pos < n; ++pos) {
        ASSERT_EQ(pushed[(pos + n - 1) % n], received[pos]) << "reduce-scatter, ring " << t << ", position " << pos;
        if (node[ring[(pos + n - 1) % n]] != node[ring[pos]])
          for (int owner : received[pos]) ++crossed[owner];
      }
    }
    for (int q = 0; q < n; ++q) {
      ASSERT_EQ(1, kept[q]) << "rank " << q << " keeps its block's sum " << kept[q] << " times";
      ASSERT_EQ(nnodes - 1, crossed[q]) << "rank " << q << "'s block crosses between nodes " << crossed[q] << " times";
      for (int r = 0; r < n; ++r) ASSERT_EQ(1, sum[q][r]) << "rank " << r << " adds into rank " << q << "'s block";
    }
    coll_gpu_rings_free(&rings);
  }
  EXPECT_GT(offered, 0);
}

// Which ranks' hops to other nodes a ring call moves data over: against the hops each collective uses,
// written out (a bcast's n - 1 hops from its root along the ring, a reduce's from the rank after its root to
// the root, every hop for the others), on random rings over random nodes with random roots.
TEST(Nodes, RingCallsMoveOverTheNetworkWhereTheirHopsCross) {
  std::mt19937 gen((unsigned)time(nullptr));
  // the mini-cluster's 2 hosts x 2 GPUs, ring 0 1 2 3: a bcast from 0 crosses at 1 -> 2 only; a reduce to 0
  // at 1 -> 2 and 3 -> 0; a reduce to 1 (chain 2 3 0 1) at 3 -> 0 only
  const uint16_t ring4[] = {0, 1, 2, 3}, node4[] = {0, 0, 2, 2};
  const int bcast0[] = {0, 1, 1, 0}, reduce0[] = {1, 1, 1, 1}, reduce1[] = {1, 0, 0, 1};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(bcast0[r], coll_gpu_ring_moves_net(ring4, 4, node4, r, COLL_GPU_COLL_BCAST, 0)) << r;
    EXPECT_EQ(reduce0[r], coll_gpu_ring_moves_net(ring4, 4, node4, r, COLL_GPU_COLL_REDUCE, 0)) << r;
    EXPECT_EQ(reduce1[r], coll_gpu_ring_moves_net(ring4, 4, node4, r, COLL_GPU_COLL_REDUCE, 1)) << r;
    EXPECT_EQ(1, coll_gpu_ring_moves_net(ring4, 4, node4, r, COLL_GPU_COLL_ALLGATHER, 0)) << r;
  }
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 2 + (int)(gen() % (trial < 1500 ? 15 : 1023));
    const int nnodes = 1 + (int)(gen() % (n < 16 ? n : 16));
    std::vector<uint16_t> node(n), ring(n);
    for (int r = 0; r < n; ++r) {
      node[r] = (uint16_t)(gen() % nnodes);
      ring[r] = (uint16_t)r;
    }
    std::shuffle(ring.begin(), ring.end(), gen);
    const int root = (int)(gen() % n);
    const coll_gpu_coll_t coll = (coll_gpu_coll_t)(gen() % COLL_GPU_NCOLLS);
    int at = 0;
    while (ring[at] != root) ++at;
    // the hops (from ring position k to k + 1) that carry data
    std::vector<bool> used(n, true);
    if (coll == COLL_GPU_COLL_BCAST) used[(at + n - 1) % n] = false;  // the hop into the root
    if (coll == COLL_GPU_COLL_REDUCE) used[at] = false;               // the hop out of the root
    std::vector<int> want(n, 0);
    for (int k = 0; k < n; ++k) {
      const int from = ring[k], to = ring[(k + 1) % n];
      if (used[k] && node[from] != node[to]) want[from] = want[to] = 1;
    }
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(want[r], coll_gpu_ring_moves_net(ring.data(), n, node.data(), r, coll, root))
          << coll_gpu_coll_name(coll) << " root " << root << ", rank " << r << " of " << n;
  }
}

}  // namespace
