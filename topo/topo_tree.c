/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Trees from the rings (topo.h): a chain per node, a double binary tree between nodes.
 */
#include "topo/topo.h"

/* Tree t from ring `order`: each node's chain in ring order, the heads linked heap-wise over the nodes,
 * in reverse when `flip`. */
static void build(const topo_system_t *s, const int *order, int flip, topo_trees_t *trees, int t) {
  const int n = topo_ngpus(s);
  int node[TOPO_MAX_GPUS], scratch[3 * TOPO_MAX_GPUS];
  for (int g = 0; g < n; ++g) node[g] = topo_gpu_node(s, g);
  topo_ring_tree(n, order, node, flip, scratch, trees->up[t], &trees->down[t][0][0]);
}

static void add_child(int *down, int parent, int child) {
  for (int c = 0; c < TOPO_TREE_ARITY; ++c)
    if (down[parent * TOPO_TREE_ARITY + c] < 0) {
      down[parent * TOPO_TREE_ARITY + c] = child;
      return;
    }
}

void topo_ring_tree(int n, const int *order, const int *node, int flip, int *scratch, int *up, int *down) {
  int *dense = scratch, *head = scratch + n, *last = scratch + 2 * n;
  /* the nodes numbered in the order of their ids */
  for (int id = 0; id < n; ++id) dense[id] = 0;
  for (int m = 0; m < n; ++m) dense[node[m]] = 1;
  int nnodes = 0;
  for (int id = 0; id < n; ++id) dense[id] = dense[id] ? nnodes++ : -1;
  for (int k = 0; k < nnodes; ++k) head[k] = -1;
  for (int m = 0; m < n; ++m) {
    up[m] = -1;
    for (int c = 0; c < TOPO_TREE_ARITY; ++c) down[m * TOPO_TREE_ARITY + c] = -1;
  }
  /* start where the ring enters a node: after its hop from another node (at order[0] on one node) */
  int start = 0;
  for (int k = 0; k < n && nnodes > 1; ++k)
    if (node[order[k]] != node[order[(k + n - 1) % n]]) {
      start = k;
      break;
    }
  /* inside each node: the chain, in ring order from where the ring first enters it */
  for (int k = 0; k < n; ++k) {
    const int m = order[(start + k) % n], d = dense[node[m]];
    if (head[d] < 0) {
      head[d] = m;
    } else {
      up[m] = last[d];
      add_child(down, last[d], m);
    }
    last[d] = m;
  }
  /* between nodes: the chains' heads in the double binary tree over the nodes, children in place order */
  for (int d = 0; d < nnodes; ++d) {
    int parent, child[2];
    topo_dtree(nnodes, d, flip, &parent, child);
    if (parent >= 0) up[head[d]] = head[parent];
    for (int c = 0; c < 2; ++c)
      if (child[c] >= 0) add_child(down, head[d], head[child[c]]);
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
