/*
 * MPI_Alltoallv: the send blocks in, the receive blocks out; in place, the receive buffer is in and out.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, const int *scounts, const int *sdispls,
                 struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                 struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t sbytes = 0, rbytes;
  int n = ompi_comm_size(comm);
  coll_gpu_span_t sspan = {0, 0}; /* counts and displacements of the send side mean nothing in place */
  if (sbuf != MPI_IN_PLACE) sspan = mca_coll_gpu_span_v(sdtype, n, scounts, sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(rdtype, n, rcounts, rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}

int mca_coll_gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                           void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                 m->previous_alltoallv_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_alltoallv(hs, scounts, sdispls, sdtype, hr, rcounts, rdispls, rdtype, comm,
                               m->previous_alltoallv_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Alltoallv");
}

int mca_coll_gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, request,
                                  m->previous_ialltoallv_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_ialltoallv(hs, scounts, sdispls, sdtype, hr, rcounts, rdispls, rdtype, comm, request,
                                m->previous_ialltoallv_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Ialltoallv", request);
}
