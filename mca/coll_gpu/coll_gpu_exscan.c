/*
 * MPI_Exscan: the send buffer in, the receive buffer out (in and out when in place). The receive buffer of
 * rank 0 is undefined by MPI: it is staged in only, so it keeps its bytes.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                 struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  int rc = mca_coll_gpu_stage(st, sbuf, span, bytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_dir_t dir = sbuf == MPI_IN_PLACE ? COLL_GPU_INOUT : COLL_GPU_OUT;
  if (ompi_comm_rank(comm) == 0) dir = COLL_GPU_IN;
  return mca_coll_gpu_stage(st, rbuf, span, bytes, dir, hr);
}

int mca_coll_gpu_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_exscan(sbuf, rbuf, count, dtype, op, comm, m->previous_exscan_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, count, dtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = m->previous_exscan(hs, hr, count, dtype, op, comm, m->previous_exscan_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Exscan");
}

int mca_coll_gpu_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_iexscan(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iexscan_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, count, dtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS) rc = m->previous_iexscan(hs, hr, count, dtype, op, comm, request, m->previous_iexscan_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Iexscan", request);
}
