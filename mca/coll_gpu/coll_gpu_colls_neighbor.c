/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Neighborhood collectives on Cartesian, graph and distributed-graph communicators, blocking,
 * nonblocking and persistent (the entries' common part: coll_gpu_entry.h): a block to each of the outdegree
 * neighbors goes in, a block from each of the indegree neighbors comes out. MPI allows no MPI_IN_PLACE here.
 */
#include "coll_gpu_entry.h"
#include "ompi/mca/topo/base/base.h"

/* The communicator's in- and outdegree; both 0 when it has no topology (the previous module reports that). */
static void degrees(struct ompi_communicator_t *comm, size_t *in, size_t *out) {
  int indegree = 0, outdegree = 0;
  if (mca_topo_base_neighbor_count(comm, &indegree, &outdegree) != OMPI_SUCCESS) indegree = outdegree = 0;
  *in = (size_t)indegree;
  *out = (size_t)outdegree;
}

/* ------------------------------------------------------------------ MPI_Neighbor_allgather */

static int stage_neighbor_allgather(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                    const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span(a->sdtype, (size_t)a->scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(a->rdtype, (size_t)a->rcount * in, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_neighbor_allgather(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                       struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                       mca_coll_gpu_form_t form, struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_neighbor_allgather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm,
                                            m->previous_neighbor_allgather_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ineighbor_allgather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, request,
                                             m->previous_ineighbor_allgather_module);
    default:
      return m->previous_neighbor_allgather_init(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, info,
                                                 request, m->previous_neighbor_allgather_init_module);
  }
}

static const mca_coll_gpu_collective_t neighbor_allgather = {"MPI_Neighbor_allgather",
                                                             "MPI_Ineighbor_allgather",
                                                             "MPI_Neighbor_allgather_init",
                                                             stage_neighbor_allgather,
                                                             previous_neighbor_allgather,
                                                             NULL,
                                                             NULL};
static mca_coll_gpu_coll_args_t neighbor_allgather_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                                        void *rbuf, int rcount, struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&neighbor_allgather, .sbuf = sbuf,     .scount = scount, .sdtype = sdtype,
                                      .rbuf = rbuf,        .rcount = rcount, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_neighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                    int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                          m->previous_neighbor_allgather_module);
  const mca_coll_gpu_coll_args_t a = neighbor_allgather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ineighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                     int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                     ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_ineighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                           m->previous_ineighbor_allgather_module);
  const mca_coll_gpu_coll_args_t a = neighbor_allgather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_neighbor_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                         int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                         struct ompi_info_t *info, ompi_request_t **request,
                                         mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_allgather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                               m->previous_neighbor_allgather_init_module);
  const mca_coll_gpu_coll_args_t a = neighbor_allgather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Neighbor_allgatherv */

static int stage_neighbor_allgatherv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                     const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span(a->sdtype, (size_t)a->scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(a->rdtype, (int)in, a->rcounts, a->rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_neighbor_allgatherv(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                        struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                        mca_coll_gpu_form_t form, struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_neighbor_allgatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm,
                                             m->previous_neighbor_allgatherv_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ineighbor_allgatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm,
                                              request, m->previous_ineighbor_allgatherv_module);
    default:
      return m->previous_neighbor_allgatherv_init(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm,
                                                  info, request, m->previous_neighbor_allgatherv_init_module);
  }
}

static const mca_coll_gpu_collective_t neighbor_allgatherv = {"MPI_Neighbor_allgatherv",
                                                              "MPI_Ineighbor_allgatherv",
                                                              "MPI_Neighbor_allgatherv_init",
                                                              stage_neighbor_allgatherv,
                                                              previous_neighbor_allgatherv,
                                                              NULL,
                                                              NULL};
static mca_coll_gpu_coll_args_t neighbor_allgatherv_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                                         void *rbuf, const int *rcounts, const int *displs,
                                                         struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&neighbor_allgatherv, .sbuf = sbuf,       .scount = scount,  .sdtype = sdtype,
                                      .rbuf = rbuf,         .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_neighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                     const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                           m->previous_neighbor_allgatherv_module);
  const mca_coll_gpu_coll_args_t a = neighbor_allgatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ineighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                      const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                                      struct ompi_communicator_t *comm, ompi_request_t **request,
                                      mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_ineighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, request,
                                            m->previous_ineighbor_allgatherv_module);
  const mca_coll_gpu_coll_args_t a = neighbor_allgatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_neighbor_allgatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                          const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                                          struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                          ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_allgatherv_init(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, info,
                                                request, m->previous_neighbor_allgatherv_init_module);
  const mca_coll_gpu_coll_args_t a = neighbor_allgatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Neighbor_alltoall */

static int stage_neighbor_alltoall(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                   const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span(a->sdtype, (size_t)a->scount * out, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(a->rdtype, (size_t)a->rcount * in, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_neighbor_alltoall(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                      struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                      mca_coll_gpu_form_t form, struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_neighbor_alltoall(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm,
                                           m->previous_neighbor_alltoall_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ineighbor_alltoall(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, request,
                                            m->previous_ineighbor_alltoall_module);
    default:
      return m->previous_neighbor_alltoall_init(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, info, request,
                                                m->previous_neighbor_alltoall_init_module);
  }
}

static const mca_coll_gpu_collective_t neighbor_alltoall = {"MPI_Neighbor_alltoall",
                                                            "MPI_Ineighbor_alltoall",
                                                            "MPI_Neighbor_alltoall_init",
                                                            stage_neighbor_alltoall,
                                                            previous_neighbor_alltoall,
                                                            NULL,
                                                            NULL};
static mca_coll_gpu_coll_args_t neighbor_alltoall_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                                       void *rbuf, int rcount, struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&neighbor_alltoall, .sbuf = sbuf,     .scount = scount, .sdtype = sdtype,
                                      .rbuf = rbuf,       .rcount = rcount, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_neighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                         m->previous_neighbor_alltoall_module);
  const mca_coll_gpu_coll_args_t a = neighbor_alltoall_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ineighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                    int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                    ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_ineighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                          m->previous_ineighbor_alltoall_module);
  const mca_coll_gpu_coll_args_t a = neighbor_alltoall_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_neighbor_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                        int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                        struct ompi_info_t *info, ompi_request_t **request,
                                        mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_alltoall_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                              m->previous_neighbor_alltoall_init_module);
  const mca_coll_gpu_coll_args_t a = neighbor_alltoall_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Neighbor_alltoallv */

static int stage_neighbor_alltoallv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                    const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span_v(a->sdtype, (int)out, a->scounts, a->sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(a->rdtype, (int)in, a->rcounts, a->rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_neighbor_alltoallv(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                       struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                       mca_coll_gpu_form_t form, struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_neighbor_alltoallv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls,
                                            a->rdtype, comm, m->previous_neighbor_alltoallv_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ineighbor_alltoallv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls,
                                             a->rdtype, comm, request, m->previous_ineighbor_alltoallv_module);
    default:
      return m->previous_neighbor_alltoallv_init(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls,
                                                 a->rdtype, comm, info, request,
                                                 m->previous_neighbor_alltoallv_init_module);
  }
}

static const mca_coll_gpu_collective_t neighbor_alltoallv = {"MPI_Neighbor_alltoallv",
                                                             "MPI_Ineighbor_alltoallv",
                                                             "MPI_Neighbor_alltoallv_init",
                                                             stage_neighbor_alltoallv,
                                                             previous_neighbor_alltoallv,
                                                             NULL,
                                                             NULL};
static mca_coll_gpu_coll_args_t neighbor_alltoallv_args(const void *sbuf, const int *scounts, const int *sdispls,
                                                        struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                                        const int *rdispls, struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&neighbor_alltoallv, .sbuf = sbuf,       .scounts = scounts,
                                      .sdispls = sdispls,  .sdtype = sdtype,   .rbuf = rbuf,
                                      .rcounts = rcounts,  .rdispls = rdispls, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                    struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                    struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                          m->previous_neighbor_alltoallv_module);
  const mca_coll_gpu_coll_args_t a =
      neighbor_alltoallv_args(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                     struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                     struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                     ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_ineighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                           request, m->previous_ineighbor_alltoallv_module);
  const mca_coll_gpu_coll_args_t a =
      neighbor_alltoallv_args(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_neighbor_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                         const int *rdispls, struct ompi_datatype_t *rdtype,
                                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                         ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_alltoallv_init(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                               info, request, m->previous_neighbor_alltoallv_init_module);
  const mca_coll_gpu_coll_args_t a =
      neighbor_alltoallv_args(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Neighbor_alltoallw: displacements in bytes, as
 * MPI_Aint */

static int stage_neighbor_alltoallw(coll_gpu_stage_t *st, struct ompi_communicator_t *comm,
                                    const mca_coll_gpu_coll_args_t *a, void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span_w(a->sdtypes, (int)out, a->scounts, NULL, a->sadispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_w(a->rdtypes, (int)in, a->rcounts, NULL, a->radispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_neighbor_alltoallw(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                                       struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                       mca_coll_gpu_form_t form, struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_neighbor_alltoallw(hs, a->scounts, a->sadispls, a->sdtypes, hr, a->rcounts, a->radispls,
                                            a->rdtypes, comm, m->previous_neighbor_alltoallw_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ineighbor_alltoallw(hs, a->scounts, a->sadispls, a->sdtypes, hr, a->rcounts, a->radispls,
                                             a->rdtypes, comm, request, m->previous_ineighbor_alltoallw_module);
    default:
      return m->previous_neighbor_alltoallw_init(hs, a->scounts, a->sadispls, a->sdtypes, hr, a->rcounts, a->radispls,
                                                 a->rdtypes, comm, info, request,
                                                 m->previous_neighbor_alltoallw_init_module);
  }
}

static const mca_coll_gpu_collective_t neighbor_alltoallw = {"MPI_Neighbor_alltoallw",
                                                             "MPI_Ineighbor_alltoallw",
                                                             "MPI_Neighbor_alltoallw_init",
                                                             stage_neighbor_alltoallw,
                                                             previous_neighbor_alltoallw,
                                                             NULL,
                                                             NULL};
static mca_coll_gpu_coll_args_t neighbor_alltoallw_args(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                                        struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                                        const int *rcounts, const MPI_Aint *rdispls,
                                                        struct ompi_datatype_t *const *rdtypes) {
  const mca_coll_gpu_coll_args_t a = {&neighbor_alltoallw, .sbuf = sbuf,        .scounts = scounts,
                                      .sadispls = sdispls, .sdtypes = sdtypes,  .rbuf = rbuf,
                                      .rcounts = rcounts,  .radispls = rdispls, .rdtypes = rdtypes};
  return a;
}

int mca_coll_gpu_neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                    struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                    const MPI_Aint *rdispls, struct ompi_datatype_t *const *rdtypes,
                                    struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                          m->previous_neighbor_alltoallw_module);
  const mca_coll_gpu_coll_args_t a =
      neighbor_alltoallw_args(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                     struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                     const MPI_Aint *rdispls, struct ompi_datatype_t *const *rdtypes,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_ineighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                           request, m->previous_ineighbor_alltoallw_module);
  const mca_coll_gpu_coll_args_t a =
      neighbor_alltoallw_args(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_neighbor_alltoallw_init(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                         struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                         const MPI_Aint *rdispls, struct ompi_datatype_t *const *rdtypes,
                                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                         ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_neighbor_alltoallw_init(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                               info, request, m->previous_neighbor_alltoallw_init_module);
  const mca_coll_gpu_coll_args_t a =
      neighbor_alltoallw_args(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}
