/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Neighborhood collectives on Cartesian, graph and distributed-graph communicators, blocking,
 * nonblocking and persistent (coll_gpu_wrap.h): a block to each of the outdegree neighbors goes in, a
 * block from each of the indegree neighbors comes out. MPI allows no MPI_IN_PLACE here.
 */
#include "coll_gpu_wrap.h"
#include "ompi/mca/topo/base/base.h"

/* The communicator's in- and outdegree; both 0 when it has no topology (the previous module reports that). */
static void degrees(struct ompi_communicator_t *comm, size_t *in, size_t *out) {
  int indegree = 0, outdegree = 0;
  if (mca_topo_base_neighbor_count(comm, &indegree, &outdegree) != OMPI_SUCCESS) indegree = outdegree = 0;
  *in = (size_t)indegree;
  *out = (size_t)outdegree;
}

#define PARAMS_allgather_shape \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype
#define PARAMS_neighbor_allgather PARAMS_allgather_shape
#define ARGS_neighbor_allgather(S, R) S, scount, sdtype, R, rcount, rdtype
#define NAME_neighbor_allgather "MPI_Neighbor_allgather"
static int stage_neighbor_allgather(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_neighbor_allgather,
                                    void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span(sdtype, (size_t)scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(rdtype, (size_t)rcount * in, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
COLL_GPU_ENTRIES(neighbor_allgather)

#define PARAMS_neighbor_allgatherv                                                                                 \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *displs, \
      struct ompi_datatype_t *rdtype
#define ARGS_neighbor_allgatherv(S, R) S, scount, sdtype, R, rcounts, displs, rdtype
#define NAME_neighbor_allgatherv "MPI_Neighbor_allgatherv"
static int stage_neighbor_allgatherv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_neighbor_allgatherv,
                                     void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span(sdtype, (size_t)scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(rdtype, (int)in, rcounts, displs, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
COLL_GPU_ENTRIES(neighbor_allgatherv)

#define PARAMS_neighbor_alltoall PARAMS_allgather_shape
#define ARGS_neighbor_alltoall ARGS_neighbor_allgather
#define NAME_neighbor_alltoall "MPI_Neighbor_alltoall"
static int stage_neighbor_alltoall(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_neighbor_alltoall,
                                   void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span(sdtype, (size_t)scount * out, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(rdtype, (size_t)rcount * in, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
COLL_GPU_ENTRIES(neighbor_alltoall)

#define PARAMS_neighbor_alltoallv                                                                       \
  const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype, void *rbuf, \
      const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype
#define ARGS_neighbor_alltoallv(S, R) S, scounts, sdispls, sdtype, R, rcounts, rdispls, rdtype
#define NAME_neighbor_alltoallv "MPI_Neighbor_alltoallv"
static int stage_neighbor_alltoallv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_neighbor_alltoallv,
                                    void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span_v(sdtype, (int)out, scounts, sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(rdtype, (int)in, rcounts, rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
COLL_GPU_ENTRIES(neighbor_alltoallv)

/* Displacements in bytes, as MPI_Aint. */
#define PARAMS_neighbor_alltoallw                                                                                    \
  const void *sbuf, const int *scounts, const MPI_Aint *sdispls, struct ompi_datatype_t *const *sdtypes, void *rbuf, \
      const int *rcounts, const MPI_Aint *rdispls, struct ompi_datatype_t *const *rdtypes
#define ARGS_neighbor_alltoallw(S, R) S, scounts, sdispls, sdtypes, R, rcounts, rdispls, rdtypes
#define NAME_neighbor_alltoallw "MPI_Neighbor_alltoallw"
static int stage_neighbor_alltoallw(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_neighbor_alltoallw,
                                    void **hs, void **hr) {
  size_t in, out, sbytes, rbytes;
  degrees(comm, &in, &out);
  coll_gpu_span_t sspan = mca_coll_gpu_span_w(sdtypes, (int)out, scounts, NULL, sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_w(rdtypes, (int)in, rcounts, NULL, rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
COLL_GPU_ENTRIES(neighbor_alltoallw)
