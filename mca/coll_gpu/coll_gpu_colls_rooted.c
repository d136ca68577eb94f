/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The rooted moves: gather(v), blocks to the root, and scatter(v), blocks from the root, blocking, nonblocking and
 * persistent (the entries' common part: coll_gpu_entry.h), on intra- and intercommunicators, counted as the other
 * moves count them (coll_gpu_colls_move.c). Calls on device buffers run on the GPUs as a call with counts (below)
 * when every rank passes device memory.
 */
#include "coll_gpu_entry.h"

/* A gather or scatter (rooted: COLL_GPU_GATHER or COLL_GPU_SCATTER) as a call with counts: on the GPUs
 * as the zero-copy alltoall whose blocks are empty but to or from the root (coll_gpu_gpupath.c's plan_rooted);
 * otherwise staged. Counts NULL: the one count of every rank, in rank order. */
static mca_coll_gpu_move_t rooted_move(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                       mca_coll_gpu_module_t *m, int rooted) {
  mca_coll_gpu_move_t mv = {COLL_GPU_COLL_ALLTOALL,
                            a->sbuf,
                            a->scount,
                            a->sdtype,
                            a->rbuf,
                            a->rcount,
                            a->rdtype,
                            a->root,
                            a->coll->name,
                            0,
                            1,
                            a->scounts,
                            a->sdispls,
                            a->rcounts,
                            a->rdispls,
                            a->sbuf,
                            a->rbuf,
                            rooted};
  mv.staged = mca_coll_gpu_counted_staged(comm, m);
  return mv;
}

/* The root's receive counts are significant at the root alone (elsewhere they may be NULL): the span
 * they give is computed only where role says ROOT. */
static int stage_to_root(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, coll_gpu_role_t role,
                         const mca_coll_gpu_coll_args_t *a, coll_gpu_span_t rspan, size_t rbytes, void **hs,
                         void **hr) {
  *hs = (void *)a->sbuf;
  *hr = a->rbuf;
  size_t sbytes = 0;
  coll_gpu_span_t sspan = {0, 0};
  if (role == COLL_GPU_NOT_INVOLVED) return OMPI_SUCCESS;
  if (role == COLL_GPU_LEAF || !OMPI_COMM_IS_INTER(comm))
    sspan = coll_gpu_span_if(a->sbuf, a->sdtype, (size_t)a->scount, &sbytes);
  if (role == COLL_GPU_LEAF) return mca_coll_gpu_stage(st, a->sbuf, sspan, sbytes, COLL_GPU_IN, hs);
  if (OMPI_COMM_IS_INTER(comm)) return mca_coll_gpu_stage(st, a->rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs,
                                 hr); /* in place: rbuf in too */
}

/* The root's send span, computed by the caller only where role says ROOT, goes in; the receive buffer
 * comes out, except at an intercommunicator's root and in place at an intra-communicator's root. */
static int stage_from_root(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, coll_gpu_role_t role,
                           const mca_coll_gpu_coll_args_t *a, coll_gpu_span_t sspan, size_t sbytes, void **hs,
                           void **hr) {
  *hs = (void *)a->sbuf;
  *hr = a->rbuf;
  size_t rbytes;
  int rc = OMPI_SUCCESS;
  if (role == COLL_GPU_ROOT) rc = mca_coll_gpu_stage(st, a->sbuf, sspan, sbytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS || role == COLL_GPU_NOT_INVOLVED || (role == COLL_GPU_ROOT && OMPI_COMM_IS_INTER(comm)))
    return rc;
  coll_gpu_span_t rspan = coll_gpu_span_if(a->rbuf, a->rdtype, (size_t)a->rcount, &rbytes);
  return mca_coll_gpu_stage(st, a->rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
}

/* ------------------------------------------------------------------ MPI_Gather(v): blocks to the root */

static int stage_gather(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                        void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, a->root);
  size_t rbytes = 0;
  coll_gpu_span_t rspan = {0, 0};
  if (role == COLL_GPU_ROOT)
    rspan = mca_coll_gpu_span(a->rdtype, (size_t)a->rcount * mca_coll_gpu_peers(comm), &rbytes);
  return stage_to_root(st, comm, role, a, rspan, rbytes, hs, hr);
}
static int previous_gather(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                           struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                           struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_gather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm,
                                m->previous_gather_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_igather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm, request,
                                 m->previous_igather_module);
    default:
      return m->previous_gather_init(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm, info, request,
                                     m->previous_gather_init_module);
  }
}

static mca_coll_gpu_move_t gpu_gather(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                      mca_coll_gpu_module_t *m) {
  return rooted_move(a, comm, m, COLL_GPU_GATHER);
}
static const mca_coll_gpu_collective_t gather = {"MPI_Gather",    "MPI_Igather", "MPI_Gather_init", stage_gather,
                                                 previous_gather, NULL,          gpu_gather};
static mca_coll_gpu_coll_args_t gather_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                            int rcount, struct ompi_datatype_t *rdtype, int root) {
  const mca_coll_gpu_coll_args_t a = {&gather,      .sbuf = sbuf,     .scount = scount, .sdtype = sdtype,
                                      .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype, .root = root};
  return a;
}

int mca_coll_gpu_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, m->previous_gather_module);
  }
  const mca_coll_gpu_coll_args_t a = gather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                               m->previous_igather_module);
  }
  const mca_coll_gpu_coll_args_t a = gather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_gather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                             struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_gather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, info, request,
                                   m->previous_gather_init_module);
  }
  const mca_coll_gpu_coll_args_t a = gather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Gatherv */

static int stage_gatherv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                         void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, a->root);
  size_t rbytes = 0;
  coll_gpu_span_t rspan = {0, 0};
  if (role == COLL_GPU_ROOT)
    rspan = mca_coll_gpu_span_v(a->rdtype, (int)mca_coll_gpu_peers(comm), a->rcounts, a->rdispls, &rbytes);
  return stage_to_root(st, comm, role, a, rspan, rbytes, hs, hr);
}
static int previous_gatherv(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                            struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                            struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_gatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, a->root, comm,
                                 m->previous_gatherv_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_igatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, a->root, comm,
                                  request, m->previous_igatherv_module);
    default:
      return m->previous_gatherv_init(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, a->root, comm,
                                      info, request, m->previous_gatherv_init_module);
  }
}

static mca_coll_gpu_move_t gpu_gatherv(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                       mca_coll_gpu_module_t *m) {
  return rooted_move(a, comm, m, COLL_GPU_GATHER);
}
static const mca_coll_gpu_collective_t gatherv = {"MPI_Gatherv",    "MPI_Igatherv", "MPI_Gatherv_init", stage_gatherv,
                                                  previous_gatherv, NULL,           gpu_gatherv};
static mca_coll_gpu_coll_args_t gatherv_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                             const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                                             int root) {
  const mca_coll_gpu_coll_args_t a = {&gatherv,          .sbuf = sbuf,     .scount = scount,
                                      .sdtype = sdtype,  .rbuf = rbuf,     .rcounts = rcounts,
                                      .rdispls = displs, .rdtype = rdtype, .root = root};
  return a;
}

int mca_coll_gpu_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *displs, struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm,
                               m->previous_gatherv_module);
  }
  const mca_coll_gpu_coll_args_t a = gatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                          const int *displs, struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, request,
                                m->previous_igatherv_module);
  }
  const mca_coll_gpu_coll_args_t a = gatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_gatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                              const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype, int root,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                              mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_gatherv_init(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, info, request,
                                    m->previous_gatherv_init_module);
  }
  const mca_coll_gpu_coll_args_t a = gatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Scatter(v): blocks from the root */

static int stage_scatter(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                         void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, a->root);
  size_t sbytes = 0;
  coll_gpu_span_t sspan = {0, 0};
  if (role == COLL_GPU_ROOT)
    sspan = mca_coll_gpu_span(a->sdtype, (size_t)a->scount * mca_coll_gpu_peers(comm), &sbytes);
  return stage_from_root(st, comm, role, a, sspan, sbytes, hs, hr);
}
static int previous_scatter(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                            struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                            struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_scatter(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm,
                                 m->previous_scatter_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iscatter(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm, request,
                                  m->previous_iscatter_module);
    default:
      return m->previous_scatter_init(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm, info, request,
                                      m->previous_scatter_init_module);
  }
}

static mca_coll_gpu_move_t gpu_scatter(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                       mca_coll_gpu_module_t *m) {
  return rooted_move(a, comm, m, COLL_GPU_SCATTER);
}
static const mca_coll_gpu_collective_t scatter = {"MPI_Scatter",    "MPI_Iscatter", "MPI_Scatter_init", stage_scatter,
                                                  previous_scatter, NULL,           gpu_scatter};
static mca_coll_gpu_coll_args_t scatter_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                             int rcount, struct ompi_datatype_t *rdtype, int root) {
  const mca_coll_gpu_coll_args_t a = {&scatter,     .sbuf = sbuf,     .scount = scount, .sdtype = sdtype,
                                      .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype, .root = root};
  return a;
}

int mca_coll_gpu_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, m->previous_scatter_module);
  }
  const mca_coll_gpu_coll_args_t a = scatter_args(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                m->previous_iscatter_module);
  }
  const mca_coll_gpu_coll_args_t a = scatter_args(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_scatter_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                              struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_scatter_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, info, request,
                                    m->previous_scatter_init_module);
  }
  const mca_coll_gpu_coll_args_t a = scatter_args(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Scatterv */

static int stage_scatterv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                          void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, a->root);
  size_t sbytes = 0;
  coll_gpu_span_t sspan = {0, 0};
  if (role == COLL_GPU_ROOT)
    sspan = mca_coll_gpu_span_v(a->sdtype, (int)mca_coll_gpu_peers(comm), a->scounts, a->sdispls, &sbytes);
  return stage_from_root(st, comm, role, a, sspan, sbytes, hs, hr);
}
static int previous_scatterv(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                             struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                             struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_scatterv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm,
                                  m->previous_scatterv_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iscatterv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm,
                                   request, m->previous_iscatterv_module);
    default:
      return m->previous_scatterv_init(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcount, a->rdtype, a->root, comm,
                                       info, request, m->previous_scatterv_init_module);
  }
}

static mca_coll_gpu_move_t gpu_scatterv(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                        mca_coll_gpu_module_t *m) {
  return rooted_move(a, comm, m, COLL_GPU_SCATTER);
}
static const mca_coll_gpu_collective_t scatterv = {
    "MPI_Scatterv", "MPI_Iscatterv", "MPI_Scatterv_init", stage_scatterv, previous_scatterv, NULL, gpu_scatterv};
static mca_coll_gpu_coll_args_t scatterv_args(const void *sbuf, const int *scounts, const int *displs,
                                              struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                              struct ompi_datatype_t *rdtype, int root) {
  const mca_coll_gpu_coll_args_t a = {&scatterv,         .sbuf = sbuf,     .scounts = scounts,
                                      .sdispls = displs, .sdtype = sdtype, .rbuf = rbuf,
                                      .rcount = rcount,  .rdtype = rdtype, .root = root};
  return a;
}

int mca_coll_gpu_scatterv(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                                m->previous_scatterv_module);
  }
  const mca_coll_gpu_coll_args_t a = scatterv_args(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iscatterv(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                 m->previous_iscatterv_module);
  }
  const mca_coll_gpu_coll_args_t a = scatterv_args(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_scatterv_init(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype,
                               void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                               mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_scatterv_init(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, info, request,
                                     m->previous_scatterv_init_module);
  }
  const mca_coll_gpu_coll_args_t a = scatterv_args(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}
