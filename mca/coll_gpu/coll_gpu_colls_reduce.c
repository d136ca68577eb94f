/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Reductions: allreduce, reduce, scan, exscan, reduce_scatter(_block), blocking, nonblocking and
 * persistent (the entries' common part: coll_gpu_entry.h), on intra- and intercommunicators, and
 * MPI_Reduce_local. The send buffer goes in, the receive buffer comes out (in and out when in place).
 * MPI_Allreduce, MPI_Reduce and MPI_Reduce_scatter(_block) on device buffers run on the GPUs when every rank
 * passes device memory (coll_gpu_gpupath.c).
 */
#include "coll_gpu_entry.h"

/* One vector of `count` elements in, one out. */
static int stage_vector(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                        void **hs, void **hr) {
  (void)comm;
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(a->dtype, (size_t)a->count, &bytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, span, bytes, a->rbuf, span, bytes, hs, hr);
}

/* The GPU path's call of a reduction (mca_coll_gpu_reduction_t) from its arguments. */
static mca_coll_gpu_reduction_t as_reduction(const mca_coll_gpu_coll_args_t *a, coll_gpu_coll_t coll) {
  const mca_coll_gpu_reduction_t rd = {coll,       a->coll->name, a->sbuf, a->rbuf, a->count,
                                       a->rcounts, a->dtype,      a->op,   a->root};
  return rd;
}

/* ------------------------------------------------------------------ MPI_Allreduce */

static int previous_allreduce(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                              struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                              struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_allreduce(hs, hr, a->count, a->dtype, a->op, comm, m->previous_allreduce_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iallreduce(hs, hr, a->count, a->dtype, a->op, comm, request, m->previous_iallreduce_module);
    default:
      return m->previous_allreduce_init(hs, hr, a->count, a->dtype, a->op, comm, info, request,
                                        m->previous_allreduce_init_module);
  }
}
static mca_coll_gpu_reduction_t gpu_allreduce(const mca_coll_gpu_coll_args_t *a) {
  return as_reduction(a, COLL_GPU_COLL_ALLREDUCE);
}
static const mca_coll_gpu_collective_t allreduce = {
    "MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_init", stage_vector, previous_allreduce, gpu_allreduce, NULL};
static mca_coll_gpu_coll_args_t allreduce_args(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                               struct ompi_op_t *op) {
  const mca_coll_gpu_coll_args_t a = {&allreduce, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op};
  return a;
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
  }
  const mca_coll_gpu_coll_args_t a = allreduce_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iallreduce_module);
  }
  const mca_coll_gpu_coll_args_t a = allreduce_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                      m->previous_allreduce_init_module);
  }
  const mca_coll_gpu_coll_args_t a = allreduce_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Reduce: the result at the root */

static int stage_reduce(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                        void **hs, void **hr) {
  *hs = (void *)a->sbuf;
  *hr = a->rbuf;
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(a->dtype, (size_t)a->count, &bytes);
  switch (mca_coll_gpu_role(comm, a->root)) {
    case COLL_GPU_LEAF: /* the receive buffer is not significant */
      return mca_coll_gpu_stage(st, a->sbuf, span, bytes, COLL_GPU_IN, hs);
    case COLL_GPU_ROOT:
      if (OMPI_COMM_IS_INTER(comm)) return mca_coll_gpu_stage(st, a->rbuf, span, bytes, COLL_GPU_OUT, hr);
      return mca_coll_gpu_stage_pair(st, a->sbuf, span, bytes, a->rbuf, span, bytes, hs, hr);
    default:
      return OMPI_SUCCESS;
  }
}
static int previous_reduce(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                           struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                           struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_reduce(hs, hr, a->count, a->dtype, a->op, a->root, comm, m->previous_reduce_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ireduce(hs, hr, a->count, a->dtype, a->op, a->root, comm, request, m->previous_ireduce_module);
    default:
      return m->previous_reduce_init(hs, hr, a->count, a->dtype, a->op, a->root, comm, info, request,
                                     m->previous_reduce_init_module);
  }
}
static mca_coll_gpu_reduction_t gpu_reduce(const mca_coll_gpu_coll_args_t *a) {
  return as_reduction(a, COLL_GPU_COLL_REDUCE);
}
static const mca_coll_gpu_collective_t reduce = {
    "MPI_Reduce", "MPI_Ireduce", "MPI_Reduce_init", stage_reduce, previous_reduce, gpu_reduce, NULL};
static mca_coll_gpu_coll_args_t reduce_args(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, int root) {
  const mca_coll_gpu_coll_args_t a = {&reduce,        .sbuf = sbuf, .rbuf = rbuf, .count = count,
                                      .dtype = dtype, .op = op,     .root = root};
  return a;
}

int mca_coll_gpu_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->previous_reduce_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_args(sbuf, rbuf, count, dtype, op, root);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request, m->previous_ireduce_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_args(sbuf, rbuf, count, dtype, op, root);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, int root, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_reduce_init(sbuf, rbuf, count, dtype, op, root, comm, info, request,
                                   m->previous_reduce_init_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_args(sbuf, rbuf, count, dtype, op, root);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Scan (intra only) */

static int previous_scan(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr, struct ompi_communicator_t *comm,
                         mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form, struct ompi_info_t *info,
                         ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_scan(hs, hr, a->count, a->dtype, a->op, comm, m->previous_scan_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iscan(hs, hr, a->count, a->dtype, a->op, comm, request, m->previous_iscan_module);
    default:
      return m->previous_scan_init(hs, hr, a->count, a->dtype, a->op, comm, info, request,
                                   m->previous_scan_init_module);
  }
}
static const mca_coll_gpu_collective_t scan = {"MPI_Scan", "MPI_Iscan", "MPI_Scan_init", stage_vector, previous_scan,
                                               NULL,       NULL};
static mca_coll_gpu_coll_args_t scan_args(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                          struct ompi_op_t *op) {
  const mca_coll_gpu_coll_args_t a = {&scan, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op};
  return a;
}

int mca_coll_gpu_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_scan(sbuf, rbuf, count, dtype, op, comm, m->previous_scan_module);
  const mca_coll_gpu_coll_args_t a = scan_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                       struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_iscan(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iscan_module);
  const mca_coll_gpu_coll_args_t a = scan_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_scan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_scan_init(sbuf, rbuf, count, dtype, op, comm, info, request, m->previous_scan_init_module);
  const mca_coll_gpu_coll_args_t a = scan_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Exscan (intra only) */

/* The receive buffer of rank 0 is undefined by MPI: it is staged in only, so it keeps its bytes. */
static int stage_exscan(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                        void **hs, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(a->dtype, (size_t)a->count, &bytes);
  int rc = mca_coll_gpu_stage(st, a->sbuf, span, bytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_dir_t dir = a->sbuf == MPI_IN_PLACE ? COLL_GPU_INOUT : COLL_GPU_OUT;
  if (ompi_comm_rank(comm) == 0) dir = COLL_GPU_IN;
  return mca_coll_gpu_stage(st, a->rbuf, span, bytes, dir, hr);
}
static int previous_exscan(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                           struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                           struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_exscan(hs, hr, a->count, a->dtype, a->op, comm, m->previous_exscan_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iexscan(hs, hr, a->count, a->dtype, a->op, comm, request, m->previous_iexscan_module);
    default:
      return m->previous_exscan_init(hs, hr, a->count, a->dtype, a->op, comm, info, request,
                                     m->previous_exscan_init_module);
  }
}
static const mca_coll_gpu_collective_t exscan = {
    "MPI_Exscan", "MPI_Iexscan", "MPI_Exscan_init", stage_exscan, previous_exscan, NULL, NULL};
static mca_coll_gpu_coll_args_t exscan_args(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op) {
  const mca_coll_gpu_coll_args_t a = {&exscan, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op};
  return a;
}

int mca_coll_gpu_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_exscan(sbuf, rbuf, count, dtype, op, comm, m->previous_exscan_module);
  const mca_coll_gpu_coll_args_t a = exscan_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_iexscan(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iexscan_module);
  const mca_coll_gpu_coll_args_t a = exscan_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_exscan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_exscan_init(sbuf, rbuf, count, dtype, op, comm, info, request, m->previous_exscan_init_module);
  const mca_coll_gpu_coll_args_t a = exscan_args(sbuf, rbuf, count, dtype, op);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Reduce_scatter(_block) */

/* The whole vector (`total` elements) in, this rank's block (`mine`) out; in place, the receive buffer
 * holds the whole vector in and the block out. The vector spans the local group on both kinds of
 * communicator. */
static int stage_scattered(coll_gpu_stage_t *st, const mca_coll_gpu_coll_args_t *a, size_t total, size_t mine,
                           void **hs, void **hr) {
  size_t bytes, rbytes;
  *hs = (void *)a->sbuf;
  coll_gpu_span_t span = mca_coll_gpu_span(a->dtype, total, &bytes);
  if (a->sbuf == MPI_IN_PLACE) return mca_coll_gpu_stage(st, a->rbuf, span, bytes, COLL_GPU_INOUT, hr);
  int rc = mca_coll_gpu_stage(st, a->sbuf, span, bytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_span_t rspan = mca_coll_gpu_span(a->dtype, mine, &rbytes);
  return mca_coll_gpu_stage(st, a->rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
}

/* the elements of all blocks */
static size_t scattered_total(struct ompi_communicator_t *comm, const int *rcounts) {
  size_t total = 0;
  for (int i = 0; i < ompi_comm_size(comm); ++i) total += (size_t)rcounts[i];
  return total;
}
static int stage_reduce_scatter(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  return stage_scattered(st, a, scattered_total(comm, a->rcounts), (size_t)a->rcounts[ompi_comm_rank(comm)], hs, hr);
}
static int previous_reduce_scatter(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                   struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                                   struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_reduce_scatter(hs, hr, a->rcounts, a->dtype, a->op, comm, m->previous_reduce_scatter_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ireduce_scatter(hs, hr, a->rcounts, a->dtype, a->op, comm, request,
                                         m->previous_ireduce_scatter_module);
    default:
      return m->previous_reduce_scatter_init(hs, hr, a->rcounts, a->dtype, a->op, comm, info, request,
                                             m->previous_reduce_scatter_init_module);
  }
}
static mca_coll_gpu_reduction_t gpu_reduce_scatter(const mca_coll_gpu_coll_args_t *a) {
  return as_reduction(a, COLL_GPU_COLL_REDUCE_SCATTER);
}
static const mca_coll_gpu_collective_t reduce_scatter = {"MPI_Reduce_scatter",
                                                         "MPI_Ireduce_scatter",
                                                         "MPI_Reduce_scatter_init",
                                                         stage_reduce_scatter,
                                                         previous_reduce_scatter,
                                                         gpu_reduce_scatter,
                                                         NULL};
static mca_coll_gpu_coll_args_t reduce_scatter_args(const void *sbuf, void *rbuf, const int *rcounts,
                                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op) {
  const mca_coll_gpu_coll_args_t a = {&reduce_scatter,    .sbuf = sbuf,   .rbuf = rbuf,
                                      .rcounts = rcounts, .dtype = dtype, .op = op};
  return a;
}

int mca_coll_gpu_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(scattered_total(comm, rcounts) * coll_gpu_bytes(dtype, 1), comm, m);
    return m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, m->previous_reduce_scatter_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_scatter_args(sbuf, rbuf, rcounts, dtype, op);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                 mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(scattered_total(comm, rcounts) * coll_gpu_bytes(dtype, 1), comm, m);
    return m->previous_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                       m->previous_ireduce_scatter_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_scatter_args(sbuf, rbuf, rcounts, dtype, op);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                     struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                     ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(scattered_total(comm, rcounts) * coll_gpu_bytes(dtype, 1), comm, m);
    return m->previous_reduce_scatter_init(sbuf, rbuf, rcounts, dtype, op, comm, info, request,
                                           m->previous_reduce_scatter_init_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_scatter_args(sbuf, rbuf, rcounts, dtype, op);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* MPI_Reduce_scatter_block: count is each rank's block. */
static int stage_reduce_scatter_block(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                      const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  return stage_scattered(st, a, (size_t)a->count * ompi_comm_size(comm), (size_t)a->count, hs, hr);
}
static int previous_reduce_scatter_block(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                         struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                         mca_coll_gpu_form_t form, struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_reduce_scatter_block(hs, hr, a->count, a->dtype, a->op, comm,
                                              m->previous_reduce_scatter_block_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ireduce_scatter_block(hs, hr, a->count, a->dtype, a->op, comm, request,
                                               m->previous_ireduce_scatter_block_module);
    default:
      return m->previous_reduce_scatter_block_init(hs, hr, a->count, a->dtype, a->op, comm, info, request,
                                                   m->previous_reduce_scatter_block_init_module);
  }
}
static const mca_coll_gpu_collective_t reduce_scatter_block = {"MPI_Reduce_scatter_block",
                                                               "MPI_Ireduce_scatter_block",
                                                               "MPI_Reduce_scatter_block_init",
                                                               stage_reduce_scatter_block,
                                                               previous_reduce_scatter_block,
                                                               gpu_reduce_scatter,
                                                               NULL};
static mca_coll_gpu_coll_args_t reduce_scatter_block_args(const void *sbuf, void *rbuf, int rcount,
                                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op) {
  const mca_coll_gpu_coll_args_t a = {&reduce_scatter_block, .sbuf = sbuf,   .rbuf = rbuf,
                                      .count = rcount,       .dtype = dtype, .op = op};
  return a;
}

int mca_coll_gpu_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(coll_gpu_bytes(dtype, rcount) * (size_t)ompi_comm_size(comm), comm, m);
    return m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                            m->previous_reduce_scatter_block_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_scatter_block_args(sbuf, rbuf, rcount, dtype, op);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                       mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(coll_gpu_bytes(dtype, rcount) * (size_t)ompi_comm_size(comm), comm, m);
    return m->previous_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                             m->previous_ireduce_scatter_block_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_scatter_block_args(sbuf, rbuf, rcount, dtype, op);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                           struct ompi_info_t *info, ompi_request_t **request,
                                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(coll_gpu_bytes(dtype, rcount) * (size_t)ompi_comm_size(comm), comm, m);
    return m->previous_reduce_scatter_block_init(sbuf, rbuf, rcount, dtype, op, comm, info, request,
                                                 m->previous_reduce_scatter_block_init_module);
  }
  const mca_coll_gpu_coll_args_t a = reduce_scatter_block_args(sbuf, rbuf, rcount, dtype, op);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

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
