/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The GPU collective kernels: a plain C launch interface (no MPI, no CUDA types) over the algorithms in
 * kernels/ (allreduce_*, move.cu, reduce.cuh). Every function that can fail returns the project's status, the reason
 * of a failure in coll_gpu_kernels_error (kernels/error.h).
 *
 * Memory each rank exposes to its peers through CUDA IPC (one allocation, coll_gpu_scratch_bytes; with the SHM
 * transport, pinned shared host memory mapped into every peer's GPU instead, engine/transport.h):
 *   flags: per-sender step counters and per-sender one-shot/two-shot flags
 *   steps: each ring channel's step counters (read and written by this rank's kernels only)
 *   ll:    one-shot LL lines, [parity][sender][line]
 *   simple: two-shot slots, [parity][region][bytes]
 *   fifo:  ring step FIFOs, [channel][slot][bytes]
 *   conns: the ring channels and point-to-point connections as this rank's kernels see them
 *          (coll_gpu_dev_conns_t; this rank's only)
 *   rings: the ring orders, [ring][position] = rank, 16-bit (this rank's only)
 *   p2p:   with more than 2 ranks, point-to-point flags, step counters and FIFOs, [sender][connection][slot]
 * With more than COLL_GPU_MAX_DIRECT ranks only the ring parts are there (flags of the ring channels, steps,
 * fifo, conns, rings): the scratch grows with the ring orders' 2 bytes a rank and nothing else.
 * Peers write into each other's memory (push); every wait polls local memory only. The connections and
 * the point-to-point parts come after the ring FIFOs, so the regions before them sit where they did
 * before those existed. In a first version the whole communicator sat before the one-shot lines, moving
 * every region after it by 5 KiB, and kernels read it through a pointer: the ring reduce-scatter then ran
 * 17% slower at 32 MiB per rank on one H100 (coll_gpu_kernel_bench -C reduce_scatter -a ring -n 2: 318
 * -> 373 us) while the other rings did not change. With the connections last and the rest passed by
 * value it runs at its old speed; which of the two changes mattered was not isolated.
 */
#ifndef COLL_GPU_KERNELS_KERNELS_H
#define COLL_GPU_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "common/colls.h"
#include "kernels/error.h"
#include "kernels/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ranks the direct algorithms serve (one-shot, two-shot, the pairwise alltoall): each rank maps every peer's
 * scratch and keeps flags per peer, for one node's GPUs (the NVSwitch nodes this targets have 8). A larger
 * communicator runs the ring algorithms only, each rank connected to its rings' neighbours. */
#define COLL_GPU_MAX_DIRECT 8
/* Ranks of a communicator on the GPU path at most: ring positions are 16-bit. */
#define COLL_GPU_MAX_COMM_RANKS 32768
#define COLL_GPU_MAX_CHANNELS 128 /* ring channels, one block each: 128 of an H200's 132 SMs */
#define COLL_GPU_MAX_RINGS 16     /* distinct ring orders (topo/ finds at most 16) */

/* Size in bytes of one element (the MPI extent of the pair types), 0 for an unknown type. */
size_t coll_gpu_dtype_size(coll_gpu_dtype_t type);
/* Whether the kernels implement op on type (the pairs MPI allows). */
int coll_gpu_op_supported(coll_gpu_dtype_t type, coll_gpu_redop_t op);
/* The same reduction on host memory: dst[i] = a[i] op b[i] (dst may alias a or b), COLL_GPU_INVALID_INPUT for a pair
 * the kernels do not implement. For tests. */
coll_gpu_status_t coll_gpu_reduce_host(coll_gpu_dtype_t type, coll_gpu_redop_t op, void *dst, const void *a,
                                       const void *b, size_t count);

/* Sizes of the shared scratch, fixed when the engine is created. */
typedef struct {
  int nranks;
  size_t ll_bytes;      /* largest one-shot message */
  size_t twoshot_bytes; /* largest two-shot message */
  size_t slot_bytes;    /* one ring FIFO slot */
  int nchannels;        /* ring channels allocated */
} coll_gpu_scratch_layout_t;

/* Ring FIFO depth per channel (NCCL_STEPS in NCCL). */
#define COLL_GPU_RING_SLOTS 8

/* Bytes of the IPC-shared scratch for a layout, and the offsets of its parts. */
size_t coll_gpu_scratch_bytes(const coll_gpu_scratch_layout_t *l);

/* Host-mapped words between the host and the kernels.
 *
 * A lingering one-shot kernel (coll_gpu_linger_launch) stays on the GPU after its call and takes the
 * next ones from `call`, so they need no launch (the direct calls of every collective). The host writes a
 * call as COLL_GPU_LINGER_WORDS words in one cache line, each holding 32 bits of the call next to the call's
 * ticket (1, 2, ... skipping 0), so one read of the line tells whether all of it is there (LL, as in the kernels' own
 * lines). Block 0 of the kernel polls it; when it has waited linger_ns it writes its instance into `leaving`, fences,
 * and reads `call` once more: a call it finds then is served, and the kernel exits after it. The host, after writing a
 * call, fences and reads `leaving`: if it does not name the kernel, the kernel will see the call. If it
 * does, the host waits for `exited` to name the kernel; done[0] then tells whether the call was served.
 * Both sides store, fence, then load, so at least one of them sees the other's store: no call is lost. A
 * kernel takes tickets above those of every kernel before it on this engine, the ticket an exited kernel
 * waited for included. Before it launches a ring or two-shot kernel, the host writes the order to exit
 * under the next ticket instead (coll_gpu_linger_stop), so that the multiprocessors are free. */
#define COLL_GPU_LINGER_WORDS 16
typedef struct {
  volatile uint64_t done[COLL_GPU_MAX_CHANNELS * 2]; /* block b writes the call's seq when it finishes */
  volatile uint32_t error;                           /* COLL_GPU_KERR_*: set when the host aborted a wait */
  volatile uint32_t waited; /* 1: some wait passed timeout_ns (the ranks: coll_gpu_dev_comm_t's waiting) */
  volatile uint32_t abort;  /* host: nonzero ends every wait of the kernels */
  volatile uint64_t leaving __attribute__((aligned(128))); /* kernel: the instance that stopped polling */
  volatile uint64_t exited;                                /* kernel: the instance that exits */
  volatile uint64_t call[COLL_GPU_LINGER_WORDS] __attribute__((aligned(128))); /* host: ticket << 32 | 32 bits */
} coll_gpu_dev_status_t;

/* Late is not dead: the kernels never give up a wait on their own. A wait that lasts timeout_ns sets
 * waiting[peer] and waited for the host's watchdog message and keeps polling; only the host ends it, by setting
 * abort (NCCL's abort flag), when it has found a peer dead. An aborted wait sets error, and its block
 * finishes the call without a result (done is still written). */
enum { COLL_GPU_KERR_NONE = 0, COLL_GPU_KERR_ABORTED = 1 };

/* One direction of a ring channel or of a point-to-point pair of ranks (NCCL's connection): the receiver's FIFO of
 * COLL_GPU_RING_SLOTS slots, the receiver's tail (the steps the sender posted) and the sender's head (the
 * slots the receiver freed). The sender and the receiver each hold the same three addresses, as mapped in
 * their own process. The ring and pairwise kernels reach a peer through these only, so that a connection whose FIFO
 * lies in host memory that a proxy moves between nodes can stand in for one in a peer GPU's memory. */
typedef struct {
  char *buff;
  uint64_t *tail;
  uint64_t *head;
  uint64_t *sizes; /* NET: [COLL_GPU_RING_SLOTS] bytes of each step, written by the sender before its tail (the
                      proxy sends that many); NULL between GPUs, where a step's size needs no telling */
  char *ll;        /* NET: the FIFO's LL slots (common/ll.h), in which steps of 1 to ll_bytes bytes travel as LL
                      lines instead of in the slot behind a tail; NULL: none (between GPUs, or LL off) */
  size_t ll_bytes;
} coll_gpu_conn_t;

/* One ring channel as a rank's kernels see it. */
typedef struct {
  int pos, prev, next;        /* my position in the ring, and my neighbours there */
  const uint16_t *ring;       /* the ranks in ring order (nranks of them), in my scratch */
  coll_gpu_conn_t send, recv; /* to next, from prev */
  uint64_t *steps;            /* in my scratch: [0] steps sent on `send`, [1] received on `recv`; a kernel reads them
                                 when it starts and saves them when it ends */
} coll_gpu_dev_channel_t;

/* Point-to-point connections to one peer (the alltoall of more than 2 ranks): COLL_GPU_P2P_CONNS each way,
 * each with its FIFO of COLL_GPU_RING_SLOTS slots of COLL_GPU_P2P_SLOT_BYTES in the receiver's scratch, so
 * each rank holds ranks x 4 x 8 x 64 KiB of them (one sender's unused, for plain indexing): 16 MiB at 8. */
#define COLL_GPU_P2P_CONNS 4
#define COLL_GPU_P2P_SLOT_BYTES (64 << 10)
typedef struct {
  coll_gpu_conn_t send[COLL_GPU_P2P_CONNS], recv[COLL_GPU_P2P_CONNS];
  uint64_t *steps[COLL_GPU_P2P_CONNS]; /* in my scratch: [0] steps sent on send[c], [1] received on recv[c] */
} coll_gpu_dev_peer_t;

/* Every connection of a rank's kernels, set up once and uploaded into its scratch. */
typedef struct {
  coll_gpu_dev_channel_t channels[COLL_GPU_MAX_CHANNELS]; /* layout.nchannels of them are set up */
  coll_gpu_dev_peer_t peers[COLL_GPU_MAX_DIRECT];         /* with 3 to COLL_GPU_MAX_DIRECT ranks; peers[rank] unused */
} coll_gpu_dev_conns_t;

/* The communicator as its kernels see it (NCCL's DevComm), set up once when the engine is created
 * (coll_gpu_dev_comm_setup): every launch passes it by value next to the call's work, so a kernel reads it
 * from its parameters without a memory round trip before its first store; the connections (the ring
 * channels' and the point-to-point ones, with their saved step counters) live in this rank's scratch
 * (coll_gpu_dev_comm_upload), where only the kernels that use them read them, once per block. The direct algorithms
 * (one-shot, two-shot) write straight into every peer's slots, so they reach the peers' scratch as mapped here: they
 * serve one node's GPUs. */
typedef struct {
  int rank, nranks;
  coll_gpu_scratch_layout_t layout;
  void *peer_scratch[COLL_GPU_MAX_DIRECT]; /* direct: every rank's scratch as mapped here; [rank] is our own */
  coll_gpu_dev_status_t *status;           /* host-mapped, as a device pointer */
  volatile uint8_t *waiting; /* host-mapped, nranks bytes: 1 where a wait for that rank passed timeout_ns */
  uint64_t timeout_ns;       /* a wait this long is reported in status->waiting */
  uint64_t linger_ns;        /* how long a lingering one-shot kernel polls for the next call after one */
  int max_blocks;            /* 0: any; else the most blocks a one-shot (LL) kernel takes: where ranks share a GPU,
                                all their blocks must run at once (engine/tune.h's max_blocks) */
  const coll_gpu_dev_channel_t *channels; /* in our scratch: coll_gpu_dev_conns_t */
  int nrings, span;                       /* channel c runs ring (c / span) mod nrings (kernels/partition.h) */
  const coll_gpu_dev_peer_t *peers;
  int direct; /* 1: every peer's scratch is mapped (one node of at most COLL_GPU_MAX_DIRECT ranks); 0: some peers
                 are reached through NET connections or not at all, and only the ring and point-to-point
                 connections are used */
} coll_gpu_dev_comm_t;

/* Fills comm and the channels of its connections (host memory) for rank `rank` of `nranks`: each ring
 * channel's neighbours and position from the ring orders rings[i * nranks + position] (channel c runs ring
 * (c / span) mod nrings, span at least 1), and the step counters in this rank's scratch (peer_scratch[rank]). The
 * connections themselves are left empty: each transport fills those of the peers it reaches (coll_gpu_dev_ipc_conns for
 * peers whose scratch is mapped here, the engine's NET for ranks of other nodes) before the upload.
 * peer_scratch[0..nranks): every rank's scratch as mapped here, NULL where not; the communicator is direct
 * where it has at most COLL_GPU_MAX_DIRECT ranks and every peer's scratch is mapped. waiting: the device
 * view of nranks host-mapped bytes. COLL_GPU_INTERNAL_ERROR for a rank count, channel count, span or ring out of
 * range. */
coll_gpu_status_t coll_gpu_dev_comm_setup(coll_gpu_dev_comm_t *comm, coll_gpu_dev_conns_t *conns, int rank, int nranks,
                                          const coll_gpu_scratch_layout_t *layout, void *const *peer_scratch,
                                          int nrings, int span, const uint16_t *rings, coll_gpu_dev_status_t *status,
                                          volatile uint8_t *waiting, uint64_t timeout_ns, uint64_t linger_ns);
/* The IPC and SHM transports' connections: to and from every peer whose scratch is mapped here (peer_scratch[q] not
 * NULL), into its FIFOs and flags and ours, on the ring channels and (with 3 to COLL_GPU_MAX_DIRECT ranks)
 * point to point; the others are left as they are. After coll_gpu_dev_comm_setup. */
void coll_gpu_dev_ipc_conns(const coll_gpu_dev_comm_t *comm, coll_gpu_dev_conns_t *conns, void *const *peer_scratch);
/* Copies the connections and the ring orders (as given to coll_gpu_dev_comm_setup) to where comm finds them,
 * in the current device's context; returns once they are there. */
coll_gpu_status_t coll_gpu_dev_comm_upload(const coll_gpu_dev_comm_t *comm, const coll_gpu_dev_conns_t *conns,
                                           int nrings, const uint16_t *rings);

/* The zero-copy moves' parts of each block, a kernel block each (at most). */
#define COLL_GPU_ZC_PARTS 16
/* One block of a zero-copy call: `bytes` from src to dst. A move: from this rank's memory to a peer's receive buffer
 * as mapped here, or this rank's own; a reduce-scatter: from a peer's send buffer as mapped here (or this rank's own),
 * reduced into this rank's receive buffer. */
typedef struct {
  const void *src;
  void *dst;
  size_t bytes;
} coll_gpu_zc_t;

/* The tree allreduce across nodes (kernels/allreduce_tree.cuh): two trees, each node's rank with a parent and at most
 * COLL_GPU_TREE_ARITY children in each (the next rank of its node's chain and two other nodes' heads, as NCCL's). */
#define COLL_GPU_TREES 2
#define COLL_GPU_TREE_ARITY 3

/* One call (NCCL's work descriptor): what the host hands the kernels per call, next to the communicator. */
typedef struct {
  coll_gpu_coll_t coll;
  coll_gpu_algo_t algo;
  coll_gpu_dtype_t type;
  coll_gpu_redop_t op;
  int root;       /* bcast, reduce */
  int nchannels;  /* ring and two-shot: blocks */
  unsigned rings; /* ring: the rings whose channels run the call, a mask (kernels/partition.h's
                     coll_gpu_work_channel); 0: every ring */
  int run;        /* ring allgather and reduce-scatter across nodes: 0, or the ranks of every node's run on
                     every ring (the rings taking turns, engine/rings.h's coll_gpu_rings_run_turns): a rank's
                     block then travels only on the ring where it starts its node's run (allgather) or ends it
                     (reduce-scatter), split among that ring's blocks, and enters each other node once */
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  size_t block; /* allgather and alltoall: bytes from one rank's block to the next in the buffers */
  size_t chunk; /* ring: bytes per step, a multiple of 16 up to the layout's slot_bytes; 0: a whole slot */
  uint64_t seq; /* call number on this communicator, from 1; the same on every rank */
  /* a lingering one-shot kernel */
  uint64_t instance; /* this launch, from 1, for status->leaving and status->exited; 0: a kernel of one call */
  uint32_t ticket;   /* the ticket of the first call it takes from status->call */
  coll_gpu_range_t blocks[COLL_GPU_MAX_DIRECT]; /* reduce-scatter: rank q's elements of sendbuf */
  size_t each; /* reduce-scatter of more than COLL_GPU_MAX_DIRECT ranks (equal blocks): rank q's elements of
                  sendbuf are [q * each, q * each + count), blocks unused; 0 otherwise */
  /* the zero-copy calls (one node): zc_parts > 0 runs the zero-copy kernel; a move: each rank's block in zc_parts
     parts (the same on every rank), zc[q] what this rank writes into rank q's receive buffer (mapped here), zc[rank]
     its own copy; a reduce-scatter: this rank's block in nranks x zc_parts parts, zc[q] that block of rank q's send
     buffer (mapped here), zc[rank] of its own, each into recvbuf; 0: the algorithm's kernel */
  int zc_parts;
  int zc_engines; /* 1: the peers' blocks go by copy engines (coll_gpu_zc_engines_launch), the kernels only order
                     them and copy this rank's own block; the same on every rank */
  coll_gpu_zc_t zc[COLL_GPU_MAX_DIRECT];
  /* the tree allreduce: this rank's parent (-1 at the root) and children (-1 for none, after the others) in each
     tree, whose half of the buffer (coll_gpu_part of count in 2, by packs) goes over point-to-point connection t */
  int tree_up[COLL_GPU_TREES];
  int tree_down[COLL_GPU_TREES][COLL_GPU_TREE_ARITY];
} coll_gpu_work_t;

/* Launches call w of w->coll on communicator comm (its connections uploaded) on stream (a cudaStream_t). The blocks
 * that finish write seq into status->done[0..blocks); coll_gpu_work_blocks says how many to wait for. */
coll_gpu_status_t coll_gpu_work_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w, void *stream);
int coll_gpu_work_blocks(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w);
/* Launches zero-copy call w (zc_engines set) on stream: a kernel announces the call and waits for every peer's
 * announcement; copy_stream (non-blocking, of this context) then copies the peers' blocks with cudaMemcpyAsync
 * between events ready and copied while a kernel copies this rank's own block; a last kernel, after both, tells
 * the peers and waits for theirs. coll_gpu_work_blocks says how many blocks to wait for, as for coll_gpu_work_launch.
 */
coll_gpu_status_t coll_gpu_zc_engines_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w, void *stream,
                                             void *copy_stream, void *ready, void *copied);

/* One-shot calls up to this many blocks can go to a lingering kernel (64 KiB). */
#define COLL_GPU_LINGER_MAX_BLOCKS 16
/* Launches one-shot call w (w->algo ONESHOT) as a lingering kernel of coll_gpu_work_blocks blocks; it serves later
 * calls of at most as many blocks that coll_gpu_linger_post hands it. */
coll_gpu_status_t coll_gpu_linger_launch(const coll_gpu_dev_comm_t *comm, const coll_gpu_work_t *w, void *stream);
/* Writes call w into status->call under ticket, then fences (the caller reads status->leaving next). A reduce-scatter
 * whose blocks are not equal (each) must have blocks that follow each other from sendbuf (blocks[q].begin the counts
 * before q where blocks[q].count is not 0), each of fewer than 2^32 elements: the record holds every rank's count.
 * Otherwise it writes nothing and fails (COLL_GPU_INTERNAL_ERROR). */
coll_gpu_status_t coll_gpu_linger_post(coll_gpu_dev_status_t *status, uint32_t ticket, const coll_gpu_work_t *w);
/* Writes the order to exit into status->call under ticket, then fences. */
void coll_gpu_linger_stop(coll_gpu_dev_status_t *status, uint32_t ticket);

/* Resources, all in the current context. */
coll_gpu_status_t coll_gpu_dev_alloc(void **ptr, size_t bytes); /* zeroed */
coll_gpu_status_t coll_gpu_dev_free(void *ptr);
int coll_gpu_ipc_handle_size(void);
coll_gpu_status_t coll_gpu_ipc_get(void *ptr, void *handle);
coll_gpu_status_t coll_gpu_ipc_open(const void *handle, void **ptr);
coll_gpu_status_t coll_gpu_ipc_close(void *ptr);
/* blocking: its work starts after the work queued before on the legacy default stream, and holds up
 * the work queued after it there; non-blocking: neither */
coll_gpu_status_t coll_gpu_stream_create(void **stream, int nonblocking);
coll_gpu_status_t coll_gpu_stream_destroy(void *stream);
coll_gpu_status_t coll_gpu_event_create(void **event); /* no timing */
coll_gpu_status_t coll_gpu_event_destroy(void *event);
coll_gpu_status_t coll_gpu_stream_sync(void *stream);
/* Queues a copy of `bytes` from src to dst (device memory of the current context) on stream. */
coll_gpu_status_t coll_gpu_copy_async(void *dst, const void *src, size_t bytes, void *stream);
/* Returns once the work queued on the legacy default stream is done. */
coll_gpu_status_t coll_gpu_legacy_stream_wait(void);
coll_gpu_status_t coll_gpu_host_mapped_alloc(void **host, void **dev, size_t bytes); /* zeroed */
coll_gpu_status_t coll_gpu_host_mapped_free(void *host);
/* Pins `bytes` of host memory mapped here (a shared memory segment) and maps it into every context (portable), dev
 * its device view in this one; unregister ends that. */
coll_gpu_status_t coll_gpu_host_register(void *host, size_t bytes, void **dev);
coll_gpu_status_t coll_gpu_host_unregister(void *host);
/* Whether device `device` can access the memory of the GPU at PCI bus id `busid` as a peer: *can 1 it can (or it is
 * the same GPU), 0 it cannot; COLL_GPU_UNAVAILABLE where that is not known here (that GPU is not visible to this
 * process). */
coll_gpu_status_t coll_gpu_peer_access(int device, const char *busid, int *can);
/* The GPU's UUID, PCI bus id and multiprocessor count. */
coll_gpu_status_t coll_gpu_device_identity(int device, char uuid[16], char busid[32], int *sms);

#ifdef __cplusplus
}
#endif
#endif
