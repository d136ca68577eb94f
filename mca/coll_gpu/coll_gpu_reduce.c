/*
 * MPI_Reduce: the send buffer in; at the root the receive buffer out (in and out when in place). The
 * receive buffer of other ranks is not significant and passes unchanged.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, int root,
                 struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  if (ompi_comm_rank(comm) != root) return mca_coll_gpu_stage(st, sbuf, span, bytes, COLL_GPU_IN, hs);
  return mca_coll_gpu_stage_pair(st, sbuf, span, bytes, rbuf, span, bytes, hs, hr);
}

int mca_coll_gpu_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->previous_reduce_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, count, dtype, root, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = m->previous_reduce(hs, hr, count, dtype, op, root, comm, m->previous_reduce_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Reduce");
}

int mca_coll_gpu_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request, m->previous_ireduce_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, count, dtype, root, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_ireduce(hs, hr, count, dtype, op, root, comm, request, m->previous_ireduce_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Ireduce", request);
}
