/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * coll/gpu component: registration, open and close.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "coll_gpu.h"
#include "mpi.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static int gpu_register(void);
static int gpu_open(void);
static int gpu_close(void);

mca_coll_gpu_component_t mca_coll_gpu_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "gpu",
                    MCA_BASE_MAKE_VERSION(component, COLL_GPU_VERSION_MAJOR, COLL_GPU_VERSION_MINOR,
                                          COLL_GPU_VERSION_RELEASE),
                    .mca_open_component = gpu_open,
                    .mca_close_component = gpu_close,
                    .mca_register_component_params = gpu_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_gpu_init_query,
            .collm_comm_query = mca_coll_gpu_comm_query,
        },
    .output = -1,
};

/* The directory this component was loaded from, into path (with a trailing slash); 0 when unknown. */
static int component_dir(char *path, size_t len) {
  Dl_info info;
  if (dladdr((void *)&mca_coll_gpu_component, &info) == 0 || info.dli_fname == NULL) return 0;
  snprintf(path, len, "%s", info.dli_fname);
  char *slash = strrchr(path, '/');
  if (slash == NULL) return 0;
  slash[1] = '\0';
  return 1;
}

/* Help texts: beside the component when they are there (one copied elsewhere with its help file, or the
 * build tree's, where make leaves a copy beside the built component), else where they were installed. */
static void add_help_dirs(void) {
  char dir[PATH_MAX];
  if (component_dir(dir, sizeof(dir))) opal_show_help_add_dir(dir);
  opal_show_help_add_dir(COLL_GPU_HELPDIR);
}

static int gpu_register(void) {
  add_help_dirs(); /* parameter checks may already need them */
  return mca_coll_gpu_register_params();
}

/* Internal structure layouts differ between 4.1.x releases: refuse to run inside another one. */
static int check_ompi_version(void) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  int major = 0, minor = 0, release = 0;
  MPI_Get_library_version(lib, &len);
  if (sscanf(lib, "Open MPI v%d.%d.%d", &major, &minor, &release) != 3) return OMPI_SUCCESS;
  char running[64];
  snprintf(running, sizeof(running), "%d.%d.%d", major, minor, release);
  if (strcmp(running, COLL_GPU_OMPI_VERSION) == 0) return OMPI_SUCCESS;
  opal_show_help("help-mpi-coll-gpu.txt", "version mismatch", true, COLL_GPU_OMPI_VERSION, running);
  return OMPI_ERROR;
}

/* The loader sentinel (kernels/sentinel.c) is installed beside this component. */
static void name_sentinel(void) {
  char path[PATH_MAX];
  if (!component_dir(path, sizeof(path))) return;
  const size_t at = strlen(path);
  snprintf(path + at, sizeof(path) - at, "coll_gpu_sentinel.so");
  coll_gpu_mem_init(path);
}

static int gpu_open(void) {
  mca_coll_gpu_component.output = opal_output_open(NULL);
  if (check_ompi_version() != OMPI_SUCCESS) return OMPI_ERROR;
  coll_gpu_stage_cache_limit(mca_coll_gpu_component.stage_cache_size);
  coll_gpu_status_set_log(mca_coll_gpu_engine_log);
  name_sentinel();
  return OMPI_SUCCESS;
}

static int gpu_close(void) {
  mca_coll_gpu_calls_fini();
  mca_coll_gpu_agreement_fini();
  coll_gpu_stage_cache_flush();
  coll_gpu_mem_fini();
  if (mca_coll_gpu_component.output >= 0) opal_output_close(mca_coll_gpu_component.output);
  mca_coll_gpu_component.output = -1;
  return OMPI_SUCCESS;
}
