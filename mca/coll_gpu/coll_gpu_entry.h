/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The entry points' common part. Each collective's file (coll_gpu_colls_*.c) writes out its blocking,
 * nonblocking and persistent entries, `mca_coll_gpu_NAME`, `mca_coll_gpu_iNAME` and `mca_coll_gpu_NAME_init`,
 * as Open MPI's module table names them. Each entry hands host buffers straight to the previous module (one
 * check, and no other cost, in a process that never loaded CUDA: mca_coll_gpu_staging_possible); otherwise it
 * puts its arguments into one record (mca_coll_gpu_coll_args_t) and calls mca_coll_gpu_blocking,
 * mca_coll_gpu_nonblocking or mca_coll_gpu_persistent (coll_gpu_entry.c), which try the GPU path where the
 * collective has one and fall back to the previous module, with staging where buffers need it. What those
 * need to know of a collective is its row (mca_coll_gpu_collective_t), in the collective's file: its names, which of
 * its buffers go in or out (stage), how the previous module is called on staged buffers (previous), and its
 * GPU path (reduction or move), if any.
 */
#ifndef MCA_COLL_GPU_ENTRY_H
#define MCA_COLL_GPU_ENTRY_H

#include "coll_gpu.h"
#include "ompi/datatype/ompi_datatype.h"

typedef struct mca_coll_gpu_collective_s mca_coll_gpu_collective_t;

/* One call of a wrapped collective: its arguments, named as MPI names them; each collective sets its own and
 * leaves the others zero. The datatypes and the op among them (dtype, sdtype, rdtype, op) are held while a
 * nonblocking call waits to start (mca_coll_gpu_saved_t's hold), since the application may free them after the
 * call. */
typedef struct {
  const mca_coll_gpu_collective_t *coll; /* its row */
  const void *sbuf;                      /* or MPI_IN_PLACE */
  void *rbuf;                            /* bcast: the buffer */
  /* reductions and bcast: the vector (reduce_scatter_block: each rank's block), its type, the op */
  int count;
  struct ompi_datatype_t *dtype;
  struct ompi_op_t *op;
  /* the moves: per block, or per rank (v, w), with displacements in elements (v) or bytes (w) */
  int scount, rcount;
  struct ompi_datatype_t *sdtype, *rdtype;
  const int *scounts, *sdispls, *rcounts, *rdispls; /* reduce_scatter: rcounts; gatherv: rdispls; scatterv: sdispls */
  const MPI_Aint *sadispls, *radispls;              /* neighbor_alltoallw's displacements */
  struct ompi_datatype_t *const *sdtypes, *const *rdtypes; /* the w collectives */
  int root;
} mca_coll_gpu_coll_args_t;

/* Which form of a collective the previous module is called in. */
typedef enum { COLL_GPU_BLOCKING, COLL_GPU_NONBLOCKING, COLL_GPU_PERSISTENT } mca_coll_gpu_form_t;

/* What the entries' common part knows of a collective. */
struct mca_coll_gpu_collective_s {
  const char *name, *iname, *pname; /* "MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_init" */
  /* Stages what the call touches and sets *hs and *hr to the send and receive buffers the previous module gets. */
  int (*stage)(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a, void **hs,
               void **hr);
  /* The previous module's function of this form on the call's arguments, with hs and hr for the buffers (info and
   * request: as the form takes them). */
  int (*previous)(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr, struct ompi_communicator_t *comm,
                  mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form, struct ompi_info_t *info,
                  ompi_request_t **request);
  /* The GPU path, where it has one: the call as a reduction or as a move (coll_gpu_gpupath.c); NULL for none. */
  mca_coll_gpu_reduction_t (*reduction)(const mca_coll_gpu_coll_args_t *a);
  mca_coll_gpu_move_t (*move)(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                              mca_coll_gpu_module_t *m);
};

/* The call a on device buffers (or with coll_gpu_force_staging), blocking: on the GPUs where the collective has a
 * GPU path that takes it, otherwise through the previous module, its buffers staged where they need it (collectives
 * that module runs inside count as nested: mca_coll_gpu_nesting). */
int mca_coll_gpu_blocking(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                          mca_coll_gpu_module_t *m);
/* The same, nonblocking: started on the GPUs or queued behind the communicator's queued calls (coll_gpu_request.c),
 * otherwise started through the previous module, staged where buffers need it. */
int mca_coll_gpu_nonblocking(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_gpu_module_t *m);
/* The same, persistent: the previous module's request made on the bounce buffers (it takes its nonblocking tag at
 * init, on every rank alike), which every MPI_Start copies in and out; then, where the collective has a GPU path,
 * the call's agreement is posted and the request becomes ours where the GPUs may run it (coll_gpu_request.c). */
int mca_coll_gpu_persistent(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_gpu_module_t *m);

/* The bytes of `count` elements of dt. */
static inline size_t coll_gpu_bytes(struct ompi_datatype_t *dt, int count) {
  size_t size = 0;
  ompi_datatype_type_size(dt, &size);
  return size * (size_t)count;
}

/* Spans of the buffers of one call: `count` elements of dt, or nothing when buf is MPI_IN_PLACE (whose
 * count and datatype arguments MPI leaves undefined). */
static inline coll_gpu_span_t coll_gpu_span_if(const void *buf, struct ompi_datatype_t *dt, size_t count,
                                               size_t *bytes) {
  coll_gpu_span_t none = {0, 0};
  *bytes = 0;
  return buf == MPI_IN_PLACE ? none : mca_coll_gpu_span(dt, count, bytes);
}

/* The ranks a rank sends blocks to and receives blocks from (Open MPI's remote size is 0 on an
 * intra-communicator). */
static inline size_t mca_coll_gpu_peers(struct ompi_communicator_t *comm) {
  return (size_t)(OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm));
}

/* Whether a call with counts stages on every rank alike, without the agreement. */
static inline int mca_coll_gpu_counted_staged(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) {
  return OMPI_COMM_IS_INTER(comm) || mca_coll_gpu_component.uniform_buffers || mca_coll_gpu_spans_hosts(m, comm);
}

/* What a call with counts does on a rank without CUDA before it goes to the previous module: its host post
 * (mca_coll_gpu_path_host), unless the call stages on every rank alike or the communicator has no GPU path. */
static inline void mca_coll_gpu_counted_host(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) {
  if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
    mca_coll_gpu_path_host(mca_coll_gpu_counted_staged(comm, m) ? 0 : 1, comm, m);
}

#endif
