/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * coll/gpu module: one per intra-communicator, on top of the module that had each collective before.
 *
 * Open MPI enables modules in increasing priority and copies each one's function pointers after its
 * enable: in our enable, comm->c_coll holds the functions of the modules below us. We save and retain
 * them, then our wrappers are installed over them (COLL_GPU_FOREACH's families and reduce_local).
 */
#include "coll_gpu.h"
#include "opal/util/show_help.h"

#define COLL_GPU_CLEAR(fn) \
  m->previous_##fn = NULL; \
  m->previous_##fn##_module = NULL;
#define COLL_GPU_CLEAR_ALL(name) COLL_GPU_CLEAR(name) COLL_GPU_CLEAR(i##name) COLL_GPU_CLEAR(name##_init)

static void module_construct(mca_coll_gpu_module_t *m) {
  COLL_GPU_FOREACH(COLL_GPU_CLEAR_ALL)
  COLL_GPU_CLEAR(reduce_local)
  COLL_GPU_CLEAR(ibarrier)
  coll_gpu_hold_init(&m->gpu);
  m->agree = NULL;
  m->agree_net = NULL;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&m->agree_mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  m->hosts = 0;
  m->comm = NULL;
  memset(&m->calls, 0, sizeof(m->calls));
  m->running = NULL;
  m->busy = 0;
  m->next_busy = NULL;
}

#define COLL_GPU_RELEASE(fn) \
  if (m->previous_##fn##_module != NULL) OBJ_RELEASE(m->previous_##fn##_module);
#define COLL_GPU_RELEASE_ALL(name) COLL_GPU_RELEASE(name) COLL_GPU_RELEASE(i##name) COLL_GPU_RELEASE(name##_init)

static void module_destruct(mca_coll_gpu_module_t *m) {
  mca_coll_gpu_calls_module_gone(m);
  coll_gpu_engine_release(m->gpu.engine); /* freed with the last communicator that shares it */
  coll_gpu_agree_destroy(m->agree);
  mca_coll_gpu_agree_net_free(m);
  free(m->calls.late);
  free(m->calls.missing);
  pthread_mutex_destroy(&m->agree_mutex);
  COLL_GPU_FOREACH(COLL_GPU_RELEASE_ALL)
  COLL_GPU_RELEASE(reduce_local)
  COLL_GPU_RELEASE(ibarrier)
}

OBJ_CLASS_INSTANCE(mca_coll_gpu_module_t, mca_coll_base_module_t, module_construct, module_destruct);

int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}

/* Saves the function below us, or, where there is none (scan on an intercommunicator, neighborhood
 * collectives where no component offers them), withdraws ours so that Open MPI keeps what it had. */
#define COLL_GPU_SAVE(fn)                                         \
  if (comm->c_coll->coll_##fn != NULL) {                          \
    m->previous_##fn = comm->c_coll->coll_##fn;                   \
    m->previous_##fn##_module = comm->c_coll->coll_##fn##_module; \
    OBJ_RETAIN(m->previous_##fn##_module);                        \
  } else {                                                        \
    m->super.coll_##fn = NULL;                                    \
  }
#define COLL_GPU_SAVE_ALL(name) COLL_GPU_SAVE(name) COLL_GPU_SAVE(i##name) COLL_GPU_SAVE(name##_init)

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  COLL_GPU_FOREACH(COLL_GPU_SAVE_ALL)
  COLL_GPU_SAVE(reduce_local)
  COLL_GPU_SAVE(ibarrier)
  if (m->previous_allreduce == NULL || m->previous_bcast == NULL) {
    opal_show_help("help-mpi-coll-gpu.txt", "no previous function", true, "allreduce or bcast", comm->c_name);
    return OMPI_ERROR;
  }
  char path[96] = "";
  if (m->gpu.engine_state == COLL_GPU_STATE_OFF)
    snprintf(path, sizeof(path), "; no GPU path (it needs an intra-communicator of 2 to %d ranks)",
             COLL_GPU_MAX_COMM_RANKS);
  COLL_GPU_LOG(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s (cid %d) size %d%s: enabled over allreduce of %s, iallreduce of %s%s", comm->c_name,
               comm->c_contextid, ompi_comm_size(comm), OMPI_COMM_IS_INTER(comm) ? " (intercommunicator)" : "",
               m->previous_allreduce_module->super.obj_class->cls_name,
               m->previous_iallreduce != NULL ? m->previous_iallreduce_module->super.obj_class->cls_name : "none",
               path);
  return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority) {
  /* Every communicator is taken, MPI_COMM_SELF too (coll/self would memcpy device pointers, and
   * MPI_Reduce_local goes through its table), intercommunicators too (coll/inter is not CUDA-aware). */
  coll_gpu_agree_key_t key;
  uint64_t instance = 0;
  const int gpu_path = !OMPI_COMM_IS_INTER(comm) && mca_coll_gpu_gpupath_possible(comm);
  if (gpu_path) mca_coll_gpu_agreement_key(comm, &key, &instance);
  if (!mca_coll_gpu_component.enable) return NULL;
  mca_coll_gpu_module_t *m = OBJ_NEW(mca_coll_gpu_module_t);
  if (m == NULL) return NULL;
  *priority = mca_coll_gpu_component.priority;
  m->super.coll_module_enable = module_enable;
  m->comm = comm;
  mca_coll_gpu_calls_init(m);
  if (!gpu_path) {
    coll_gpu_hold_off(&m->gpu); /* said in module_enable's line */
  } else {
    m->agree_key = key;
    m->agree_instance = instance;
  }
#define COLL_GPU_INSTALL(name)                  \
  m->super.coll_##name = mca_coll_gpu_##name;   \
  m->super.coll_i##name = mca_coll_gpu_i##name; \
  m->super.coll_##name##_init = mca_coll_gpu_##name##_init;
  COLL_GPU_FOREACH(COLL_GPU_INSTALL)
#undef COLL_GPU_INSTALL
  m->super.coll_reduce_local = mca_coll_gpu_reduce_local;
  m->super.coll_ibarrier = mca_coll_gpu_ibarrier;
  return &m->super;
}
