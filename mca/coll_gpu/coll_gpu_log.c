/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The logger: one line per message. Open MPI's output stream puts [host:pid] first; then the component,
 * the world rank in NCCL's manner, the level and the subsystem:
 *   [node1:4242] coll:gpu [0] INFO INIT comm MPI_COMM_WORLD (cid 0) size 8: enabled over ...
 */
#include <stdarg.h>
#include <stdio.h>

#include "coll_gpu.h"
#include "opal/util/output.h"

static const char *level_name(int level) {
  if (level <= COLL_GPU_LVL_WARN) return "WARN";
  if (level <= COLL_GPU_LVL_INFO) return "INFO";
  if (level <= COLL_GPU_LVL_TRACE) return "TRACE";
  return "DEBUG";
}

const char *mca_coll_gpu_subsys_name(int subsys) {
  switch (subsys) {
    case COLL_GPU_LOG_INIT:
      return "INIT";
    case COLL_GPU_LOG_COLL:
      return "COLL";
    case COLL_GPU_LOG_STAGE:
      return "STAGE";
    case COLL_GPU_LOG_TOPO:
      return "TOPO";
    case COLL_GPU_LOG_PROXY:
      return "PROXY";
    default:
      return "?";
  }
}

void mca_coll_gpu_engine_log(int level, int subsys, const char *fmt, ...) {
  if (!mca_coll_gpu_log_on(level, subsys)) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  mca_coll_gpu_log(level, subsys, "%s", msg);
}

void mca_coll_gpu_log(int level, int subsys, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  int rank = ompi_mpi_comm_world.comm.c_my_rank;
  opal_output(mca_coll_gpu_component.output, "coll:gpu [%d] %s %s %s", rank, level_name(level),
              mca_coll_gpu_subsys_name(subsys), msg);
}
