/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The communicator's nodes (engine/nodes.h).
 */
#include "engine/nodes.h"

#include <string.h>

#include <algorithm>

int coll_gpu_nodes_assign(const coll_gpu_peer_t *peers, int n, int virtual_nodes, uint16_t *node, void *scratch) {
  // per host met so far: its id, its ranks so far, and the node its last rank is on
  struct Host {
    uint64_t id;
    int ranks, node;
  };
  static_assert(sizeof(Host) <= 16, "COLL_GPU_NODES_SCRATCH");
  Host *hosts = (Host *)scratch;
  int nhosts = 0, nodes = 0;
  for (int r = 0; r < n; ++r) {
    int h = 0;
    while (h < nhosts && hosts[h].id != peers[r].host) ++h;
    if (h == nhosts) hosts[nhosts++] = Host{peers[r].host, 0, -1};
    const int local = hosts[h].ranks++;
    // a host's first rank, or the first of a block of virtual_nodes: a new node
    if (local == 0 || (virtual_nodes > 0 && local % virtual_nodes == 0)) {
      hosts[h].node = r;
      ++nodes;
    }
    node[r] = (uint16_t)hosts[h].node;
  }
  return nodes;
}

int coll_gpu_gpu_ranks(const coll_gpu_peer_t *peers, int n, void *scratch) {
  static_assert(sizeof(int) <= 16, "COLL_GPU_NODES_SCRATCH");
  int *by_gpu = (int *)scratch;  // the ranks, sorted by host and GPU
  for (int r = 0; r < n; ++r) by_gpu[r] = r;
  const auto before = [peers](int a, int b) {
    if (peers[a].host != peers[b].host) return peers[a].host < peers[b].host;
    return memcmp(peers[a].uuid, peers[b].uuid, sizeof(peers[a].uuid)) < 0;
  };
  std::sort(by_gpu, by_gpu + n, before);
  int most = n > 0 ? 1 : 0;
  for (int i = 1, run = 1; i < n; ++i) {
    run = before(by_gpu[i - 1], by_gpu[i]) ? 1 : run + 1;
    if (run > most) most = run;
  }
  return most;
}
