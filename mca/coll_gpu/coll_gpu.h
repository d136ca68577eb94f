/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * coll/gpu: the Open MPI coll component for collectives on CUDA device buffers.
 *
 * Glue layer: the only code that includes Open MPI's internal headers. A module sits on top of the
 * previous coll module of each intra-communicator; collectives on host buffers go straight to the
 * previous functions, collectives on device or managed buffers are staged through host memory.
 */
#ifndef MCA_COLL_GPU_H
#define MCA_COLL_GPU_H

#include "ompi_config.h"

#include <pthread.h>

#include "common/log.h"
#include "engine/agree.h"
#include "engine/calls.h"
#include "engine/engine.h"
#include "engine/hold.h"
#include "engine/stage.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

/* A nonblocking call that completes through our request (coll_gpu_request.c). */
typedef struct mca_coll_gpu_call_s mca_coll_gpu_call_t;

/* The wrapped collectives: X(name) for each module function family that takes a buffer. Each has a
 * blocking form `name`, a nonblocking form `i##name` and a persistent form `name##_init` (Open MPI's
 * MPIX_*_init); Open MPI gives intercommunicators the same table. Barrier carries no buffer and stays
 * with the previous module, but for MPI_Ibarrier behind queued nonblocking calls (coll_gpu_request.c);
 * reduce_local (MPI_Reduce_local, through MPI_COMM_SELF) is wrapped apart. */
// clang-format off
#define COLL_GPU_FOREACH(X)                                                                        \
  X(allgather) X(allgatherv) X(allreduce) X(alltoall) X(alltoallv) X(alltoallw) X(bcast) X(exscan) \
  X(gather) X(gatherv) X(reduce) X(reduce_scatter) X(reduce_scatter_block) X(scan) X(scatter)      \
  X(scatterv) X(neighbor_allgather) X(neighbor_allgatherv) X(neighbor_alltoall)                    \
  X(neighbor_alltoallv) X(neighbor_alltoallw)
// clang-format on

typedef struct {
  mca_coll_base_component_2_0_0_t super;
  /* parameters: coll_gpu_params.c registers and checks them all */
  int priority;
  bool enable;
  int verbose;
  char *verbose_subsys;
  int subsys_mask; /* parsed verbose_subsys */
  size_t stage_cache_size;
  bool force_staging;
  /* the GPU path: each collective's algorithm */
  int algorithm[COLL_GPU_NCOLLS]; /* per collective: -1 auto, an algorithm it has, or COLL_GPU_NALGOS: always stage */
  int allreduce_protocol;         /* -1 auto, or a coll_gpu_proto_t */
  int nchannels;                  /* 0 auto */
  int max_channels;
  /* coll_gpu_tuning_rules as given, and its rules (ntuning_rules of them) */
  char *tuning_rules;
  coll_gpu_tune_rule_t tuning_rule[COLL_GPU_TUNE_MAX_RULES];
  int ntuning_rules;
  size_t oneshot_max_bytes;
  size_t twoshot_max_bytes;
  size_t ring_slot_bytes;
  size_t scratch_max_bytes;
  size_t ring_chunk_bytes; /* 0 auto */
  int oneshot_linger_us;
  int virtual_nodes;   /* > 0: ranks per virtual node (a testing feature: NET connections on one host) */
  int proxy_threads;   /* network proxy threads per rank; 0: the rank's share of the CPUs near its GPU (and NIC) */
  int proxy_net;       /* COLL_GPU_ENGINE_PROXY_NET_*: what the network proxy moves steps over */
  char *socket_ifname; /* the proxy's sockets: interface name prefixes; NULL or "": its default */
  size_t net_ll_bytes; /* NET steps of at most this many bytes travel as LL lines; 0: none */
  int node_transport;  /* COLL_GPU_ENGINE_NODE_*: how a node's ranks reach each other's GPU memory */
  int timeout;         /* seconds: the watchdog reports a wait this long */
  int spin_us;         /* a wait spins this long before it yields */
  bool uniform_buffers;
  size_t net_min_bytes;                           /* across hosts, calls below this stage without an agreement */
  size_t zero_copy_min_bytes;                     /* inside a node, moves' blocks from this size zero-copy */
  size_t zero_copy_nonblocking_min_bytes;         /* and those of nonblocking and persistent calls from this one */
  size_t zero_copy_map_bytes;                     /* the peers' allocations mapped for it, at most */
  size_t zero_copy_engines_min_bytes;             /* 2 ranks: zero-copy blocks from this size by copy engines */
  char *net_blocking_min;                         /* coll_gpu_net_blocking_min_bytes as given */
  size_t net_blocking_min_bytes[COLL_GPU_NCOLLS]; /* its figures, net_min_bytes where it gives none or more */
  char *topo_file;      /* NCCL-format topology of the node instead of the probe; NULL or "" for none */
  char *topo_dump_file; /* where rank 0 of each GPU communicator writes the topology it used; NULL or "" */
  int output;           /* opal_output stream */
} mca_coll_gpu_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_gpu_component_t mca_coll_gpu_component;

/* The previous module's function `fn` and its module. */
#define COLL_GPU_PREVIOUS(fn)                                         \
  __typeof__(((mca_coll_base_module_t *)0)->coll_##fn) previous_##fn; \
  mca_coll_base_module_t *previous_##fn##_module;

typedef struct mca_coll_gpu_module_t {
  mca_coll_base_module_t super;
#define COLL_GPU_DECLARE_PREVIOUS(name) \
  COLL_GPU_PREVIOUS(name) COLL_GPU_PREVIOUS(i##name) COLL_GPU_PREVIOUS(name##_init)
  COLL_GPU_FOREACH(COLL_GPU_DECLARE_PREVIOUS)
#undef COLL_GPU_DECLARE_PREVIOUS
  COLL_GPU_PREVIOUS(reduce_local)
  COLL_GPU_PREVIOUS(ibarrier)
  coll_gpu_hold_t gpu;     /* its engine (made, or shared with a communicator over the same ranks, on the first call
                              every rank passes device buffers to), the engine's and the agreement's states, the claims */
  coll_gpu_agree_t *agree; /* the path agreement, made on the first call that has one (no communication) */
  coll_gpu_agree_key_t agree_key; /* the communicator in the node's agreement table, and its instance */
  uint64_t agree_instance;
  struct mca_coll_gpu_agree_net_s *agree_net; /* its messages to and from other hosts (coll_gpu_agree_net.c) */
  pthread_mutex_t agree_mutex;                /* the agreement is one thread's at a time (mca_coll_gpu_agree_lock) */
  int hosts; /* 0: not known yet; 1: its ranks on one host; 2: on several (mca_coll_gpu_spans_hosts) */
  struct ompi_communicator_t *comm; /* the communicator it serves */
  /* nonblocking calls that complete later (coll_gpu_request.c) */
  coll_gpu_calls_t calls;       /* their order: queued, on the engine, waiting for answers (engine/calls.h) */
  mca_coll_gpu_call_t *running; /* started through the previous module, not completed */
  int busy;                     /* in the list progress goes through */
  struct mca_coll_gpu_module_t *next_busy;
} mca_coll_gpu_module_t;

OBJ_CLASS_DECLARATION(mca_coll_gpu_module_t);

/* coll_gpu_params.c */
int mca_coll_gpu_register_params(void);

/* coll_gpu_module.c */
int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority);

/* coll_gpu_log.c */
/* The name of one subsystem bit, as coll_gpu_verbose_subsys spells it. */
const char *mca_coll_gpu_subsys_name(int subsys);
void mca_coll_gpu_log(int level, int subsys, const char *fmt, ...) __opal_attribute_format__(__printf__, 3, 4);
/* The engine's logger (a coll_gpu_log_fn): mca_coll_gpu_log where coll_gpu_verbose and
 * coll_gpu_verbose_subsys enable the line. */
void mca_coll_gpu_engine_log(int level, int subsys, const char *fmt, ...) __opal_attribute_format__(__printf__, 3, 4);
/* Whether a line of this level and subsystem is printed: coll_gpu_verbose and coll_gpu_verbose_subsys
 * decide, but the watchdog's lines (COLL_GPU_LVL_WATCHDOG) are printed whatever they say. */
static inline bool mca_coll_gpu_log_on(int level, int subsys) {
  return mca_coll_gpu_component.verbose >= level &&
         (level <= COLL_GPU_LVL_WATCHDOG || (mca_coll_gpu_component.subsys_mask & subsys));
}
#define COLL_GPU_LOG(level, subsys, ...)                                                          \
  do {                                                                                            \
    if (mca_coll_gpu_log_on((level), (subsys))) mca_coll_gpu_log((level), (subsys), __VA_ARGS__); \
  } while (0)

/* coll_gpu_staging.c: what every collective entry uses */

/* Can any buffer need staging in this process? False until the application has loaded CUDA; while no
 * library was loaded after coll/gpu's first check, that costs one pointer read (kernels/gpu_mem.h). */
static inline bool mca_coll_gpu_staging_possible(void) {
  return mca_coll_gpu_component.force_staging || coll_gpu_mem_cuda_loaded();
}

/* The bytes `count` elements of dt cover, and in *bytes the bytes of data among them. */
coll_gpu_span_t mca_coll_gpu_span(struct ompi_datatype_t *dt, size_t count, size_t *bytes);
/* The same for blocks counts[i] at displs[i] elements of dt, i < n (the v collectives). */
coll_gpu_span_t mca_coll_gpu_span_v(struct ompi_datatype_t *dt, int n, const int *counts, const int *displs,
                                    size_t *bytes);
/* The same for blocks of types[i] at displs[i] bytes, or adispls[i] where displs is NULL (alltoallw,
 * neighbor_alltoallw). */
coll_gpu_span_t mca_coll_gpu_span_w(struct ompi_datatype_t *const *types, int n, const int *counts, const int *displs,
                                    const MPI_Aint *adispls, size_t *bytes);

/* Stages buf when it is device or managed memory (or always, with coll_gpu_force_staging): *host is
 * what to pass to the previous module instead. MPI_IN_PLACE, NULL and empty spans pass unchanged. An
 * OUT buffer whose span has holes (bytes < span.len) is staged INOUT so the holes keep their bytes. */
int mca_coll_gpu_stage(coll_gpu_stage_t *st, const void *buf, coll_gpu_span_t span, size_t bytes, coll_gpu_dir_t dir,
                       void **host);
/* Blocking collectives of this thread running inside a staged one: a component below (coll/inter on an
 * intercommunicator) may run collectives of its own, on the bounce buffers or its own host memory.
 * coll_gpu_force_staging stages the application's host buffers, never those. */
extern __thread int mca_coll_gpu_nesting;
/* Buffers mca_coll_gpu_stage has staged since start (MPI_T: coll_gpu_staged_buffers). */
unsigned long long mca_coll_gpu_staged_buffers(void);
/* The usual pair: the send buffer in, the receive buffer out, or in and out when sbuf is MPI_IN_PLACE. */
int mca_coll_gpu_stage_pair(coll_gpu_stage_t *st, const void *sbuf, coll_gpu_span_t sspan, size_t sbytes, void *rbuf,
                            coll_gpu_span_t rspan, size_t rbytes, void **hs, void **hr);
/* Ends a blocking call: copies results back when rc is OMPI_SUCCESS, releases the bounce buffers,
 * reports a staging failure. Returns rc, or the staging error. */
int mca_coll_gpu_unstage(coll_gpu_stage_t *st, int rc, struct ompi_communicator_t *comm, const char *op);
/* Nonblocking entries: before starting the previous collective, mca_coll_gpu_ibegin reserves what
 * tracks the staged buffers (nothing when none is staged); after it, mca_coll_gpu_iend arranges the
 * copy back for when *request completes, or finishes at once when the start failed. */
int mca_coll_gpu_ibegin(const coll_gpu_stage_t *st, void **pending);
int mca_coll_gpu_iend(coll_gpu_stage_t *st, int rc, void *pending, struct ompi_communicator_t *comm, const char *op,
                      ompi_request_t **request);
/* Persistent entries: the staged buffers stay bound to the request the previous module made from the
 * bounce buffers; every MPI_Start copies in, completion copies out, MPI_Request_free releases them. The
 * same pair of calls as ibegin and iend. */
int mca_coll_gpu_pbegin(const coll_gpu_stage_t *st, void **persistent);
int mca_coll_gpu_pend(coll_gpu_stage_t *st, int rc, void *persistent, struct ompi_communicator_t *comm, const char *op,
                      ompi_request_t **request);

/* Where a rank stands towards a rooted collective's root: MPI_ROOT and MPI_PROC_NULL on an
 * intercommunicator, the rank itself on an intra-communicator. */
typedef enum { COLL_GPU_ROOT, COLL_GPU_LEAF, COLL_GPU_NOT_INVOLVED } coll_gpu_role_t;
coll_gpu_role_t mca_coll_gpu_role(struct ompi_communicator_t *comm, int root);

/* Whether the communicator can ever take the GPU path (2 to COLL_GPU_MAX_COMM_RANKS ranks): the same answer on
 * every rank. */
bool mca_coll_gpu_gpupath_possible(struct ompi_communicator_t *comm);
/* What a rank that cannot take the GPU path (no CUDA in the process) does in each collective that has one
 * (bytes: the call's, 0 for none): it tells the ranks that may be deciding that it passes host memory. While
 * no process of the node may pass device memory, a count; then a few stores. Never a wait. */
void mca_coll_gpu_path_host(size_t bytes, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m);
/* A move on the GPUs (bcast, allgather, alltoall; coll_gpu_gpupath.c), as mca_coll_gpu_plan_move takes it.
 * Contiguous datatypes on the engine's device, on every rank; a nonblocking or persistent alltoall in place is
 * staged. MPI_Allgatherv and MPI_Alltoallv run as allgather and alltoall where every block has one count and the
 * blocks lie one after another in rank order (coll_gpu_colls_move.c; gather and scatter in coll_gpu_colls_rooted.c):
 * `counted` names such a call; those of other layouts (blocking, nonblocking and persistent) as the zero-copy call
 * with counts, and so do MPI_Gather(v) and MPI_Scatter(v) (`rooted`). */
typedef struct {
  coll_gpu_coll_t coll;
  const void *sbuf; /* allgather, alltoall: the send buffer or MPI_IN_PLACE */
  int scount;       /* per block */
  struct ompi_datatype_t *sdtype;
  void *rbuf; /* bcast: the buffer */
  int rcount; /* per block */
  struct ompi_datatype_t *rdtype;
  int root;            /* bcast */
  const char *counted; /* NULL, or the MPI function with counts this call is: it always agrees on its path (no
                          rank joins an engine of its own without the agreement) */
  int staged;          /* counted: staged on every rank alike, with no agreement */
  int unlike;          /* counted: this rank's counts or displacements are not the allgather's or alltoall's */
  /* counted: the call's counts and displacements as given (alltoallv's send ones; NULL for allgatherv, which sends
     scount to every rank), for the blocking call's zero-copy path where some rank's are unlike */
  const int *scounts, *sdispls, *rcounts, *rdispls;
  const void *vsbuf; /* counted: the buffers the displacements count from (sbuf and rbuf as given) */
  void *vrbuf;
  /* counted: COLL_GPU_GATHER (rbuf, rcount or rcounts and rdispls, rdtype significant at the root alone; rcounts
     NULL: rcount from every rank in rank order) or COLL_GPU_SCATTER (sbuf, scount or scounts and sdispls, sdtype
     at the root alone), coll ALLTOALL; 0 otherwise. root: theirs */
  int rooted;
} mca_coll_gpu_move_t;
enum { COLL_GPU_GATHER = 1, COLL_GPU_SCATTER = 2 };

/* MPI_Allreduce, MPI_Reduce and MPI_Reduce_scatter(_block) on the GPUs (coll_gpu_gpupath.c), as
 * mca_coll_gpu_plan_reduction takes them. A reduce's root classifies both buffers, the other ranks their send
 * buffer; in-place MPI_Reduce_scatter with counts that differ is staged. */
typedef struct {
  coll_gpu_coll_t coll; /* COLL_GPU_COLL_ALLREDUCE, COLL_GPU_COLL_REDUCE or COLL_GPU_COLL_REDUCE_SCATTER */
  const char *name;     /* the MPI function, for messages */
  const void *sbuf;     /* or MPI_IN_PLACE */
  void *rbuf;
  int count;          /* allreduce, reduce: the buffer; reduce_scatter_block: each rank's block */
  const int *rcounts; /* MPI_Reduce_scatter: each rank's block; NULL for the others */
  struct ompi_datatype_t *dtype;
  struct ompi_op_t *op;
  int root; /* reduce */
} mca_coll_gpu_reduction_t;

/* `count` elements of dt at buf, as the user passed them (dt NULL: none; buf may be MPI_BOTTOM). The engine's memory
 * holds them packed, or where `laid`, as they lie in buf (a reduction's elements, whose layout the kernels read as it
 * is: a pair type's padding between them too, which is never written back). */
typedef struct {
  const void *buf;
  struct ompi_datatype_t *dt;
  size_t count;
  int laid;
} mca_coll_gpu_ubuf_t;

/* How a rank whose buffers the engine cannot take as they are joins a call through device memory of the
 * engine's (coll_gpu_join.c): `in` packed into it at in_at, the call run there with its send buffer at
 * send_at and its receive buffer at recv_at (SIZE_MAX: none), the result unpacked into `out` from out_at. */
typedef struct {
  mca_coll_gpu_ubuf_t in, out;
  size_t in_at, out_at, send_at, recv_at;
  size_t bytes; /* of device memory */
} mca_coll_gpu_join_t;
/* Where `count` elements of dt start, when they are one contiguous run of bytes; NULL otherwise. Open MPI
 * answers for an int count, and any count above 1 has the layout of 2 (a type without gaps), so a count of
 * 2^31 elements or more (an allgather of 4 blocks of 512 MiB) is asked as 2. */
char *mca_coll_gpu_contiguous(const void *buf, struct ompi_datatype_t *dt, size_t count);
/* Copies a join's input into dev (the engine's device memory), or its output back from it; 0, or -1 with
 * why said. Host, device and managed memory of any process's GPU, any datatype: contiguous data is copied
 * as it is, other layouts are packed on the host (device memory staged there first). */
int mca_coll_gpu_join_in(coll_gpu_engine_t *e, const mca_coll_gpu_join_t *j, char *dev, char *why, size_t len);
int mca_coll_gpu_join_out(coll_gpu_engine_t *e, const mca_coll_gpu_join_t *j, const char *dev, char *why, size_t len);

/* One call with a GPU path, as this rank sees it: its path bit, and what the engine would run. */
typedef struct {
  uint32_t mine;
  coll_gpu_meminfo_t mem;  /* where the engine lives or would: the receive buffer's memory */
  coll_gpu_meminfo_t smem; /* the send buffer's (with mine COLL_GPU_PATH_GPU) */
  coll_gpu_args_t args;
  size_t counts[COLL_GPU_MAX_DIRECT]; /* reduce-scatter's blocks: args.counts */
  coll_gpu_args_t vargs;              /* a call's zero-copy call with counts (vargs.v, the layout below), where the
                                         agreement says some rank's is unlike the allgather's or alltoall's; a
                                         nonblocking zero-copy move's args (vargs.v NULL, coll_gpu_zero_copy_wins) */
  coll_gpu_vlayout_t layout;
  const char *name; /* the MPI function, for messages */
  size_t bytes;
  int any_memory;           /* from facts alike on every rank: any rank can join whatever memory it passes */
  mca_coll_gpu_join_t join; /* how, where mine is not COLL_GPU_PATH_GPU (worked out for blocking calls that may join) */
} mca_coll_gpu_plan_t;
/* The call the engine runs where the agreement's answer is `all` (the GPU path): every rank's call with counts where
 * some rank's layout is unlike (VLAYOUT). */
static inline const coll_gpu_args_t *mca_coll_gpu_plan_args(const mca_coll_gpu_plan_t *pl, uint32_t all) {
  return (all & COLL_GPU_PATH_VLAYOUT) ? &pl->vargs : &pl->args;
}

/* A nonblocking entry's arguments, saved for a start that comes later (coll_gpu_entry.c makes them):
 * start() begins the call through the previous module from them, staged where buffers need it; hold()
 * retains the datatypes and ops they name, or releases them. */
#define COLL_GPU_SAVED_MAX 160
typedef struct {
  int (*start)(const void *args, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, ompi_request_t **request);
  void (*hold)(void *args, int hold); /* 1: retain, 0: release */
  const void *args;
  size_t size;
  const char *name; /* "MPI_Iallreduce" */
} mca_coll_gpu_saved_t;

/* The plan of a call on the GPU path (coll_gpu_gpupath.c), blocking or not: 1 when the call takes part in the
 * agreement, 0 when it goes on through the previous module, with staging where buffers need it (no GPU path on this
 * communicator, nothing to move, or across hosts too few bytes: the same on every rank). */
int mca_coll_gpu_plan_reduction(const mca_coll_gpu_reduction_t *rd, int blocking, struct ompi_communicator_t *comm,
                                mca_coll_gpu_module_t *m, mca_coll_gpu_plan_t *pl);
int mca_coll_gpu_plan_move(const mca_coll_gpu_move_t *mv, int blocking, struct ompi_communicator_t *comm,
                           mca_coll_gpu_module_t *m, mca_coll_gpu_plan_t *pl);
/* A blocking call with its plan (coll_gpu_gpupath.c): 1 when it handled the call (result in *rc), 0 when the call
 * goes on through the previous module. */
int mca_coll_gpu_run_blocking(mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                              int *rc);
/* A nonblocking call with its plan (coll_gpu_request.c): 1 when the call was handled (*rc; *request set on success):
 * started on the GPUs, or queued to start later; 0 when it goes on at once through the previous module, its
 * agreement posted. */
int mca_coll_gpu_icall(const mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       const mca_coll_gpu_saved_t *saved, ompi_request_t **request, int *rc);
/* A persistent call with its plan: *request, the previous module's persistent request on staged buffers just made,
 * becomes ours when the call has a GPU path this rank may take (its agreement posted now, in init order);
 * each MPI_Start then runs on the GPUs, or starts that request. */
int mca_coll_gpu_pcall(const mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       ompi_request_t **request);
/* Queues a nonblocking call behind the ones queued before it (pl: its GPU path, or NULL for none). */
int mca_coll_gpu_defer(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm, const mca_coll_gpu_plan_t *pl,
                       const mca_coll_gpu_saved_t *saved, ompi_request_t **request);
/* Progresses until every queued call of m has started, and (engine) the call on its GPUs has completed. */
void mca_coll_gpu_drain(mca_coll_gpu_module_t *m, int engine);
/* A module's end: its outstanding calls complete (or fail) first, and progress forgets it. */
void mca_coll_gpu_calls_module_gone(mca_coll_gpu_module_t *m);
/* A new module's queue of calls (m->comm set): its ranks, and how it reaches the module. */
void mca_coll_gpu_calls_init(mca_coll_gpu_module_t *m);
/* Component close: the progress callback goes. */
void mca_coll_gpu_calls_fini(void);

/* coll_gpu_comm.c: a communicator's GPU resources, for both the blocking and the nonblocking forms */
coll_gpu_agree_t *mca_coll_gpu_agreement(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm);
/* A new intra-communicator's agreement key and instance, for one of 2 to COLL_GPU_MAX_COMM_RANKS ranks (comm_query,
 * also where the component is disabled, so that the count stays the same on every member). */
void mca_coll_gpu_agreement_key(struct ompi_communicator_t *comm, coll_gpu_agree_key_t *key, uint64_t *instance);
/* coll_gpu_agree_net.c: the agreement's messages to the communicator's ranks on other hosts, set up on
 * m->agree where it has any (0: it could not be). Freed with the module. */
typedef struct mca_coll_gpu_agree_net_s mca_coll_gpu_agree_net_t;
int mca_coll_gpu_agree_net(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm);
/* Whether the communicator's ranks are on several hosts, by host name (looked up once): the same answer on
 * every rank. */
int mca_coll_gpu_spans_hosts(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_gpu_agree_net_free(mca_coll_gpu_module_t *m);
/* The agreement handle's state is one thread's at a time. With threads, a call's own thread takes it
 * (recursively: progress inside the call's wait reads other agreements of the communicator, as without
 * threads), progress elsewhere only tries, and leaves the communicator for later when it is taken. */
void mca_coll_gpu_agree_lock(mca_coll_gpu_module_t *m);
int mca_coll_gpu_agree_trylock(mca_coll_gpu_module_t *m);
void mca_coll_gpu_agree_unlock(mca_coll_gpu_module_t *m);
/* Component close: the node's agreement table is unmapped. */
void mca_coll_gpu_agreement_fini(void);
typedef struct {
  struct ompi_communicator_t *comm;
  const char *call; /* "MPI_Bcast" */
  size_t bytes;
} mca_coll_gpu_watch_ctx_t;
/* The agreement's watchdog line (ctx: a mca_coll_gpu_watch_ctx_t). */
void mca_coll_gpu_agree_report(void *ctx, const uint8_t *late);
/* How the glue's waits go (coll_gpu_spin_us, coll_gpu_timeout, driving Open MPI's progress), for the engine and the
 * agreement. */
coll_gpu_wait_config_t mca_coll_gpu_wait_config(void);
int mca_coll_gpu_create_engine(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm,
                               const coll_gpu_meminfo_t *mem);
/* A call whose ranks' counts disagree (an erroneous program), on the rank that found it (why: how; bytes: what this
 * rank sends): reported, the GPU path left as it is, so that every rank's later calls stay in step; returns
 * MPI_ERR_TRUNCATE. */
int mca_coll_gpu_mismatched(struct ompi_communicator_t *comm, const char *call, size_t bytes, const char *why);
/* A failure on the GPU path: reported, the communicator stages from now on; returns the MPI error. */
int mca_coll_gpu_failed(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm, const char *call, size_t bytes,
                        const char *where, const char *why);

/* The entry points (coll_gpu_colls_*.c), installed through COLL_GPU_FOREACH. */
#define COLL_GPU_DECLARE_ENTRIES(name)                                           \
  __typeof__(*((mca_coll_base_module_t *)0)->coll_##name) mca_coll_gpu_##name;   \
  __typeof__(*((mca_coll_base_module_t *)0)->coll_i##name) mca_coll_gpu_i##name; \
  __typeof__(*((mca_coll_base_module_t *)0)->coll_##name##_init) mca_coll_gpu_##name##_init;
COLL_GPU_FOREACH(COLL_GPU_DECLARE_ENTRIES)
#undef COLL_GPU_DECLARE_ENTRIES
__typeof__(*((mca_coll_base_module_t *)0)->coll_reduce_local) mca_coll_gpu_reduce_local;
__typeof__(*((mca_coll_base_module_t *)0)->coll_ibarrier) mca_coll_gpu_ibarrier;

END_C_DECLS
#endif
