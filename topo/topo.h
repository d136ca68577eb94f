/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The system graph of one or more nodes, built from NCCL-format topology XML (topo_xml.h), one file per
 * node: CPU (NUMA node), PCI switch, GPU, NIC port and NVSwitch nodes, and the network between nodes,
 * joined by directed links that carry a bandwidth; the path between every pair of GPUs with NCCL's path
 * types; and the ring search. No MPI, no CUDA.
 *
 * Bandwidths are in GB/s per direction, as NCCL models them: an NVLink carries 20 GB/s (20.6 from
 * sm_90), a PCIe link width x GT/s x 0.75 / 8 (24 for Gen4 x16; 24 when the file gives no speed), the
 * link between two CPUs 10 (NCCL's figure for an Intel socket interconnect), a NIC port its speed.
 */
#ifndef COLL_GPU_TOPO_H
#define COLL_GPU_TOPO_H

#include "topo/topo_xml.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TOPO_MAX_GPUS 16        /* over all nodes */
#define TOPO_MAX_RINGS 16       /* rings the search returns */
#define TOPO_SEARCH_MAX_GPUS 10 /* the search tries every ring up to this many GPUs (9! orders), then greedy */

/* NCCL's path types, best first. */
typedef enum {
  TOPO_PATH_LOC, /* the GPU itself */
  TOPO_PATH_NVL, /* NVLink, directly or through NVSwitch */
  TOPO_PATH_NVB, /* NVLink through another GPU */
  TOPO_PATH_PIX, /* PCIe through at most one switch */
  TOPO_PATH_PXB, /* PCIe through several switches, not the CPU */
  TOPO_PATH_PHB, /* PCIe through the CPU's host bridge */
  TOPO_PATH_SYS, /* across the link between CPUs */
  TOPO_PATH_NET, /* to another node, through a NIC on each side */
  TOPO_PATH_NTYPES
} topo_path_type_t;

const char *topo_path_name(topo_path_type_t t);

typedef struct topo_system topo_system_t;

typedef struct {
  topo_path_type_t type;
  double bw; /* GB/s: the narrowest link on the path */
} topo_path_t;

typedef struct {
  int nrings;
  double speed[TOPO_MAX_RINGS];             /* GB/s each ring moves */
  int order[TOPO_MAX_RINGS][TOPO_MAX_GPUS]; /* GPU indices, starting at GPU 0 */
} topo_rings_t;

/* Builds the graph of the nodes that XML trees describe, one tree per node. Returns COLL_GPU_SUCCESS, or a
 * failure (COLL_GPU_INVALID_INPUT: a tree that is not valid) with "file:line: what" in err. A GPU is a <pci> of class
 * 0x03xxxx (with or without a <gpu> child: a vendor file may give only the PCI placement), numbered in the order of the
 * files; <nvlink> targets are GPUs of the same node (by bus id) or NVSwitches (tclass 0x068000). Each <net> of a <nic>
 * is a NIC port (speed in Mb/s); each GPU takes the NIC of its node with the best path to it (path type, then
 * bandwidth, then the first in the file), and a path to a GPU of another node goes through both GPUs'
 * NICs. Several nodes need a NIC on each. */
coll_gpu_status_t topo_system_build(const topo_xml_node_t *const *roots, const char *const *files, int nroots,
                                    topo_system_t **out, char *err, size_t errlen);
void topo_system_free(topo_system_t *s);

int topo_ngpus(const topo_system_t *s);
/* How a GPU is named in output: its rank attribute, else its index. */
int topo_gpu_label(const topo_system_t *s, int gpu);
const char *topo_gpu_busid(const topo_system_t *s, int gpu);
int topo_gpu_nvlinks(const topo_system_t *s, int gpu); /* NVLinks the file gives for it */
int topo_gpu_node(const topo_system_t *s, int gpu);    /* which of the files (nodes) it is in */
/* The NIC port its network traffic takes (its <net name>), and the path type to it; NULL without NIC. */
const char *topo_gpu_nic(const topo_system_t *s, int gpu, topo_path_type_t *type);
topo_path_t topo_path(const topo_system_t *s, int from, int to);

/* Rings over all GPUs, deterministic. Up to TOPO_SEARCH_MAX_GPUS GPUs, each ring is the one with the
 * highest bandwidth left on its links (each ring uses up what it moves on every link it crosses), ties
 * going to fewer and better hops (the sum of path types), then to the first in lexicographic order;
 * above that, each ring grows greedily from GPU 0, each hop to the GPU with the most bandwidth left
 * on the way (then the better path type, then the lower index). The search stops at TOPO_MAX_RINGS,
 * or when the best ring left moves less than half the first. Returns COLL_GPU_SUCCESS, or a failure with a reason in
 * err. */
coll_gpu_status_t topo_search_rings(const topo_system_t *s, topo_rings_t *rings, char *err, size_t errlen);

#define TOPO_TREE_ARITY 3 /* NCCL's too: the next GPU of the node's chain and two other nodes */
#define TOPO_MAX_TREES (2 * TOPO_MAX_RINGS)

typedef struct {
  int ntrees;
  int up[TOPO_MAX_TREES][TOPO_MAX_GPUS];                    /* parent GPU, -1 at the root */
  int down[TOPO_MAX_TREES][TOPO_MAX_GPUS][TOPO_TREE_ARITY]; /* children, -1 for none */
} topo_trees_t;

/* Trees for the work across nodes, NCCL style: two per ring (a double binary tree), 2k and 2k + 1 from
 * ring k. Inside a node, a chain in the ring's order from the node's first GPU in the ring (the one the
 * ring enters the node through); between nodes, a binary tree over the chains' heads, heap-ordered
 * over the nodes in tree 2k and over the nodes in reverse in tree 2k + 1 (topo_dtree), so that no node is
 * inside both. With one node both trees of a ring are its chain. The rings
 * must come from topo_search_rings on s (each leaves each node once). */
void topo_search_trees(const topo_system_t *s, const topo_rings_t *rings, topo_trees_t *trees);
/* The double binary tree over `nnodes` nodes (any count from 1), the part of topo_search_trees between nodes: in tree
 * 0 node k sits at place k of a binary heap (the parent of place p is (p - 1) / 2, its children 2p + 1 and 2p + 2), in
 * tree 1 at place nnodes - 1 - k. A node inside a tree sits at a place below nnodes / 2, so no node is inside both:
 * each sends and receives for two children in one tree at most. Into *parent (-1 at the root) and child[0..1] (-1
 * for none) the neighbours of `node` in tree t (0 or 1). Each tree is ceil(log2(nnodes + 1)) levels deep. */
void topo_dtree(int nnodes, int node, int t, int *parent, int child[2]);
/* Tree `flip` (0 or 1) of one ring over any n members (a system's GPUs, a communicator's ranks), as
 * topo_search_trees builds each: members in ring order order[0..n), node[m] the node of member m (ids below n;
 * the nodes take their places in topo_dtree in the order of their ids). Each node's chain runs in ring order
 * from where the ring first enters it (from order[0] on one node). Into up[m] member m's parent (-1 at the root)
 * and down[m * TOPO_TREE_ARITY + c] its children (-1 for none, the chain's child first); scratch: 3n ints. */
void topo_ring_tree(int n, const int *order, const int *node, int flip, int *scratch, int *up, int *down);

#ifdef __cplusplus
}
#endif
#endif
