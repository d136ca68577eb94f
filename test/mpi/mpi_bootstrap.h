/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * For the MPI tests of the engine's pieces: the bootstrap interface (engine/bootstrap.h) over an MPI
 * communicator (ctx points to it), and EXPECT, which counts a failure in the test's `failures` and
 * prints it with the test's `rank`.
 */
#ifndef COLL_GPU_TEST_MPI_BOOTSTRAP_H
#define COLL_GPU_TEST_MPI_BOOTSTRAP_H

#include <mpi.h>
#include <stdio.h>

#define EXPECT(cond, ...)                                 \
  do {                                                    \
    if (!(cond)) {                                        \
      ++failures;                                         \
      fprintf(stderr, "rank %d: FAIL %s: ", rank, #cond); \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
    }                                                     \
  } while (0)

static inline int mpi_allgather(void *ctx, const void *send, void *recv, size_t bytes) {
  return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, *(MPI_Comm *)ctx);
}
static inline int mpi_bcast(void *ctx, void *buf, size_t bytes, int root) {
  return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, *(MPI_Comm *)ctx);
}
static inline int mpi_barrier(void *ctx) { return MPI_Barrier(*(MPI_Comm *)ctx); }

#endif
