/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Log levels and subsystems shared by the glue and the MPI-free engine.
 */
#ifndef COLL_GPU_LOG_H
#define COLL_GPU_LOG_H

/* Logging subsystems, for coll_gpu_verbose_subsys. */
enum {
  COLL_GPU_LOG_INIT = 1,
  COLL_GPU_LOG_COLL = 2,
  COLL_GPU_LOG_STAGE = 4,
  COLL_GPU_LOG_TOPO = 8,
  COLL_GPU_LOG_PROXY = 16,
  COLL_GPU_LOG_ALL = 31
};
/* Verbosity thresholds of coll_gpu_verbose, Open MPI's (MCA_BASE_VERBOSE_*): warn 20, info 40 (once per
 * communicator), trace 60 (once per call), debug 80 (per buffer, per peer). The watchdog's line about a
 * long wait is printed at every verbosity (0), as a warning. */
enum {
  COLL_GPU_LVL_WATCHDOG = 0,
  COLL_GPU_LVL_WARN = 20,
  COLL_GPU_LVL_INFO = 40,
  COLL_GPU_LVL_TRACE = 60,
  COLL_GPU_LVL_DEBUG = 80
};

/* A logger: prints when level and subsystem are enabled. */
typedef void (*coll_gpu_log_fn)(int level, int subsys, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
