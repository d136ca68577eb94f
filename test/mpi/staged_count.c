/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * coll/gpu's MPI_T performance variable coll_gpu_staged_buffers, for the tests that check which
 * buffers a call staged, its integer parameters as a run sets them, and whether the run spans hosts or nodes
 * (colls.h).
 */
#include <stdio.h>

#include "test/mpi/colls.h"

static MPI_T_pvar_session session;
static MPI_T_pvar_handle counter;

void staged_count_open(void) {
  int provided, index, count;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  if (MPI_T_pvar_get_index("coll_gpu_staged_buffers", MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS ||
      MPI_T_pvar_session_create(&session) != MPI_SUCCESS ||
      MPI_T_pvar_handle_alloc(session, index, NULL, &counter, &count) != MPI_SUCCESS) {
    fprintf(stderr, "the MPI_T variable coll_gpu_staged_buffers cannot be read\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

unsigned long long staged_count(void) {
  unsigned long long v = 0;
  MPI_T_pvar_read(session, counter, &v);
  return v;
}

int gpu_param_int(const char *name, int dflt) {
  int provided, index, count, v = dflt;
  MPI_T_cvar_handle h;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &h, &count) == MPI_SUCCESS) {
    if (MPI_T_cvar_read(h, &v) != MPI_SUCCESS) v = dflt;
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return v;
}

bool gpu_node_shm(void) { return gpu_param_int("coll_gpu_node_transport", 0) == 1; /* auto -1, ipc 0, shm 1 */ }

bool one_host(void) {
  static int known = -1;
  if (known < 0) {
    MPI_Comm node;
    int size = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &size);
    MPI_Comm_free(&node);
    known = size == nranks;
  }
  return known;
}

bool one_node(void) {
  static int known = -1;
  if (known < 0) {
    const int per_node = gpu_param_int("coll_gpu_virtual_nodes", 0);
    known = one_host() && !(per_node > 0 && per_node < nranks);
  }
  return known;
}
