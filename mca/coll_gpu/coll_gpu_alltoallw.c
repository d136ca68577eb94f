/*
 * MPI_Alltoallw: the send blocks in, the receive blocks out (displacements in bytes, a datatype per
 * peer); in place, the receive buffer is in and out.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, const int *scounts, const int *sdispls,
                 struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                 struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t sbytes = 0, rbytes;
  int n = ompi_comm_size(comm);
  coll_gpu_span_t sspan = {0, 0}; /* counts and displacements of the send side mean nothing in place */
  if (sbuf != MPI_IN_PLACE) sspan = mca_coll_gpu_span_w(sdtypes, n, scounts, sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_w(rdtypes, n, rcounts, rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}

int mca_coll_gpu_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                           struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                 m->previous_alltoallw_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_alltoallw(hs, scounts, sdispls, sdtypes, hr, rcounts, rdispls, rdtypes, comm,
                               m->previous_alltoallw_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Alltoallw");
}

int mca_coll_gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                            struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, request,
                                  m->previous_ialltoallw_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_ialltoallw(hs, scounts, sdispls, sdtypes, hr, rcounts, rdispls, rdtypes, comm, request,
                                m->previous_ialltoallw_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Ialltoallw", request);
}
