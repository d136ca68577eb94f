/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Which coll component runs MPI_Allreduce and MPI_Ibcast on each kind of communicator: the shared
 * object that holds the installed function tells. With coll/gpu active, every communicator (world,
 * dup, split, self, an intercommunicator) must be ours, and so must the persistent and neighborhood
 * functions and MPI_COMM_SELF's reduce_local (what MPI_Reduce_local calls).
 *
 * usage: test_select gpu|other   (what intra-communicators must use)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

static int failures, checks;

static int is_gpu(void *fn) {
  Dl_info info;
  if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_fname == NULL) return 0;
  return strstr(info.dli_fname, "mca_coll_gpu") != NULL;
}

static void expect(MPI_Comm comm, const char *name, int want_gpu) {
  ompi_communicator_t *c = (ompi_communicator_t *)comm;
  int got = is_gpu((void *)c->c_coll->coll_allreduce) && is_gpu((void *)c->c_coll->coll_ibcast) &&
            is_gpu((void *)c->c_coll->coll_bcast_init) &&
            (OMPI_COMM_IS_INTER(c) || is_gpu((void *)c->c_coll->coll_reduce_local));
  checks++;
  if (got != want_gpu) {
    failures++;
    fprintf(stderr, "FAIL %s: collectives %s coll/gpu, expected %s\n", name, got ? "from" : "not from",
            want_gpu ? "coll/gpu" : "another component");
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int want = argc > 1 && strcmp(argv[1], "gpu") == 0;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
  expect(MPI_COMM_WORLD, "MPI_COMM_WORLD", want);
  expect(dup, "a dup of MPI_COMM_WORLD", want);
  expect(split, "a split of MPI_COMM_WORLD", want);
  expect(MPI_COMM_SELF, "MPI_COMM_SELF", want);
  if (size >= 2) {
    MPI_Comm inter;
    MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 99, &inter);
    expect(inter, "an intercommunicator", want);
    MPI_Comm_free(&inter);
  }
  MPI_Comm cart;
  int dims[1] = {size}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
  expect(cart, "a Cartesian communicator", want);
  checks++;
  if (is_gpu((void *)((ompi_communicator_t *)cart)->c_coll->coll_ineighbor_alltoall) != want) {
    failures++;
    fprintf(stderr, "FAIL a Cartesian communicator: MPI_Ineighbor_alltoall %s coll/gpu\n", want ? "not from" : "from");
  }
  MPI_Comm_free(&cart);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&split);
  int all[2] = {checks, failures}, sum[2];
  MPI_Allreduce(all, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_select: %d ranks, expect %s: %d checks, %d failed\n", size, want ? "gpu" : "other", sum[0], sum[1]);
  MPI_Finalize();
  return sum[1] == 0 ? 0 : 1;
}
