/*
 * coll/gpu module: one per intra-communicator, on top of the module that had each collective before.
 *
 * Open MPI enables modules in increasing priority and copies each one's function pointers after its
 * enable: in our enable, comm->c_coll holds the functions of the modules below us. We save and retain
 * them, then our wrappers are installed over them.
 */
#include "coll_gpu.h"
#include "opal/util/show_help.h"

static void module_construct(mca_coll_gpu_module_t *m) {
#define COLL_GPU_CLEAR(name)          \
  m->previous_##name = NULL;          \
  m->previous_##name##_module = NULL; \
  m->previous_i##name = NULL;         \
  m->previous_i##name##_module = NULL;
  COLL_GPU_FOREACH(COLL_GPU_CLEAR)
#undef COLL_GPU_CLEAR
  m->engine = NULL;
  m->engine_state = COLL_GPU_STATE_NONE;
  m->agree = NULL;
  m->agree_state = COLL_GPU_STATE_NONE;
}

static void module_destruct(mca_coll_gpu_module_t *m) {
  coll_gpu_engine_destroy(m->engine);
  coll_gpu_agree_destroy(m->agree);
#define COLL_GPU_RELEASE(name)                                                       \
  if (m->previous_##name##_module != NULL) OBJ_RELEASE(m->previous_##name##_module); \
  if (m->previous_i##name##_module != NULL) OBJ_RELEASE(m->previous_i##name##_module);
  COLL_GPU_FOREACH(COLL_GPU_RELEASE)
#undef COLL_GPU_RELEASE
}

OBJ_CLASS_INSTANCE(mca_coll_gpu_module_t, mca_coll_base_module_t, module_construct, module_destruct);

int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
#define COLL_GPU_SAVE(name)                                                                     \
  if (comm->c_coll->coll_##name == NULL || comm->c_coll->coll_i##name == NULL) {                \
    opal_show_help("help-mpi-coll-gpu.txt", "no previous function", true, #name, comm->c_name); \
    return OMPI_ERROR;                                                                          \
  }                                                                                             \
  m->previous_##name = comm->c_coll->coll_##name;                                               \
  m->previous_##name##_module = comm->c_coll->coll_##name##_module;                             \
  OBJ_RETAIN(m->previous_##name##_module);                                                      \
  m->previous_i##name = comm->c_coll->coll_i##name;                                             \
  m->previous_i##name##_module = comm->c_coll->coll_i##name##_module;                           \
  OBJ_RETAIN(m->previous_i##name##_module);
  COLL_GPU_FOREACH(COLL_GPU_SAVE)
#undef COLL_GPU_SAVE
  COLL_GPU_LOG(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s (cid %d) size %d: enabled over allreduce of %s, iallreduce of %s", comm->c_name,
               comm->c_contextid, ompi_comm_size(comm), m->previous_allreduce_module->super.obj_class->cls_name,
               m->previous_iallreduce_module->super.obj_class->cls_name);
  return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority) {
  /* Intercommunicators keep their components (device buffers on them are not handled yet). Every
   * intra-communicator is taken, MPI_COMM_SELF too: coll/self would memcpy device pointers. */
  if (!mca_coll_gpu_component.enable || OMPI_COMM_IS_INTER(comm)) return NULL;
  mca_coll_gpu_module_t *m = OBJ_NEW(mca_coll_gpu_module_t);
  if (m == NULL) return NULL;
  *priority = mca_coll_gpu_component.priority;
  m->super.coll_module_enable = module_enable;
  if (!mca_coll_gpu_gpupath_possible(comm)) {
    m->engine_state = m->agree_state = COLL_GPU_STATE_OFF;
    COLL_GPU_LOG(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
                 "comm %s (cid %d) size %d: no GPU allreduce (it needs 2 to %d ranks on one node): allreduce on "
                 "device buffers is staged",
                 comm->c_name, comm->c_contextid, ompi_comm_size(comm), COLL_GPU_MAX_RANKS);
  }
#define COLL_GPU_INSTALL(name)                \
  m->super.coll_##name = mca_coll_gpu_##name; \
  m->super.coll_i##name = mca_coll_gpu_i##name;
  COLL_GPU_FOREACH(COLL_GPU_INSTALL)
#undef COLL_GPU_INSTALL
  return &m->super;
}
