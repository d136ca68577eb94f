/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The network proxy (NCCL's proxy thread and NET transport): progress threads per engine, each owning a
 * UCX worker or TCP sockets of its own (coll_gpu_proxy_config_t.net), that move the steps of NET connections
 * between host FIFOs and the network. No MPI and no
 * kernels here: the engine hands it memory and peers' addresses, and whoever plays the kernel (the GPU
 * kernels through host-mapped memory, or a host thread in the tests) talks to it through each FIFO's
 * counters only.
 *
 * A FIFO is `depth` slots of slot_bytes in host memory and three kinds of words beside it:
 *   send side: the kernel waits until head >= s + 1 - depth (the slot is free), writes step s into slot
 *     s mod depth and its size into sizes[s mod depth], and raises tail to s + 1 (release); the proxy
 *     sees the tail, sends the slot once the receiving proxy has granted it a free slot there (credits,
 *     which it sends back as the receiving kernel frees slots), and once UCX is done with the slot raises
 *     head to s + 1, so a slow receiver holds the sender back;
 *   receive side: the proxy keeps a receive posted in every slot the kernel has freed (steps below head +
 *     depth), and when step s has arrived writes its size into sizes and raises tail to s + 1 (release);
 *     the kernel waits for tail, consumes the slot and raises head. The receiving proxy sets the tail,
 *     never the sender.
 * A FIFO with LL slots (ll, common/ll.h) also moves steps of at most ll_bytes as LL lines: on the send side
 * the kernel may write step s as lines into LL slot s mod depth instead of the slot, with no tail (the proxy
 * sends its data once every line has its flag); on the receive side the proxy writes each such step that
 * arrived as lines too, before the tail, and the kernel may poll those instead of the tail. Either end
 * chooses per step and alone: on the wire a step is its data either way.
 * Steps travel as tagged messages (UCX's, or the proxy's own over TCP sockets: proxy/net.h), the tag naming
 * the sender, the connection and the step, so that each receive matches exactly its step.
 *
 * A proxy has one or more progress threads, each with its own UCX context and worker (one thread copies or
 * sends at about one core's speed: UCX's shared-memory and tcp transports move data with the CPU). A
 * connection belongs to thread id mod T at both ends, T the fewer threads of the two ranks, so a ring's
 * channels spread over the threads.
 *
 * Life of a proxy: create (each thread sets up UCX) -> address (for the engine's bootstrap to allgather)
 * -> connect each peer with its address -> add the FIFOs -> wake their threads at each call that uses them -> failed
 * to learn about a peer that is gone -> destroy. Every function but wake and failed waits for a thread
 * to do the work (a UCX worker is its thread's alone).
 *
 * UCX reads its configuration from the environment with the prefix COLL_GPU_ (COLL_GPU_UCX_TLS=tcp
 * steers the proxy alone; UCX_TLS steers it and Open MPI's pml/ucx).
 */
#ifndef COLL_GPU_PROXY_H
#define COLL_GPU_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the address a proxy publishes (coll_gpu_proxy_address): its threads' UCX worker addresses in a
 * checked envelope, padded, so that the engine's bootstrap can allgather a fixed size. */
#define COLL_GPU_PROXY_ADDRESS_BYTES 8192
/* Progress threads of a proxy at most. */
#define COLL_GPU_PROXY_MAX_THREADS 16
/* Slots of a FIFO at most (NCCL_STEPS is 8). */
#define COLL_GPU_PROXY_MAX_DEPTH 16
/* Connection ids per ordered pair of ranks: the tag holds the id in 12 bits, the upper half for credits. */
#define COLL_GPU_PROXY_MAX_CONNS 2048

typedef struct coll_gpu_proxy coll_gpu_proxy_t;

/* What the threads move steps over: UCX (its transports: COLL_GPU_UCX_TLS), or TCP sockets of the proxy's
 * own (proxy/net_socket.h; NCCL's socket transport). Every rank's proxy must use the same. */
typedef enum { COLL_GPU_PROXY_NET_UCX = 0, COLL_GPU_PROXY_NET_SOCKET = 1 } coll_gpu_proxy_net_t;
/* "UCX", "sockets" */
const char *coll_gpu_proxy_net_name(coll_gpu_proxy_net_t net);
/* Whether the proxy's sockets take the interface `name` under `ifname` (coll_gpu_proxy_config_t.ifname's form). */
int coll_gpu_proxy_takes_ifname(const char *name, const char *ifname);

typedef struct {
  int rank, nranks;
  coll_gpu_log_fn log; /* NULL: silent */
  int threads;         /* progress threads, each with its own UCX worker, 1..COLL_GPU_PROXY_MAX_THREADS (0: 1) */
  const int *cpus;     /* CPUs the threads may run on; NULL or ncpus 0: where the proxy was created. The
                          threads are named cgpu-proxy */
  int ncpus;
  uint64_t spin_ns;  /* after the last movement or wake, the thread polls this long without a pause */
  uint64_t sleep_ns; /* then it sleeps between polls, 10 us first, each sleep twice the one before, at
                        most sleep_ns; a wake (coll_gpu_proxy_wake) ends a sleep */
  coll_gpu_proxy_net_t net;
  const char *ifname; /* sockets: the interfaces whose addresses peers reach (NCCL_SOCKET_IFNAME's form:
                         name prefixes, comma-separated, ^ first to exclude them); NULL or "": every one up
                         but loopback, docker* and virbr* */
} coll_gpu_proxy_config_t;

typedef enum { COLL_GPU_PROXY_SEND, COLL_GPU_PROXY_RECV } coll_gpu_proxy_dir_t;

typedef struct {
  coll_gpu_proxy_dir_t dir;
  int peer;   /* the rank at the other end */
  int id;     /* < COLL_GPU_PROXY_MAX_CONNS; the same at both ends, unique per ordered pair */
  char *buff; /* depth slots of slot_bytes */
  size_t slot_bytes;
  int depth;                /* <= COLL_GPU_PROXY_MAX_DEPTH */
  volatile uint64_t *tail;  /* steps posted: by the kernel (send), by the proxy (recv) */
  volatile uint64_t *head;  /* steps done with: by the proxy (send), by the kernel (recv) */
  volatile uint64_t *sizes; /* [depth] bytes of each step in flight: written by the kernel (send; NULL:
                               every step is a whole slot), by the proxy (recv; may be NULL) */
  char *ll;                 /* depth LL slots of coll_gpu_ll_stride(ll_bytes) (common/ll.h), or NULL: no LL */
  size_t ll_bytes;          /* the most data of an LL step, at most slot_bytes and COLL_GPU_LL_MAX_BYTES */
} coll_gpu_proxy_fifo_t;

/* Starts the threads and sets up UCX on each; on failure says why and leaves *out NULL. When the threads'
 * UCX addresses do not all fit in COLL_GPU_PROXY_ADDRESS_BYTES, it keeps the threads whose addresses fit
 * and says so in the log (coll_gpu_proxy_threads tells how many). */
coll_gpu_status_t coll_gpu_proxy_create(const coll_gpu_proxy_config_t *cfg, coll_gpu_proxy_t **out, char *why,
                                        size_t len);
/* This proxy's address: COLL_GPU_PROXY_ADDRESS_BYTES bytes into buf. */
void coll_gpu_proxy_address(const coll_gpu_proxy_t *p, void *buf);
/* The progress threads running. */
int coll_gpu_proxy_threads(const coll_gpu_proxy_t *p);
/* Connects to rank `peer` with the address it published. An address that is not one (bad envelope,
 * another rank's, a UCX that cannot reach it) is refused with the reason. A peer on another host is
 * watched: UCX reports its failure (coll_gpu_proxy_failed). One on this host (same_host) is not, so that
 * UCX may use its shared-memory transports, which cannot watch a peer; the caller checks its process. */
coll_gpu_status_t coll_gpu_proxy_connect(coll_gpu_proxy_t *p, int peer, const void *addr, int same_host, char *why,
                                         size_t len);
/* Adds a FIFO to move (its counters must not move until this returns). */
coll_gpu_status_t coll_gpu_proxy_add(coll_gpu_proxy_t *p, const coll_gpu_proxy_fifo_t *fifo, char *why, size_t len);
/* Tells the threads of connections first_id .. first_id + count - 1 (those with a FIFO of such an id) that
 * steps are coming: a sleeping one wakes, and each polls spin_ns from now. The engine calls it at every
 * launch with the connections the call uses, so that the threads of the others stay asleep. */
void coll_gpu_proxy_wake(coll_gpu_proxy_t *p, int first_id, int count);
/* COLL_GPU_SUCCESS while every peer is reachable; otherwise the status of the first failure, its peer
 * in *peer and its reason in why. A failed proxy moves nothing more. */
coll_gpu_status_t coll_gpu_proxy_failed(coll_gpu_proxy_t *p, int *peer, char *why, size_t len);
/* Stops the threads, cancels what is in flight and closes UCX. The FIFOs may be freed afterwards. */
void coll_gpu_proxy_destroy(coll_gpu_proxy_t *p);

#ifdef __cplusplus
}
#endif
#endif
