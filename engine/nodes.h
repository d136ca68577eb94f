/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A communicator's nodes, from the peer exchange (engine/bootstrap.h): which ranks share a node (a host, or a
 * virtual node of consecutive ranks of a host) and how many share a GPU. No MPI, no CUDA.
 */
#ifndef COLL_GPU_NODES_H
#define COLL_GPU_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "engine/bootstrap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch bytes the functions here and engine/rings.h's over nodes need for n ranks. */
#define COLL_GPU_NODES_SCRATCH(n) ((size_t)(n)*16)
/* Each rank's node, named by its lowest rank, into node[0..n): its host, or with virtual_nodes > 0 the block
 * of that many consecutive ranks of its host (counted among that host's ranks in rank order) it falls in.
 * Returns how many nodes there are. Time: n times the hosts. */
int coll_gpu_nodes_assign(const coll_gpu_peer_t *peers, int n, int virtual_nodes, uint16_t *node, void *scratch);
/* The most ranks on one GPU (the same host and GPU UUID): ranks that share a GPU (several a GPU, under MPS
 * or taking turns) run their kernels on its multiprocessors together. Time: n log n. */
int coll_gpu_gpu_ranks(const coll_gpu_peer_t *peers, int n, void *scratch);

#ifdef __cplusplus
}
#endif
#endif
