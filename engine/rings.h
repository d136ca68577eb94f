/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The rings of a communicator's GPU collectives, from the topology (topo/). Collective over the bootstrap:
 *   1. each rank describes its node: the probe (hwloc + NVML), or the topology file completed with
 *      NVML's links; the description is cached per process;
 *   2. the descriptions are allgathered and merged in rank order (topo_xml_merge), so that every rank
 *      holds the same tree, byte for byte;
 *   3. each rank's GPU (by PCI bus id) gets its rank attribute; rank 0 writes the tree to the dump file;
 *   4. the ring search runs over the communicator's GPUs only; each ring becomes an order of ranks;
 *   5. a hash of the rings is allgathered: if any rank found others, every rank uses rank order.
 * The same bytes give the same rings on every rank; step 5 guards against what could still differ (a
 * rank out of memory). A communicator of more than COLL_GPU_MAX_DIRECT ranks makes step 1 only (the proxy
 * places its threads by it) and takes one ring in rank order: exchanging every rank's description would
 * cost each rank the whole job's topology. With several nodes, coll_gpu_rings_by_node then makes any ring
 * visit the nodes in turn. No MPI, no CUDA.
 */
#ifndef COLL_GPU_RINGS_H
#define COLL_GPU_RINGS_H

#include <stdint.h>

#include "common/log.h"
#include "common/status.h"
#include "engine/bootstrap.h"
#include "engine/nodes.h"
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *file;      /* NCCL-format topology of this node, instead of the probe; NULL or "" for none */
  const char *dump_file; /* where rank 0 writes the merged topology; NULL or "" for nowhere */
  coll_gpu_log_fn log;   /* INFO TOPO lines; may be NULL */
  /* a problem the user should fix (a file that cannot be read or written): always shown; may be NULL */
  void (*warn)(const char *what);
  const char *name; /* the communicator, for messages */
} coll_gpu_topo_config_t;

typedef struct {
  int nrings, n;   /* rings, of n ranks each */
  int span;        /* channel c runs ring (c / span) mod nrings (kernels/partition.h); 1 but across nodes */
  double speed;    /* GB/s of the first ring, 0 for rank order */
  uint16_t *order; /* order[i * n + k]: the rank at position k of ring i (coll_gpu_ring), room for
                      COLL_GPU_MAX_RINGS rings (coll_gpu_rings_alloc) */
} coll_gpu_rings_t;

/* Ring i's ranks in order. */
static inline uint16_t *coll_gpu_ring(const coll_gpu_rings_t *rings, int i) {
  return rings->order + (size_t)i * rings->n;
}
/* Room for the rings of n ranks, which then are one ring in rank order: 0, or COLL_GPU_SYSTEM_ERROR out of
 * memory (rings then hold none). Allocated before the collective steps, so that no step fails on one rank
 * alone. */
coll_gpu_status_t coll_gpu_rings_alloc(coll_gpu_rings_t *rings, int n);
/* One ring in rank order, span 1. */
void coll_gpu_rings_rank_order(coll_gpu_rings_t *rings);
/* Frees the orders; rings then hold none. */
void coll_gpu_rings_free(coll_gpu_rings_t *rings);

/* Collective over b; peers[r].busid is rank r's GPU; rings allocated for b->size ranks. Always fills rings:
 * the searched ones, or one ring in rank order when the topology cannot place every rank's GPU or the
 * communicator has more than COLL_GPU_MAX_DIRECT ranks (then the reason is in why, the same on every rank).
 * Fails only when a bootstrap call failed (COLL_GPU_BOOTSTRAP_ERROR, why says so). */
coll_gpu_status_t coll_gpu_rings_compute(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *peers,
                                         const coll_gpu_topo_config_t *cfg, coll_gpu_rings_t *rings, char *why,
                                         size_t why_len);

/* The CPUs near GPU `busid` (the <cpu> it hangs from in this process's view of its node, the one the last
 * coll_gpu_rings_compute described), into cpus[], at most max of them, in increasing order. Returns how
 * many: none where the view does not place the GPU or says nothing of its CPUs. */
int coll_gpu_near_cpus(const char *busid, int *cpus, int max);
/* The NIC port nearest GPU `busid` in that view among those take(name, ctx) accepts (topo_xml_gpu_net), its name
 * into name[0..name_len) ("" where there is none) and the CPUs near it into cpus[], at most max of them. Returns
 * how many CPUs: none where the view has no such port or says nothing of its CPUs. */
int coll_gpu_near_net(const char *busid, int (*take)(const char *name, void *ctx), void *ctx, char *name,
                      size_t name_len, int *cpus, int max);
/* With several nodes: reorders each ring to visit the nodes one after another, in the order it first reaches
 * them, keeping its order inside each node, so that it crosses between nodes once per node. Time: n times
 * the nodes. */
void coll_gpu_rings_by_node(coll_gpu_rings_t *rings, const uint16_t *node, void *scratch);
/* With several nodes, after coll_gpu_rings_by_node: makes the ranks of each node start the rings in turn,
 * as many turns as the largest node has ranks but at most most_turns (and COLL_GPU_MAX_RINGS rings, fewer
 * base rings if need be): ring j is base ring j / turns with each node's run of ranks turned left by j mod
 * turns (mod its length). So the first `turns` ranks of a node's run on a base ring each start the run on
 * some ring, and each of the run's last rank and its first turns - 1 ends it on one: a bcast from such a
 * rank, or a reduce to it (rank 0 at 2 turns, where it starts its node's run), finds rings whose chain
 * crosses between nodes once per node (coll_gpu_rings_chain), and the hops between nodes fall on several
 * ranks of a node. With a turn per rank, every rank. Inside a node a turned ring keeps its order as a cycle.
 * Nothing when no node has 2 ranks, one node has them all, or most_turns is below 2. Returns the turns (1
 * for nothing). Time: n times the rings. */
int coll_gpu_rings_rotate_nodes(coll_gpu_rings_t *rings, const uint16_t *node, int most_turns, void *scratch);
/* The rings whose chain for a bcast from `root` or a reduce to it crosses between nodes once per node on
 * rings that visit the nodes in turn (the root is its node's first on the ring for a bcast, its last for a
 * reduce), as a mask for coll_gpu_work_t's rings; 0 (every ring) where every ring or none qualifies, and for
 * the other collectives. Time: n times the rings. */
unsigned coll_gpu_rings_chain(const coll_gpu_rings_t *rings, const uint16_t *node, coll_gpu_coll_t coll, int root);
/* Where an allgather can send each rank's block into every other node once, and a reduce-scatter reduce it
 * entering every node once: the ranks of each node's run on every ring (k, at least 2), where every ring is
 * made of runs of k ranks of one node from its first position on, there are k rings, and every rank starts
 * its node's run on one of them and ends it on one of them (as coll_gpu_rings_rotate_nodes with a turn per
 * rank of one base ring makes them; with more than 2 ranks a node the first does not give the second); 0
 * otherwise. On ring t the blocks of the ranks that start their node's run there go round from rank to rank,
 * n - 1 hops each (allgather), and those of the ranks that end it are reduced along n - 1 hops into them
 * (reduce-scatter): so every block crosses into each other node once (2 hosts x 2: half the bytes between the
 * nodes each way, where the plain ring moves three quarters), the ranks of a node take turns at sending into
 * the next, and each rank moves `nodes` blocks a ring, not n.
 * scratch: COLL_GPU_NODES_SCRATCH. Time: n times the rings. */
int coll_gpu_rings_run_turns(const coll_gpu_rings_t *rings, const uint16_t *node, void *scratch);
/* The double binary tree across nodes as `rank` of n (rings->n) takes part in it, where the tree allreduce runs (3 to
 * COLL_GPU_MAX_DIRECT ranks, the point-to-point connections'): topo_ring_tree over ring 0 (each node's chain in its
 * order, the nodes in the order of their lowest ranks), trees 0 and 1. Into up[t] the rank's parent in tree t (-1 at
 * the root) and into down[t] its children (-1 for none, after the others); returns 1, or 0 for another rank count
 * (up and down then -1 throughout). Time: n. */
int coll_gpu_rings_trees(const coll_gpu_rings_t *rings, const uint16_t *node, int rank, int up[COLL_GPU_TREES],
                         int down[COLL_GPU_TREES][COLL_GPU_TREE_ARITY]);
/* Whether a call of `coll` (bcast and reduce: from or to `root`) moves data over `rank`'s hops to other
 * nodes on `ring` (n ranks in ring order; node[r] each rank's node, as coll_gpu_nodes_assign gives). The
 * chains of bcast and reduce leave one hop of the ring idle (the one into a bcast's root, the one out of a
 * reduce's), so a rank whose hop to or from another node is only that one moves nothing over the network;
 * every other ring collective moves every hop. Time: n. */
int coll_gpu_ring_moves_net(const uint16_t *ring, int n, const uint16_t *node, int rank, coll_gpu_coll_t coll,
                            int root);

#ifdef __cplusplus
}
#endif
#endif
