/*
 * MPI_Scatterv: at the root the send blocks in; the receive buffer out, except at the root in place.
 * Arguments that are not significant pass unchanged.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, const int *scounts, const int *displs,
                 struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                 struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t sbytes, rbytes;
  int rc = OMPI_SUCCESS;
  if (ompi_comm_rank(comm) == root) {
    coll_gpu_span_t sspan = mca_coll_gpu_span_v(sdtype, ompi_comm_size(comm), scounts, displs, &sbytes);
    rc = mca_coll_gpu_stage(st, sbuf, sspan, sbytes, COLL_GPU_IN, hs);
  }
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_span_t rspan = mca_coll_gpu_span(rdtype, (size_t)rcount, &rbytes);
  return mca_coll_gpu_stage(st, rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
}

int mca_coll_gpu_scatterv(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm,
                                m->previous_scatterv_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_scatterv(hs, scounts, displs, sdtype, hr, rcount, rdtype, root, comm, m->previous_scatterv_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Scatterv");
}

int mca_coll_gpu_iscatterv(const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, request,
                                 m->previous_iscatterv_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_iscatterv(hs, scounts, displs, sdtype, hr, rcount, rdtype, root, comm, request,
                               m->previous_iscatterv_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Iscatterv", request);
}
