/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Reductions: allreduce, reduce, scan, exscan, reduce_scatter(_block), blocking, nonblocking and
 * persistent (coll_gpu_wrap.h), on intra- and intercommunicators, and MPI_Reduce_local. The send buffer
 * goes in, the receive buffer comes out (in and out when in place). Blocking MPI_Allreduce, MPI_Reduce
 * and MPI_Reduce_scatter(_block) on device buffers run on the GPUs when every rank passes device memory
 * (coll_gpu_gpupath.c).
 */
#include "coll_gpu_wrap.h"

/* One vector of `count` elements in, one out. */
static int stage_vector(coll_gpu_stage_t *st, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        void **hs, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  return mca_coll_gpu_stage_pair(st, sbuf, span, bytes, rbuf, span, bytes, hs, hr);
}

/* ------------------------------------------------------------------ MPI_Allreduce */

#define PARAMS_allreduce const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op
#define ARGS_allreduce(S, R) S, R, count, dtype, op
#define NAME_allreduce "MPI_Allreduce"
static int stage_allreduce(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_allreduce, void **hs,
                           void **hr) {
  return stage_vector(st, sbuf, rbuf, count, dtype, hs, hr);
}

#define GPU_allreduce \
  { COLL_GPU_COLL_ALLREDUCE, NAME_allreduce, sbuf, rbuf, count, NULL, dtype, op, 0 }
COLL_GPU_REDUCTION_ENTRIES(allreduce, coll_gpu_bytes(dtype, count))

/* ------------------------------------------------------------------ MPI_Reduce: the result at the root */

#define PARAMS_reduce \
  const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root
#define ARGS_reduce(S, R) S, R, count, dtype, op, root
#define NAME_reduce "MPI_Reduce"
static int stage_reduce(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_reduce, void **hs, void **hr) {
  *hs = (void *)sbuf;
  *hr = rbuf;
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  switch (mca_coll_gpu_role(comm, root)) {
    case COLL_GPU_LEAF: /* the receive buffer is not significant */
      return mca_coll_gpu_stage(st, sbuf, span, bytes, COLL_GPU_IN, hs);
    case COLL_GPU_ROOT:
      if (OMPI_COMM_IS_INTER(comm)) return mca_coll_gpu_stage(st, rbuf, span, bytes, COLL_GPU_OUT, hr);
      return mca_coll_gpu_stage_pair(st, sbuf, span, bytes, rbuf, span, bytes, hs, hr);
    default:
      return OMPI_SUCCESS;
  }
}
#define GPU_reduce \
  { COLL_GPU_COLL_REDUCE, NAME_reduce, sbuf, rbuf, count, NULL, dtype, op, root }
COLL_GPU_REDUCTION_ENTRIES(reduce, coll_gpu_bytes(dtype, count))

/* ------------------------------------------------------------------ MPI_Scan, MPI_Exscan (intra only) */

#define PARAMS_scan PARAMS_allreduce
#define ARGS_scan ARGS_allreduce
#define NAME_scan "MPI_Scan"
static int stage_scan(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_scan, void **hs, void **hr) {
  return stage_vector(st, sbuf, rbuf, count, dtype, hs, hr);
}
COLL_GPU_ENTRIES(scan)

/* The receive buffer of rank 0 is undefined by MPI: it is staged in only, so it keeps its bytes. */
#define PARAMS_exscan PARAMS_allreduce
#define ARGS_exscan ARGS_allreduce
#define NAME_exscan "MPI_Exscan"
static int stage_exscan(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_exscan, void **hs, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  int rc = mca_coll_gpu_stage(st, sbuf, span, bytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_dir_t dir = sbuf == MPI_IN_PLACE ? COLL_GPU_INOUT : COLL_GPU_OUT;
  if (ompi_comm_rank(comm) == 0) dir = COLL_GPU_IN;
  return mca_coll_gpu_stage(st, rbuf, span, bytes, dir, hr);
}
COLL_GPU_ENTRIES(exscan)

/* ------------------------------------------------------------------ MPI_Reduce_scatter(_block) */

/* The whole vector (`total` elements) in, this rank's block (`mine`) out; in place, the receive buffer
 * holds the whole vector in and the block out. The vector spans the local group on both kinds of
 * communicator. */
static int stage_scattered(coll_gpu_stage_t *st, const void *sbuf, void *rbuf, size_t total, size_t mine,
                           struct ompi_datatype_t *dtype, void **hs, void **hr) {
  size_t bytes, rbytes;
  *hs = (void *)sbuf;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, total, &bytes);
  if (sbuf == MPI_IN_PLACE) return mca_coll_gpu_stage(st, rbuf, span, bytes, COLL_GPU_INOUT, hr);
  int rc = mca_coll_gpu_stage(st, sbuf, span, bytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_span_t rspan = mca_coll_gpu_span(dtype, mine, &rbytes);
  return mca_coll_gpu_stage(st, rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
}

#define PARAMS_reduce_scatter \
  const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype, struct ompi_op_t *op
#define ARGS_reduce_scatter(S, R) S, R, rcounts, dtype, op
#define NAME_reduce_scatter "MPI_Reduce_scatter"
/* the elements of all blocks */
static size_t scattered_total(struct ompi_communicator_t *comm, const int *rcounts) {
  size_t total = 0;
  for (int i = 0; i < ompi_comm_size(comm); ++i) total += (size_t)rcounts[i];
  return total;
}
static int stage_reduce_scatter(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_reduce_scatter,
                                void **hs, void **hr) {
  return stage_scattered(st, sbuf, rbuf, scattered_total(comm, rcounts), (size_t)rcounts[ompi_comm_rank(comm)], dtype,
                         hs, hr);
}
#define GPU_reduce_scatter \
  { COLL_GPU_COLL_REDUCE_SCATTER, NAME_reduce_scatter, sbuf, rbuf, 0, rcounts, dtype, op, 0 }
COLL_GPU_REDUCTION_ENTRIES(reduce_scatter, scattered_total(comm, rcounts) * coll_gpu_bytes(dtype, 1))

#define PARAMS_reduce_scatter_block \
  const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op
#define ARGS_reduce_scatter_block(S, R) S, R, rcount, dtype, op
#define NAME_reduce_scatter_block "MPI_Reduce_scatter_block"
static int stage_reduce_scatter_block(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                      PARAMS_reduce_scatter_block, void **hs, void **hr) {
  return stage_scattered(st, sbuf, rbuf, (size_t)rcount * ompi_comm_size(comm), (size_t)rcount, dtype, hs, hr);
}
#define GPU_reduce_scatter_block \
  { COLL_GPU_COLL_REDUCE_SCATTER, NAME_reduce_scatter_block, sbuf, rbuf, rcount, NULL, dtype, op, 0 }
COLL_GPU_REDUCTION_ENTRIES(reduce_scatter_block, coll_gpu_bytes(dtype, rcount) * (size_t)ompi_comm_size(comm))

/* ------------------------------------------------------------------ MPI_Reduce_local */

/* Open MPI calls the reduce_local of MPI_COMM_SELF's table: inbuf in, inoutbuf in and out. */
int mca_coll_gpu_reduce_local(const void *inbuf, void *inoutbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_reduce_local(inbuf, inoutbuf, count, dtype, op, m->previous_reduce_local_module);
  coll_gpu_stage_t st;
  void *hin, *hinout;
  size_t bytes;
  coll_gpu_stage_init(&st);
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  int rc = mca_coll_gpu_stage(&st, inbuf, span, bytes, COLL_GPU_IN, &hin);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_stage(&st, inoutbuf, span, bytes, COLL_GPU_INOUT, &hinout);
  if (rc == OMPI_SUCCESS) rc = m->previous_reduce_local(hin, hinout, count, dtype, op, m->previous_reduce_local_module);
  return mca_coll_gpu_unstage(&st, rc, &ompi_mpi_comm_self.comm, "MPI_Reduce_local");
}
