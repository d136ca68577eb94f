/*
 * The entry points, generated per signature: what differs between two collectives is their parameter
 * list and which of their buffers go in or out, so each collective file defines, for each collective
 * `name`:
 *   PARAMS_name      its parameters before the communicator (the module function's, sbuf and rbuf named so);
 *   ARGS_name(S, R)  the same as arguments, with S and R in place of the send and receive buffers;
 *   NAME_name        its MPI name, for messages ("MPI_Allgather");
 *   stage_name(st, comm, ARGS_name(sbuf, rbuf), &hs, &hr)
 *                    stages what the call touches and sets hs and hr to what the previous module gets;
 * and then COLL_GPU_ENTRIES(name), which defines its blocking, nonblocking and persistent entries. A
 * collective whose blocking entry runs on the GPUs uses COLL_GPU_BLOCKING_GPU for that entry instead.
 * Every entry hands host buffers straight to the previous module: one check, and no other cost, in a
 * process that never loaded CUDA (mca_coll_gpu_staging_possible).
 */
#ifndef MCA_COLL_GPU_WRAP_H
#define MCA_COLL_GPU_WRAP_H

#include "coll_gpu.h"
#include "ompi/datatype/ompi_datatype.h"

/* The staged form of `name`, as static fn(PARAMS_name, comm, m): stages, runs the previous module's
 * function on the bounce buffers (collectives it runs inside count as nested: mca_coll_gpu_nesting),
 * copies back. */
#define COLL_GPU_STAGED(name, fn)                                                            \
  static int fn(PARAMS_##name, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) { \
    coll_gpu_stage_t st;                                                                     \
    void *hs, *hr;                                                                           \
    coll_gpu_stage_init(&st);                                                                \
    int rc = stage_##name(&st, comm, ARGS_##name(sbuf, rbuf), &hs, &hr);                     \
    if (rc == OMPI_SUCCESS) {                                                                \
      ++mca_coll_gpu_nesting;                                                                \
      rc = m->previous_##name(ARGS_##name(hs, hr), comm, m->previous_##name##_module);       \
      --mca_coll_gpu_nesting;                                                                \
    }                                                                                        \
    return mca_coll_gpu_unstage(&st, rc, comm, NAME_##name);                                 \
  }

#define COLL_GPU_BLOCKING(name)                                                                              \
  COLL_GPU_STAGED(name, staged_##name)                                                                       \
  int mca_coll_gpu_##name(PARAMS_##name, struct ompi_communicator_t *comm, mca_coll_base_module_t *module) { \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                              \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))                                                       \
      return m->previous_##name(ARGS_##name(sbuf, rbuf), comm, m->previous_##name##_module);                 \
    return staged_##name(ARGS_##name(sbuf, rbuf), comm, m);                                                  \
  }

/* A blocking entry with a GPU path (coll_gpu_gpupath.c): try_gpu(ARGS_name(sbuf, rbuf), comm, m, &rc) returns
 * 1 when it ran the call (result in rc), 0 when the call is staged or goes to the previous module. A
 * process without CUDA posts `host_bytes` (an expression of the parameters: the call's bytes, the same on
 * every rank) to the path agreement instead. */
#define COLL_GPU_BLOCKING_GPU(name, host_bytes, try_gpu)                                                     \
  COLL_GPU_STAGED(name, staged_##name)                                                                       \
  int mca_coll_gpu_##name(PARAMS_##name, struct ompi_communicator_t *comm, mca_coll_base_module_t *module) { \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                              \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {                                                     \
      if (m->agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(NAME_##name, (host_bytes), comm, m);  \
      return m->previous_##name(ARGS_##name(sbuf, rbuf), comm, m->previous_##name##_module);                 \
    }                                                                                                        \
    int rc;                                                                                                  \
    if (try_gpu(ARGS_##name(sbuf, rbuf), comm, m, &rc)) return rc;                                           \
    return staged_##name(ARGS_##name(sbuf, rbuf), comm, m);                                                  \
  }

#define COLL_GPU_NONBLOCKING(name)                                                                      \
  int mca_coll_gpu_i##name(PARAMS_##name, struct ompi_communicator_t *comm, ompi_request_t **request,   \
                           mca_coll_base_module_t *module) {                                            \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                         \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))                                                  \
      return m->previous_i##name(ARGS_##name(sbuf, rbuf), comm, request, m->previous_i##name##_module); \
    coll_gpu_stage_t st;                                                                                \
    void *hs, *hr, *pending = NULL;                                                                     \
    coll_gpu_stage_init(&st);                                                                           \
    int rc = stage_##name(&st, comm, ARGS_##name(sbuf, rbuf), &hs, &hr);                                \
    if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);                                    \
    if (rc == OMPI_SUCCESS)                                                                             \
      rc = m->previous_i##name(ARGS_##name(hs, hr), comm, request, m->previous_i##name##_module);       \
    return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_I" #name, request);                           \
  }

#define COLL_GPU_PERSISTENT(name)                                                                                 \
  int mca_coll_gpu_##name##_init(PARAMS_##name, struct ompi_communicator_t *comm, struct ompi_info_t *info,       \
                                 ompi_request_t **request, mca_coll_base_module_t *module) {                      \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                                   \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))                                                            \
      return m->previous_##name##_init(ARGS_##name(sbuf, rbuf), comm, info, request,                              \
                                       m->previous_##name##_init_module);                                         \
    coll_gpu_stage_t st;                                                                                          \
    void *hs, *hr, *persistent = NULL;                                                                            \
    coll_gpu_stage_init(&st);                                                                                     \
    int rc = stage_##name(&st, comm, ARGS_##name(sbuf, rbuf), &hs, &hr);                                          \
    if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_pbegin(&st, &persistent);                                           \
    if (rc == OMPI_SUCCESS)                                                                                       \
      rc = m->previous_##name##_init(ARGS_##name(hs, hr), comm, info, request, m->previous_##name##_init_module); \
    return mca_coll_gpu_pend(&st, rc, persistent, comm, NAME_##name "_init", request);                            \
  }

#define COLL_GPU_ENTRIES(name) COLL_GPU_BLOCKING(name) COLL_GPU_NONBLOCKING(name) COLL_GPU_PERSISTENT(name)

/* The bytes of `count` elements of dt. */
static inline size_t coll_gpu_bytes(struct ompi_datatype_t *dt, int count) {
  size_t size = 0;
  ompi_datatype_type_size(dt, &size);
  return size * (size_t)count;
}

/* Spans of the buffers of one call: `count` elements of dt, or nothing when buf is MPI_IN_PLACE (whose
 * count and datatype arguments MPI leaves undefined). */
static inline coll_gpu_span_t coll_gpu_span_if(const void *buf, struct ompi_datatype_t *dt, size_t count,
                                               size_t *bytes) {
  coll_gpu_span_t none = {0, 0};
  *bytes = 0;
  return buf == MPI_IN_PLACE ? none : mca_coll_gpu_span(dt, count, bytes);
}

#endif
