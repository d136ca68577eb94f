/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
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
 * collective with a GPU path defines GPU_name, its call for the GPU path, and uses
 * COLL_GPU_REDUCTION_ENTRIES or COLL_GPU_MOVE_ENTRIES instead. A nonblocking entry also keeps its
 * arguments in a struct made from PARAMS_name (one member per parameter, read back through ARGS_name), for
 * a start that comes later (coll_gpu_request.c). Every entry hands host buffers straight to the previous
 * module: one check, and no other cost, in a process that never loaded CUDA (mca_coll_gpu_staging_possible).
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
      if (m->agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host((host_bytes), comm, m);               \
      return m->previous_##name(ARGS_##name(sbuf, rbuf), comm, m->previous_##name##_module);                 \
    }                                                                                                        \
    int rc;                                                                                                  \
    if (try_gpu(ARGS_##name(sbuf, rbuf), comm, m, &rc)) return rc;                                           \
    return staged_##name(ARGS_##name(sbuf, rbuf), comm, m);                                                  \
  }

/* A map over a parameter or argument list of up to 10 items: COLL_GPU_EACH(F, ...) is F(x) for each x,
 * COLL_GPU_LIST(F, ...) the same separated by commas. */
#define COLL_GPU_NARGS(...) COLL_GPU_NARGS_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define COLL_GPU_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, N, ...) N
#define COLL_GPU_CAT(a, b) COLL_GPU_CAT_(a, b)
#define COLL_GPU_CAT_(a, b) a##b
#define COLL_GPU_EACH(F, ...) COLL_GPU_CAT(COLL_GPU_EACH_, COLL_GPU_NARGS(__VA_ARGS__))(F, __VA_ARGS__)
#define COLL_GPU_EACH_1(F, x) F(x)
#define COLL_GPU_EACH_2(F, x, ...) F(x) COLL_GPU_EACH_1(F, __VA_ARGS__)
#define COLL_GPU_EACH_3(F, x, ...) F(x) COLL_GPU_EACH_2(F, __VA_ARGS__)
#define COLL_GPU_EACH_4(F, x, ...) F(x) COLL_GPU_EACH_3(F, __VA_ARGS__)
#define COLL_GPU_EACH_5(F, x, ...) F(x) COLL_GPU_EACH_4(F, __VA_ARGS__)
#define COLL_GPU_EACH_6(F, x, ...) F(x) COLL_GPU_EACH_5(F, __VA_ARGS__)
#define COLL_GPU_EACH_7(F, x, ...) F(x) COLL_GPU_EACH_6(F, __VA_ARGS__)
#define COLL_GPU_EACH_8(F, x, ...) F(x) COLL_GPU_EACH_7(F, __VA_ARGS__)
#define COLL_GPU_EACH_9(F, x, ...) F(x) COLL_GPU_EACH_8(F, __VA_ARGS__)
#define COLL_GPU_EACH_10(F, x, ...) F(x) COLL_GPU_EACH_9(F, __VA_ARGS__)
#define COLL_GPU_LIST(F, ...) COLL_GPU_CAT(COLL_GPU_LIST_, COLL_GPU_NARGS(__VA_ARGS__))(F, __VA_ARGS__)
#define COLL_GPU_LIST_1(F, x) F(x)
#define COLL_GPU_LIST_2(F, x, ...) F(x), COLL_GPU_LIST_1(F, __VA_ARGS__)
#define COLL_GPU_LIST_3(F, x, ...) F(x), COLL_GPU_LIST_2(F, __VA_ARGS__)
#define COLL_GPU_LIST_4(F, x, ...) F(x), COLL_GPU_LIST_3(F, __VA_ARGS__)
#define COLL_GPU_LIST_5(F, x, ...) F(x), COLL_GPU_LIST_4(F, __VA_ARGS__)
#define COLL_GPU_LIST_6(F, x, ...) F(x), COLL_GPU_LIST_5(F, __VA_ARGS__)
#define COLL_GPU_LIST_7(F, x, ...) F(x), COLL_GPU_LIST_6(F, __VA_ARGS__)
#define COLL_GPU_LIST_8(F, x, ...) F(x), COLL_GPU_LIST_7(F, __VA_ARGS__)
#define COLL_GPU_LIST_9(F, x, ...) F(x), COLL_GPU_LIST_8(F, __VA_ARGS__)
#define COLL_GPU_LIST_10(F, x, ...) F(x), COLL_GPU_LIST_9(F, __VA_ARGS__)

/* A saved argument: a member per parameter, read back through `a`; the datatypes and ops among them are
 * held (OBJ_RETAIN) while the call waits to start, since the application may free them after the call. */
#define COLL_GPU_FIELD(x) x;
#define COLL_GPU_FROM(x) a->x
#define COLL_GPU_HOLD(x)                              \
  _Generic((a->x), struct ompi_datatype_t *           \
           : coll_gpu_hold_object, struct ompi_op_t * \
           : coll_gpu_hold_object, default            \
           : coll_gpu_hold_nothing)((const void *)&a->x, hold);
static inline void coll_gpu_hold_object(const void *at, int hold) {
  opal_object_t *obj = *(opal_object_t *const *)at;
  if (obj == NULL) return;
  if (hold) {
    OBJ_RETAIN(obj);
  } else {
    OBJ_RELEASE(obj);
  }
}
static inline void coll_gpu_hold_nothing(const void *at, int hold) {
  (void)at;
  (void)hold;
}

/* The nonblocking entry of `name` through the previous module, as static istaged_name(PARAMS_name, comm,
 * request, m), and its saved form (mca_coll_gpu_saved_t): the arguments as struct coll_gpu_saved_name,
 * istart_name starting istaged_name from them, ihold_name holding or releasing their objects. */
#define COLL_GPU_SAVED(name)                                                                                \
  static int istaged_##name(PARAMS_##name, struct ompi_communicator_t *comm, ompi_request_t **request,      \
                            mca_coll_gpu_module_t *m) {                                                     \
    coll_gpu_stage_t st;                                                                                    \
    void *hs, *hr, *pending = NULL;                                                                         \
    coll_gpu_stage_init(&st);                                                                               \
    int rc = stage_##name(&st, comm, ARGS_##name(sbuf, rbuf), &hs, &hr);                                    \
    if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);                                        \
    if (rc == OMPI_SUCCESS)                                                                                 \
      rc = m->previous_i##name(ARGS_##name(hs, hr), comm, request, m->previous_i##name##_module);           \
    return mca_coll_gpu_iend(&st, rc, pending, comm, "MPI_I" #name, request);                               \
  }                                                                                                         \
  struct coll_gpu_saved_##name {                                                                            \
    COLL_GPU_EACH(COLL_GPU_FIELD, PARAMS_##name)                                                            \
  };                                                                                                        \
  _Static_assert(sizeof(struct coll_gpu_saved_##name) <= COLL_GPU_SAVED_MAX, "MPI_I" #name "'s arguments"); \
  static int istart_##name(const void *args, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,    \
                           ompi_request_t **request) {                                                      \
    const struct coll_gpu_saved_##name *a = args;                                                           \
    return istaged_##name(COLL_GPU_LIST(COLL_GPU_FROM, ARGS_##name(sbuf, rbuf)), comm, request, m);         \
  }                                                                                                         \
  static void ihold_##name(void *args, int hold) {                                                          \
    const struct coll_gpu_saved_##name *a = args;                                                           \
    COLL_GPU_EACH(COLL_GPU_HOLD, ARGS_##name(sbuf, rbuf))                                                   \
  }

/* `var`, the saved form of this call of `name` (inside its nonblocking entry). */
#define COLL_GPU_SAVE(name, var)                                       \
  struct coll_gpu_saved_##name var##_args = {ARGS_##name(sbuf, rbuf)}; \
  const mca_coll_gpu_saved_t var = {istart_##name, ihold_##name, &var##_args, sizeof(var##_args), "MPI_I" #name};

/* The nonblocking entry: in a process without CUDA straight to the previous module; otherwise staged where
 * buffers need it, and queued behind the communicator's queued calls (coll_gpu_request.c). */
#define COLL_GPU_NONBLOCKING(name)                                                                      \
  COLL_GPU_SAVED(name)                                                                                  \
  int mca_coll_gpu_i##name(PARAMS_##name, struct ompi_communicator_t *comm, ompi_request_t **request,   \
                           mca_coll_base_module_t *module) {                                            \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                         \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))                                                  \
      return m->previous_i##name(ARGS_##name(sbuf, rbuf), comm, request, m->previous_i##name##_module); \
    if (m->queue != NULL) {                                                                             \
      COLL_GPU_SAVE(name, saved)                                                                        \
      return mca_coll_gpu_defer(m, comm, NULL, &saved, request);                                        \
    }                                                                                                   \
    return istaged_##name(ARGS_##name(sbuf, rbuf), comm, request, m);                                   \
  }

/* The nonblocking entry of a collective with a GPU path: try_igpu(ARGS_name(sbuf, rbuf), comm, m, &saved,
 * request, &rc) returns 1 when it started or queued the call (rc), 0 when the call goes on through the
 * previous module. A process without CUDA posts `host_bytes` to the path agreement, as the blocking
 * entry does. */
#define COLL_GPU_NONBLOCKING_GPU(name, host_bytes, try_igpu)                                            \
  COLL_GPU_SAVED(name)                                                                                  \
  int mca_coll_gpu_i##name(PARAMS_##name, struct ompi_communicator_t *comm, ompi_request_t **request,   \
                           mca_coll_base_module_t *module) {                                            \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                         \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {                                                \
      if (m->agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host((host_bytes), comm, m);          \
      return m->previous_i##name(ARGS_##name(sbuf, rbuf), comm, request, m->previous_i##name##_module); \
    }                                                                                                   \
    COLL_GPU_SAVE(name, saved)                                                                          \
    int rc;                                                                                             \
    if (try_igpu(ARGS_##name(sbuf, rbuf), comm, m, &saved, request, &rc)) return rc;                    \
    if (m->queue != NULL) return mca_coll_gpu_defer(m, comm, NULL, &saved, request);                    \
    return istaged_##name(ARGS_##name(sbuf, rbuf), comm, request, m);                                   \
  }

/* The persistent entry through the previous module, as static pstaged_name(PARAMS_name, comm, info, request,
 * m): its request made on the bounce buffers, which every MPI_Start copies in and out. */
#define COLL_GPU_PSTAGED(name)                                                                                    \
  static int pstaged_##name(PARAMS_##name, struct ompi_communicator_t *comm, struct ompi_info_t *info,            \
                            ompi_request_t **request, mca_coll_gpu_module_t *m) {                                 \
    coll_gpu_stage_t st;                                                                                          \
    void *hs, *hr, *persistent = NULL;                                                                            \
    coll_gpu_stage_init(&st);                                                                                     \
    int rc = stage_##name(&st, comm, ARGS_##name(sbuf, rbuf), &hs, &hr);                                          \
    if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_pbegin(&st, &persistent);                                           \
    if (rc == OMPI_SUCCESS)                                                                                       \
      rc = m->previous_##name##_init(ARGS_##name(hs, hr), comm, info, request, m->previous_##name##_init_module); \
    return mca_coll_gpu_pend(&st, rc, persistent, comm, NAME_##name "_init", request);                            \
  }

#define COLL_GPU_PERSISTENT(name)                                                                           \
  COLL_GPU_PSTAGED(name)                                                                                    \
  int mca_coll_gpu_##name##_init(PARAMS_##name, struct ompi_communicator_t *comm, struct ompi_info_t *info, \
                                 ompi_request_t **request, mca_coll_base_module_t *module) {                \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                             \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))                                                      \
      return m->previous_##name##_init(ARGS_##name(sbuf, rbuf), comm, info, request,                        \
                                       m->previous_##name##_init_module);                                   \
    return pstaged_##name(ARGS_##name(sbuf, rbuf), comm, info, request, m);                                 \
  }

/* The persistent entry of a collective with a GPU path: the staged request is made as above (the previous
 * module takes its nonblocking tag at init, on every rank alike), then try_pgpu(ARGS_name(sbuf, rbuf), comm,
 * m, request) posts the call's agreement and makes it ours where the GPUs may run it (coll_gpu_request.c).
 * A process without CUDA posts `host_bytes` at init. */
#define COLL_GPU_PERSISTENT_GPU(name, host_bytes, try_pgpu)                                                 \
  COLL_GPU_PSTAGED(name)                                                                                    \
  int mca_coll_gpu_##name##_init(PARAMS_##name, struct ompi_communicator_t *comm, struct ompi_info_t *info, \
                                 ompi_request_t **request, mca_coll_base_module_t *module) {                \
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;                                             \
    if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {                                                    \
      if (m->agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host((host_bytes), comm, m);              \
      return m->previous_##name##_init(ARGS_##name(sbuf, rbuf), comm, info, request,                        \
                                       m->previous_##name##_init_module);                                   \
    }                                                                                                       \
    int rc = pstaged_##name(ARGS_##name(sbuf, rbuf), comm, info, request, m);                               \
    if (rc != OMPI_SUCCESS) return rc;                                                                      \
    rc = try_pgpu(ARGS_##name(sbuf, rbuf), comm, m, request);                                               \
    if (rc != OMPI_SUCCESS) ompi_request_free(request);                                                     \
    return rc;                                                                                              \
  }

/* The blocking, nonblocking and persistent entries of a collective with a GPU path, whose call is described
 * by GPU_name: an initializer of `type` (mca_coll_gpu_reduction_t or mca_coll_gpu_move_t) over the
 * parameters, which run, irun and prun take on the GPU path (coll_gpu_gpupath.c). host_bytes as above. */
#define COLL_GPU_GPU_ENTRIES(name, host_bytes, type, run, irun, prun)                                         \
  static int gpu_##name(PARAMS_##name, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, int *rc) { \
    const type d = GPU_##name;                                                                                \
    return run(&d, comm, m, rc);                                                                              \
  }                                                                                                           \
  static int igpu_##name(PARAMS_##name, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,           \
                         const mca_coll_gpu_saved_t *saved, ompi_request_t **request, int *rc) {              \
    const type d = GPU_##name;                                                                                \
    return irun(&d, comm, m, saved, request, rc);                                                             \
  }                                                                                                           \
  static int pgpu_##name(PARAMS_##name, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,           \
                         ompi_request_t **request) {                                                          \
    const type d = GPU_##name;                                                                                \
    return prun(&d, comm, m, request);                                                                        \
  }                                                                                                           \
  COLL_GPU_BLOCKING_GPU(name, host_bytes, gpu_##name)                                                         \
  COLL_GPU_NONBLOCKING_GPU(name, host_bytes, igpu_##name)                                                     \
  COLL_GPU_PERSISTENT_GPU(name, host_bytes, pgpu_##name)
#define COLL_GPU_REDUCTION_ENTRIES(name, host_bytes)                                           \
  COLL_GPU_GPU_ENTRIES(name, host_bytes, mca_coll_gpu_reduction_t, mca_coll_gpu_reduction_gpu, \
                       mca_coll_gpu_ireduction_gpu, mca_coll_gpu_preduction_gpu)
#define COLL_GPU_MOVE_ENTRIES(name, host_bytes)                                                              \
  COLL_GPU_GPU_ENTRIES(name, host_bytes, mca_coll_gpu_move_t, mca_coll_gpu_move_gpu, mca_coll_gpu_imove_gpu, \
                       mca_coll_gpu_pmove_gpu)

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
