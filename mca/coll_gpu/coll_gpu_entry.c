/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The entry points' common part (coll_gpu_entry.h): a call on buffers that may need staging, in each form, from
 * its arguments' record and its collective's row.
 */
#include "coll_gpu_entry.h"

_Static_assert(sizeof(mca_coll_gpu_coll_args_t) <= COLL_GPU_SAVED_MAX, "a saved call's arguments");

/* The call through the previous module, blocking, its buffers staged where they need it. */
static int staged(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) {
  coll_gpu_stage_t st;
  void *hs, *hr;
  coll_gpu_stage_init(&st);
  int rc = a->coll->stage(&st, comm, a, &hs, &hr);
  if (rc == OMPI_SUCCESS) {
    ++mca_coll_gpu_nesting;
    rc = a->coll->previous(a, hs, hr, comm, m, COLL_GPU_BLOCKING, NULL, NULL);
    --mca_coll_gpu_nesting;
  }
  return mca_coll_gpu_unstage(&st, rc, comm, a->coll->name);
}

/* The call's plan on the GPU path (coll_gpu_gpupath.c): 1 where its collective has one and the call takes part in
 * the agreement. */
static int planned(const mca_coll_gpu_coll_args_t *a, int blocking, struct ompi_communicator_t *comm,
                   mca_coll_gpu_module_t *m, mca_coll_gpu_plan_t *pl) {
  if (a->coll->reduction != NULL) {
    const mca_coll_gpu_reduction_t rd = a->coll->reduction(a);
    return mca_coll_gpu_plan_reduction(&rd, blocking, comm, m, pl);
  }
  if (a->coll->move != NULL) {
    const mca_coll_gpu_move_t mv = a->coll->move(a, comm, m);
    return mca_coll_gpu_plan_move(&mv, blocking, comm, m, pl);
  }
  return 0;
}

int mca_coll_gpu_blocking(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                          mca_coll_gpu_module_t *m) {
  mca_coll_gpu_plan_t pl;
  int rc;
  if (planned(a, 1, comm, m, &pl) && mca_coll_gpu_run_blocking(&pl, comm, m, &rc)) return rc;
  return staged(a, comm, m);
}

/* The call through the previous module, started now, its buffers staged where they need it (copied back when its
 * request completes). */
static int istaged(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm, ompi_request_t **request,
                   mca_coll_gpu_module_t *m) {
  coll_gpu_stage_t st;
  void *hs, *hr, *pending = NULL;
  coll_gpu_stage_init(&st);
  int rc = a->coll->stage(&st, comm, a, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_ibegin(&st, &pending);
  if (rc == OMPI_SUCCESS) rc = a->coll->previous(a, hs, hr, comm, m, COLL_GPU_NONBLOCKING, NULL, request);
  return mca_coll_gpu_iend(&st, rc, pending, comm, a->coll->iname, request);
}

/* A queued call's start, from its saved arguments. */
static int istart(const void *args, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                  ompi_request_t **request) {
  return istaged((const mca_coll_gpu_coll_args_t *)args, comm, request, m);
}

static void hold_object(void *at, int hold) {
  opal_object_t *obj = at;
  if (obj == NULL) return;
  if (hold) {
    OBJ_RETAIN(obj);
  } else {
    OBJ_RELEASE(obj);
  }
}

/* Retains (1) or releases (0) the datatypes and the op a saved call names. */
static void ihold(void *args, int hold) {
  const mca_coll_gpu_coll_args_t *a = args;
  hold_object(a->dtype, hold);
  hold_object(a->sdtype, hold);
  hold_object(a->rdtype, hold);
  hold_object(a->op, hold);
}

int mca_coll_gpu_nonblocking(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_gpu_module_t *m) {
  const mca_coll_gpu_saved_t saved = {istart, ihold, a, sizeof(*a), a->coll->iname};
  mca_coll_gpu_plan_t pl;
  int rc;
  if (planned(a, 0, comm, m, &pl) && mca_coll_gpu_icall(&pl, comm, m, &saved, request, &rc)) return rc;
  if (coll_gpu_calls_queued(&m->calls)) return mca_coll_gpu_defer(m, comm, NULL, &saved, request);
  return istaged(a, comm, request, m);
}

int mca_coll_gpu_persistent(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                            struct ompi_info_t *info, ompi_request_t **request, mca_coll_gpu_module_t *m) {
  coll_gpu_stage_t st;
  void *hs, *hr, *persistent = NULL;
  coll_gpu_stage_init(&st);
  int rc = a->coll->stage(&st, comm, a, &hs, &hr);
  if (rc == OMPI_SUCCESS) rc = mca_coll_gpu_pbegin(&st, &persistent);
  if (rc == OMPI_SUCCESS) rc = a->coll->previous(a, hs, hr, comm, m, COLL_GPU_PERSISTENT, info, request);
  rc = mca_coll_gpu_pend(&st, rc, persistent, comm, a->coll->pname, request);
  if (rc != OMPI_SUCCESS) return rc;
  mca_coll_gpu_plan_t pl;
  if (planned(a, 0, comm, m, &pl)) rc = mca_coll_gpu_pcall(&pl, comm, m, request);
  if (rc != OMPI_SUCCESS) ompi_request_free(request);
  return rc;
}
