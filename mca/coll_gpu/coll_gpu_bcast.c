/*
 * MPI_Bcast: the buffer in at the root, out elsewhere.
 */
#include "coll_gpu.h"

static int stage(coll_gpu_stage_t *st, void *buf, int count, struct ompi_datatype_t *dtype, int root,
                 struct ompi_communicator_t *comm, void **hr) {
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  return mca_coll_gpu_stage(st, buf, span, bytes, ompi_comm_rank(comm) == root ? COLL_GPU_IN : COLL_GPU_OUT, hr);
}

int mca_coll_gpu_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_bcast(buf, count, dtype, root, comm, m->previous_bcast_module);
  }
  coll_gpu_stage_t st;
  void *hb = buf;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, buf, count, dtype, root, comm, &hb);
  if (rc == OMPI_SUCCESS) rc = m->previous_bcast(hb, count, dtype, root, comm, m->previous_bcast_module);
  return mca_coll_gpu_unstage(&st, rc, comm, "MPI_Bcast");
}

int mca_coll_gpu_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    return m->previous_ibcast(buf, count, dtype, root, comm, request, m->previous_ibcast_module);
  }
  coll_gpu_stage_t st;
  void *hb = buf;
  void *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = stage(&st, buf, count, dtype, root, comm, &hb);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS) rc = m->previous_ibcast(hb, count, dtype, root, comm, request, m->previous_ibcast_module);
  return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_Ibcast", request);
}
