/*
 * MPI_Allreduce: on the GPUs when every rank passes device buffers (coll_gpu_gpupath.c); otherwise the
 * send buffer in, the receive buffer out (in and out when in place).
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                 void **hs, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  return mca_coll_gpu_stage_pair(st, sbuf, span, bytes, rbuf, span, bytes, hs, hr);
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_allreduce_host(count, comm, m);
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
  }
  int rc;
  if (mca_coll_gpu_allreduce_gpu(sbuf, rbuf, count, dtype, op, comm, m, &rc)) return rc;
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  rc = stage(&st, sbuf, rbuf, count, dtype, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = m->previous_allreduce(hs, hr, count, dtype, op, comm, m->previous_allreduce_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Allreduce");
}

int mca_coll_gpu_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iallreduce_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, count, dtype, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_iallreduce(hs, hr, count, dtype, op, comm, request, m->previous_iallreduce_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Iallreduce", request);
}
