/*
 * MPI_Reduce_scatter_block: the whole send vector in, this rank's block out; in place, the receive
 * buffer holds the whole vector in and the block out.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                 struct ompi_communicator_t *comm, void **hs, void **hr) {
  size_t bytes, rbytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)rcount * ompi_comm_size(comm), &bytes);
  if (sbuf == MPI_IN_PLACE) return mca_coll_gpu_stage(st, rbuf, span, bytes, COLL_GPU_INOUT, hr);
  int rc = mca_coll_gpu_stage(st, sbuf, span, bytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  coll_gpu_span_t rspan = mca_coll_gpu_span(dtype, (size_t)rcount, &rbytes);
  return mca_coll_gpu_stage(st, rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
}

int mca_coll_gpu_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                      mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                            m->previous_reduce_scatter_block_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, rcount, dtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_reduce_scatter_block(hs, hr, rcount, dtype, op, comm, m->previous_reduce_scatter_block_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Reduce_scatter_block");
}

int mca_coll_gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                       mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                             m->previous_ireduce_scatter_block_module);
  }
  coll_gpu_stage_t st;
  void *hs = (void *)sbuf, *hr = rbuf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, sbuf, rbuf, rcount, dtype, comm, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS)
    rc = m->previous_ireduce_scatter_block(hs, hr, rcount, dtype, op, comm, request,
                                           m->previous_ireduce_scatter_block_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Ireduce_scatter_block", request);
}
