/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Trees from the rings (topo.h): a chain per node, a double binary tree between nodes.
 */
#include "topo/topo.h"

#define MAX_NODES TOPO_MAX_GPUS /* every node has a GPU */

static void add_child(topo_trees_t *trees, int t, int parent, int child) {
  for (int c = 0; c < TOPO_TREE_ARITY; ++c)
    if (trees->down[t][parent][c] < 0) {
      trees->down[t][parent][c] = child;
      return;
    }
}

/* Tree t from ring `order`: each node's chain in ring order, the heads linked heap-wise over the nodes,
 * in reverse when `flip`. */
static void build(const topo_system_t *s, const int *order, int flip, topo_trees_t *trees, int t) {
  const int n = topo_ngpus(s);
  int nnodes = 0;
  for (int g = 0; g < n; ++g)
    if (topo_gpu_node(s, g) + 1 > nnodes) nnodes = topo_gpu_node(s, g) + 1;
  /* start where the ring enters a node: after its hop from another node (at order[0] on one node) */
  int start = 0;
  for (int k = 0; k < n && nnodes > 1; ++k)
    if (topo_gpu_node(s, order[k]) != topo_gpu_node(s, order[(k + n - 1) % n])) {
      start = k;
      break;
    }
  int chain[MAX_NODES][TOPO_MAX_GPUS], len[MAX_NODES] = {0};
  for (int k = 0; k < n; ++k) {
    const int g = order[(start + k) % n], node = topo_gpu_node(s, g);
    chain[node][len[node]++] = g;
  }
  for (int g = 0; g < n; ++g) {
    trees->up[t][g] = -1;
    for (int c = 0; c < TOPO_TREE_ARITY; ++c) trees->down[t][g][c] = -1;
  }
  /* inside each node: the chain */
  for (int node = 0; node < nnodes; ++node)
    for (int i = 1; i < len[node]; ++i) {
      trees->up[t][chain[node][i]] = chain[node][i - 1];
      add_child(trees, t, chain[node][i - 1], chain[node][i]);
    }
  /* between nodes: the chains' heads in the double binary tree over the nodes, children in place order */
  for (int node = 0; node < nnodes; ++node) {
    int parent, child[2];
    topo_dtree(nnodes, node, flip, &parent, child);
    if (parent >= 0) trees->up[t][chain[node][0]] = chain[parent][0];
    for (int c = 0; c < 2; ++c)
      if (child[c] >= 0) add_child(trees, t, chain[node][0], chain[child[c]][0]);
  }
}

void topo_dtree(int nnodes, int node, int t, int *parent, int child[2]) {
  /* a place and a node are each other's image: k <-> k in tree 0, k <-> nnodes - 1 - k in tree 1 */
  const int p = t ? nnodes - 1 - node : node;
  *parent = p > 0 ? (t ? nnodes - 1 - (p - 1) / 2 : (p - 1) / 2) : -1;
  for (int c = 0; c < 2; ++c) {
    const int q = 2 * p + 1 + c;
    child[c] = q < nnodes ? (t ? nnodes - 1 - q : q) : -1;
  }
}

void topo_search_trees(const topo_system_t *s, const topo_rings_t *rings, topo_trees_t *trees) {
  trees->ntrees = 2 * rings->nrings;
  for (int r = 0; r < rings->nrings; ++r) {
    build(s, rings->order[r], 0, trees, 2 * r);
    build(s, rings->order[r], 1, trees, 2 * r + 1);
  }
}
