/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's view of MPI: a small bootstrap interface (allgather, broadcast, barrier) and what the
 * engine learns through it at creation: every rank's peer info.
 * No MPI here: the glue implements the interface over the communicator (mca/coll_gpu/coll_gpu_gpupath.c),
 * tests over anything. The interface's functions return 0 or an error.
 */
#ifndef COLL_GPU_BOOTSTRAP_H
#define COLL_GPU_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int rank, size;
  void *ctx;
  /* each rank contributes `bytes` bytes; recv receives size * bytes, in rank order */
  int (*allgather)(void *ctx, const void *send, void *recv, size_t bytes);
  int (*bcast)(void *ctx, void *buf, size_t bytes, int root);
  int (*barrier)(void *ctx);
} coll_gpu_bootstrap_t;

typedef struct {
  uint64_t host; /* hash of the host name and boot id: equal on one node */
  int32_t pid;
  int32_t device;       /* CUDA ordinal, -1 when none */
  uint8_t uuid[16];     /* GPU UUID */
  char busid[32];       /* GPU PCI bus id */
  uint64_t config_hash; /* engine parameters: must be equal on every rank */
  int32_t ok;           /* this rank could take part (device set up) */
  int32_t sms;          /* multiprocessors of the GPU */
  int32_t rdma;         /* this host has an RDMA device (/sys/class/infiniband) */
} coll_gpu_peer_t;

/* This machine's identity: host name and kernel boot id, hashed. */
uint64_t coll_gpu_host_id(void);
/* Whether this host has an RDMA device (InfiniBand, RoCE: an entry under /sys/class/infiniband). */
int coll_gpu_host_has_rdma(void);

/* Allgathers `mine` into peers[0..size). */
coll_gpu_status_t coll_gpu_peers_exchange(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *mine,
                                          coll_gpu_peer_t *peers);
/* Appends " r" to the message in why for each rank r < n marked in marked[] (the ranks a wait missed). */
void coll_gpu_append_ranks(char *why, size_t len, const uint8_t *marked, int n);
/* Collective over b: whether every rank's `mine` is 0; if not, the first rank whose is not in *first_bad.
 * A failed allgather is a no for everyone. */
bool coll_gpu_all_ok(const coll_gpu_bootstrap_t *b, int mine, int *first_bad);

#ifdef __cplusplus
}
#endif
#endif
