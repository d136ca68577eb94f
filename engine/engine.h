/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The communicator engine: what one communicator needs to run its collectives on its GPUs. Created lazily
 * and collectively (through the bootstrap interface) on the first collective that every rank passes device
 * buffers to; destroyed with the communicator. No MPI here. C++17 (engine*.cc) behind this C API; every
 * function that can fail returns a coll_gpu_status_t (common/status.h) and says why in `why`.
 *
 * The ring channels follow the rings of the topology search (engine/rings.h), computed at creation.
 * Per rank it holds one scratch allocation on the buffers' GPU, exchanged with every peer as a CUDA IPC
 * handle (kernels/kernels.h gives its layout), two streams (one for lingering one-shot kernels) and
 * host-mapped status words. Only the handles of this exchange are ever opened.
 *
 * Communicators over the same processes in the same rank order (MPI_Comm_dup, and splits that keep every
 * rank in its place) share one engine, as NCCL's communicators split with shared resources do: its
 * scratch, streams, sequence numbers and network proxy. A communicator's calls run on it only under a claim
 * (coll_gpu_engine_claim), which one communicator holds at a time: while one has calls posted for the GPUs
 * and not completed, another's calls are refused (the glue then stages them, on every rank alike through the
 * path agreement). So the engine runs one communicator's calls at a time, in the same order on every rank:
 * a call is on the GPUs only where every rank held the claim for it. The last communicator to release the
 * engine frees it.
 *
 * Over several nodes, the first communicator over a set of processes (no rank's process has an engine over
 * them yet) gets an engine of its own (coll_gpu_engine_own): while no other communicator's call runs on it,
 * the glue runs its blocking calls without agreeing on their path first (a trip between the hosts a call). A
 * rank whose buffers it cannot take as they are joins such a call through device memory of the engine's
 * (coll_gpu_engine_bounce, coll_gpu_engine_copy). Where no two communicators' calls can overlap on a rank
 * (share->own_ok: a process below MPI_THREAD_MULTIPLE), a later communicator over the same processes takes it
 * as any shared engine, where on every rank no call counts on it and its first communicator has made as many
 * calls without an agreement (coll_gpu_engine_unagreed): from then on every call on it agrees, its first
 * communicator's too. Otherwise, and with threads, later communicators share another engine.
 */
#ifndef COLL_GPU_ENGINE_H
#define COLL_GPU_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "common/status.h"
#include "common/wait.h"
#include "engine/bootstrap.h"
#include "engine/rings.h"
#include "engine/tune.h"
#include "kernels/gpu_mem.h"
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The network proxy's threads at most (proxy/proxy.h's COLL_GPU_PROXY_MAX_THREADS, which the glue does not
 * see). */
#define COLL_GPU_ENGINE_MAX_PROXY_THREADS 16
/* What the network proxy moves steps over (proxy/proxy.h's coll_gpu_proxy_net_t), or AUTO
 * (coll_gpu_net_choose). */
#define COLL_GPU_ENGINE_PROXY_NET_AUTO -1
#define COLL_GPU_ENGINE_PROXY_NET_UCX 0
#define COLL_GPU_ENGINE_PROXY_NET_SOCKETS 1

/* How the ranks of a node reach each other's scratch (engine/transport.h): AUTO, CUDA IPC where every rank's GPU has
 * peer access to those of the ranks of its node it connects to, else SHM (pinned shared host memory). */
#define COLL_GPU_ENGINE_NODE_AUTO -1
#define COLL_GPU_ENGINE_NODE_IPC 0
#define COLL_GPU_ENGINE_NODE_SHM 1

typedef struct {
  coll_gpu_tune_config_t tune;
  coll_gpu_wait_config_t wait; /* how the host waits; wait.timeout_ns is also when the kernels report a wait */
  uint64_t linger_ns;          /* how long a one-shot kernel waits on the GPU for the next call; 0: one per call */
  size_t slot_bytes;           /* ring FIFO slot */
  size_t scratch_max_bytes;    /* the most device memory of scratch per rank (0: no bound): the ring FIFOs shrink */
  coll_gpu_log_fn log;
  const char *name;            /* the communicator, for messages */
  coll_gpu_topo_config_t topo; /* where the rings come from */
  int virtual_nodes;           /* > 0: a host's ranks form nodes of this many consecutive ranks, reached through
                                  NET connections (the network proxy) as if on other hosts; 0: nodes are hosts */
  int proxy_threads;           /* the network proxy's threads; 0: the rank's share of the CPUs near its GPU */
  int proxy_net;               /* what the network proxy moves steps over: a COLL_GPU_ENGINE_PROXY_NET_* */
  const char *socket_ifname;   /* the proxy's sockets: the interfaces peers reach it on (NULL: its default) */
  size_t net_ll_bytes;         /* steps over the network of 1 to this many bytes travel as LL lines (common/ll.h;
                                  at most COLL_GPU_LL_MAX_BYTES); 0: none */
  size_t zero_copy_min_bytes;  /* inside a node, alltoall of blocks this large or larger on exportable memory goes
                                  straight from the send buffer into the peers' receive buffers; 0: never */
  size_t zero_copy_map_bytes;  /* the bound of the peers' allocations mapped here for it (engine/ipc_cache.h) */
  size_t zero_copy_engines_min_bytes; /* of 2 ranks, a zero-copy call whose largest block is this large or larger
                                         moves the peer's block by copy engines; 0: never (engine/zero_copy.h) */
  int node_transport;                 /* how a node's ranks reach each other: a COLL_GPU_ENGINE_NODE_* */
} coll_gpu_engine_config_t;

typedef struct coll_gpu_engine coll_gpu_engine_t;

/* What the network proxy of a communicator over several nodes moves steps over (a
 * COLL_GPU_ENGINE_PROXY_NET_* but AUTO), as NCCL chooses its transport: `param` where it is not AUTO;
 * otherwise UCX where a rank's host has an RDMA device (any_rdma: UCX's InfiniBand transports, zero-copy)
 * or the nodes are virtual (virtual_nodes > 0: UCX's shared memory on one host), and the proxy's own
 * sockets otherwise (NCCL's socket transport; faster than UCX's tcp). The same on every rank. */
int coll_gpu_net_choose(int param, int any_rdma, int virtual_nodes);
/* Whether a call of coll of nranks ranks on one node with blocks of `bytes` (a reduce-scatter: its largest block) goes
 * zero-copy where it can (from coll_gpu_zero_copy_min_bytes, which the caller checks), rather than through the FIFOs:
 * the moves straight into the peers' receive buffers, a reduce-scatter reading the peers' send buffers. Where it was
 * measured faster than the FIFO path (docs/benchmarks.md, 2 and 4 H200): an alltoall of up to COLL_GPU_MAX_DIRECT
 * ranks at any size; an allgather of 2 at any size (0.84-0.91x the ring's time from 1 to 256 MiB), of more up to 8 MiB
 * (3 and 4 ranks: 0.79-0.94x; at 4, 1.03-1.06x at 32 and 64 MiB, where each rank's block goes to every peer from its
 * own SMs); a bcast of 2 (with more a root would send its buffer to every peer, where the ring sends it once); a
 * reduce-scatter of 2 up to 64 MiB (0.89-0.97x), of more up to 4 MiB (3 and 4 ranks: 0.85-0.97x; at 4, 1.03-1.08x from
 * 16 to 128 MiB, where every rank's loads from its peers take longer than the ring's stores). The same on every
 * rank. */
int coll_gpu_zero_copy_wins(coll_gpu_coll_t coll, int nranks, size_t bytes);

/* What a communicator brings to an engine it may share. */
typedef struct {
  uint64_t members; /* its processes in rank order, hashed; 0: it shares no engine (one of its own, never offered) */
  uint32_t owner;   /* the communicator, by a number of its own in this process (not 0): the claims below are its */
  uint64_t claims;  /* its calls that count on the engine from the start (the creating call among them) */
  int own_ok;       /* no call of another communicator's can overlap one of this one's on a rank (below
                       MPI_THREAD_MULTIPLE): another communicator's engine of its own may be offered too */
} coll_gpu_engine_share_t;

/* Collective over b. On COLL_GPU_UNAVAILABLE (its only failure) every rank got the same answer; why holds
 * the reason. `mem` is the classification of the first buffer: the engine lives on its device. First every
 * rank offers an engine of this process that serves the same members in the same place, on the same device
 * with the same parameters, and that no communicator has claimed: when every rank offers the same one, the
 * communicator takes a reference to it (claimed share->claims times for share->owner) instead of a new one.
 * Otherwise a new engine is made, claimed the same way. */
coll_gpu_status_t coll_gpu_engine_create(const coll_gpu_bootstrap_t *b, const coll_gpu_engine_config_t *cfg,
                                         const coll_gpu_meminfo_t *mem, const coll_gpu_engine_share_t *share,
                                         coll_gpu_engine_t **out, char *why, size_t why_len);
/* A communicator's reference goes; the last one frees the engine. */
void coll_gpu_engine_release(coll_gpu_engine_t *e);
/* One more call of `owner` that counts on the engine: 1 when no other communicator holds a claim on it and it
 * has not failed; 0 otherwise (nothing claimed). Thread-safe, as is unclaim. */
int coll_gpu_engine_claim(coll_gpu_engine_t *e, uint32_t owner);
/* One of owner's claims ends (its call completed, or will not run on the GPUs). */
void coll_gpu_engine_unclaim(coll_gpu_engine_t *e, uint32_t owner);
/* The communicators that hold a reference to the engine. */
int coll_gpu_engine_refs(const coll_gpu_engine_t *e);
/* Whether the engine is its communicator's own and no other communicator has taken it (engine.h above): the
 * same answer on every rank before the same call of its communicator. */
int coll_gpu_engine_own(const coll_gpu_engine_t *e);
/* Before a blocking call of the communicator that made e: whether the call may run without a path agreement
 * (coll_gpu_engine_own); counted when it may. */
int coll_gpu_engine_unagreed(coll_gpu_engine_t *e);
/* Device memory of the engine's, at least `bytes`, for a rank that joins a call through it (and a call in place that
 * runs from a copy): kept for the next call (grown as needed, on an idle engine), freed with the engine. */
coll_gpu_status_t coll_gpu_engine_bounce(coll_gpu_engine_t *e, size_t bytes, void **dev, char *why, size_t len);
/* Copies `bytes` between any two of host, device and managed memory, in the engine's context; returns once
 * the copy is complete (ordered after the work on the legacy default stream). */
coll_gpu_status_t coll_gpu_engine_copy(coll_gpu_engine_t *e, void *dst, const void *src, size_t bytes, char *why,
                                       size_t len);
/* Whether buffer memory `mem` can go through this engine (its device and context). */
int coll_gpu_engine_owns(const coll_gpu_engine_t *e, const coll_gpu_meminfo_t *mem);
/* One collective's arguments:
 *   allreduce: count elements of sendbuf, reduced over every rank into recvbuf (sendbuf may be recvbuf);
 *   reduce: the same into recvbuf at root (recvbuf is not touched elsewhere: NULL there);
 *   reduce-scatter: sendbuf holds the ranks' blocks in rank order, counts[q] elements for rank q, or with
 *     counts NULL `count` elements each; this rank's block, reduced over every rank, lands in recvbuf.
 *     sendbuf may be recvbuf (MPI_IN_PLACE): of equal counts block 0 is then overwritten with the result; of
 *     unequal ones the input is first copied into device memory of the engine's (coll_gpu_engine_bounce's;
 *     started, by a copy queued before the call's kernels), and the call reduces from there. Beyond COLL_GPU_MAX_DIRECT
 * ranks counts must be NULL; bcast: count bytes of recvbuf at root to recvbuf everywhere (sendbuf: recvbuf); allgather:
 * count bytes of sendbuf to block r of every recvbuf (n blocks; sendbuf may be recvbuf's block r); alltoall: block q of
 * sendbuf (count bytes) to block r of rank q's recvbuf. Its Simple algorithm ("ring") goes around the ring with 2 ranks
 * and pairwise over point-to-point connections with more, up to COLL_GPU_MAX_DIRECT ranks (beyond, no alltoall runs on
 * the GPUs). In place (sendbuf is recvbuf; every rank alike) recvbuf is first copied into device memory of the engine's
 * (coll_gpu_engine_bounce's; started, by a copy queued before the call's kernels), which the call then sends from: no
 * peer writes into a rank's recvbuf before that rank's kernel has begun, after the copy; allgather and alltoall with
 * counts (v not NULL: MPI_Allgatherv, MPI_Alltoallv, and MPI_Gather(v) and MPI_Scatter(v) as alltoalls whose blocks are
 * empty but to or from the root; coll_gpu_engine_run and coll_gpu_engine_start_counted, on one node of at most
 * COLL_GPU_MAX_DIRECT ranks, count unused): v->send[q] of sendbuf to rank q, whose recvbuf takes it where its
 * v->recv[r] says (an allgatherv sends the same bytes to every rank; in place, sendbuf is recvbuf + v->recv[r].displ).
 * They go zero-copy, straight into the peers' receive buffers; where some rank's cannot be mapped, the call returns
 * COLL_GPU_UNAVAILABLE on every rank, having moved nothing. Bytes a sender sends that its receiver does not take as
 * many of (an erroneous program) move as far as both allow, and the sender's and that receiver's calls fail with
 * COLL_GPU_MISMATCH. type and op: the reductions'. root: bcast's and reduce's. How the engine runs a call depends on
 * its buffers only through whether a reduce-scatter's result overlaps its input (in place, or not): every rank must
 * pass that alike, as MPI_IN_PLACE is. */
typedef struct {
  size_t displ, bytes; /* a block of a buffer: from displ on, in bytes */
} coll_gpu_vblock_t;
typedef struct {
  coll_gpu_vblock_t send[COLL_GPU_MAX_DIRECT]; /* of sendbuf, for rank q */
  coll_gpu_vblock_t recv[COLL_GPU_MAX_DIRECT]; /* of recvbuf, from rank q */
  const char *call;                            /* the MPI function, for messages; NULL: by coll */
} coll_gpu_vlayout_t;
typedef struct {
  coll_gpu_coll_t coll;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  const size_t *counts; /* reduce-scatter: a count per rank, or NULL (equal blocks of `count`) */
  coll_gpu_dtype_t type;
  coll_gpu_redop_t op;
  int root;
  const coll_gpu_vlayout_t *v; /* allgather and alltoall with counts, or NULL */
} coll_gpu_args_t;

/* One collective on the GPUs; returns when recvbuf holds the result. Late peers are waited for as long
 * as their processes exist (a watchdog line through cfg->log after cfg->wait.timeout_ns names them); when
 * one is gone, the kernels are aborted and the call fails naming it (COLL_GPU_PEER_GONE); a CUDA failure
 * is COLL_GPU_CUDA_ERROR. After a failure the engine must not be used again: it refuses every claim. */
coll_gpu_status_t coll_gpu_engine_run(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len);

/* The same in steps, for calls that complete later (nonblocking and persistent collectives). One call is on
 * the GPUs at a time: coll_gpu_engine_start needs an idle engine (coll_gpu_engine_idle), and so does
 * coll_gpu_engine_run. Start queues every part of the call on the GPUs and returns; the buffers must stay
 * as they are until the call completes. */
coll_gpu_status_t coll_gpu_engine_start(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len);
/* A call with counts (args->v), or a move of equal blocks that goes zero-copy (coll_gpu_zero_copy_wins),
 * that completes later: coll_gpu_engine_start's counterpart, in steps that never wait for a peer. Each call moves the
 * zero-copy exchange of coll_gpu_engine_run's on as far as the peers' messages allow and returns with *done 0 while one
 * is still to come; the caller calls again with the same args (every 100 ms of the wait the late ranks' processes are
 * checked, and after cfg->wait.timeout_ns the watchdog line is written once). With *done 1: COLL_GPU_SUCCESS, the call
 * is on the GPUs and completes through coll_gpu_engine_test (COLL_GPU_MISMATCH there, the engine kept, where the ranks'
 * counts disagree, as coll_gpu_engine_run says); COLL_GPU_UNAVAILABLE on every rank alike, nothing moved, where it
 * cannot be zero-copy (such a move then goes through coll_gpu_engine_start); otherwise it failed (a peer
 * gone: COLL_GPU_PEER_GONE). It begins on an idle engine, which is not idle from then until the call has completed. */
coll_gpu_status_t coll_gpu_engine_start_counted(coll_gpu_engine_t *e, const coll_gpu_args_t *args, int *done, char *why,
                                                size_t why_len);
/* Whether no call is on the GPUs nor on its way there (coll_gpu_engine_start_counted). */
int coll_gpu_engine_idle(const coll_gpu_engine_t *e);
/* Whether the started call has completed (*done; 1 also when none was started), without waiting: a few
 * host-memory reads. Every 100 ms of a pending call it checks the peers' processes, and ends a call a gone
 * peer holds up as coll_gpu_engine_run does (waiting for the aborted kernels); after cfg->wait.timeout_ns it
 * writes the watchdog line once. */
coll_gpu_status_t coll_gpu_engine_test(coll_gpu_engine_t *e, int *done, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
