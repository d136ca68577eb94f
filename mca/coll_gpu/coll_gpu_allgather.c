/*
 * MPI_Allgather: the send buffer in, the receive buffer (one block per rank) out; in place, the
 * receive buffer is in and out.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                 int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = mca_coll_gpu_span(sdtype, (size_t)scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(rdtype, (size_t)rcount * ompi_comm_size(comm), &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}

int mca_coll_gpu_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous_allgather_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_allgather(hs, scount, sdtype, hr, rcount, rdtype, comm, m->previous_allgather_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Allgather");
}

int mca_coll_gpu_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                  m->previous_iallgather_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_iallgather(hs, scount, sdtype, hr, rcount, rdtype, comm, request, m->previous_iallgather_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Iallgather", request);
}
