/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Data movement: bcast, allgather(v), alltoall(v,w), blocking, nonblocking and persistent (the entries' common
 * part: coll_gpu_entry.h), on intra- and intercommunicators; gather(v) and scatter(v) are in coll_gpu_colls_rooted.c.
 * Send blocks go in, receive blocks come out; in place, the receive buffer goes in and out. Blocks are counted over
 * the ranks a rank exchanges with: the communicator's for an intra-communicator, the remote group's for an
 * intercommunicator (mca_coll_gpu_peers). Arguments MPI leaves undefined (a non-root's receive buffer, a send count
 * in place) are never read. MPI_Bcast, MPI_Allgather and MPI_Alltoall run on the GPUs when every rank passes device
 * memory (coll_gpu_gpupath.c), and so do MPI_Allgatherv and MPI_Alltoallv of equal blocks in rank order (below).
 */
#include "coll_gpu_entry.h"

/* ------------------------------------------------------------------ MPI_Bcast: in at the root, out elsewhere */

static int stage_bcast(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                       void **hs, void **hr) {
  *hs = NULL;
  *hr = a->rbuf;
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, a->root);
  if (role == COLL_GPU_NOT_INVOLVED) return OMPI_SUCCESS;
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(a->dtype, (size_t)a->count, &bytes);
  return mca_coll_gpu_stage(st, a->rbuf, span, bytes, role == COLL_GPU_ROOT ? COLL_GPU_IN : COLL_GPU_OUT, hr);
}
static int previous_bcast(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr, struct ompi_communicator_t *comm,
                          mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form, struct ompi_info_t *info,
                          ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_bcast(hr, a->count, a->dtype, a->root, comm, m->previous_bcast_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ibcast(hr, a->count, a->dtype, a->root, comm, request, m->previous_ibcast_module);
    default:
      return m->previous_bcast_init(hr, a->count, a->dtype, a->root, comm, info, request,
                                    m->previous_bcast_init_module);
  }
}

static mca_coll_gpu_move_t gpu_bcast(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                     mca_coll_gpu_module_t *m) {
  (void)comm;
  (void)m;
  const mca_coll_gpu_move_t mv = {COLL_GPU_COLL_BCAST, NULL, 0, NULL, a->rbuf, a->count, a->dtype, a->root};
  return mv;
}
static const mca_coll_gpu_collective_t bcast = {"MPI_Bcast",    "MPI_Ibcast", "MPI_Bcast_init", stage_bcast,
                                                previous_bcast, NULL,         gpu_bcast};
static mca_coll_gpu_coll_args_t bcast_args(void *buf, int count, struct ompi_datatype_t *dtype, int root) {
  const mca_coll_gpu_coll_args_t a = {&bcast, .rbuf = buf, .count = count, .dtype = dtype, .root = root};
  return a;
}

int mca_coll_gpu_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_bcast(buf, count, dtype, root, comm, m->previous_bcast_module);
  }
  const mca_coll_gpu_coll_args_t a = bcast_args(buf, count, dtype, root);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_ibcast(buf, count, dtype, root, comm, request, m->previous_ibcast_module);
  }
  const mca_coll_gpu_coll_args_t a = bcast_args(buf, count, dtype, root);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(dtype, count), comm, m);
    return m->previous_bcast_init(buf, count, dtype, root, comm, info, request, m->previous_bcast_init_module);
  }
  const mca_coll_gpu_coll_args_t a = bcast_args(buf, count, dtype, root);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Allgather(v): a block from every peer */

/* ------------------------------------------------------------------ MPI_Allgatherv and MPI_Alltoallv on the GPUs */

/* Where every block has one count and the blocks lie one after another in rank order (osu_allgatherv's and
 * osu_alltoallv's layout), MPI_Allgatherv and MPI_Alltoallv run as MPI_Allgather and MPI_Alltoall from the
 * first block on (mca_coll_gpu_move_t's counted). Which calls take part in the path agreement is decided
 * from what is alike on every rank: allgatherv's counts (every rank's send count, the same list everywhere),
 * the communicator, the parameters. Then each rank whose own layout (displacements, alltoallv's counts) is
 * another says so: the call then runs on every rank as the zero-copy call with counts (any counts and
 * displacements, on one node of at most COLL_GPU_MAX_DIRECT ranks: coll_gpu_gpupath.c's plan_move), blocking,
 * nonblocking and persistent alike. Across hosts, and with coll_gpu_uniform_buffers (no agreement to bring
 * the layouts together), they stage. */
static int equal_counts(const int *counts, size_t n) {
  for (size_t i = 1; i < n; ++i)
    if (counts[i] != counts[0]) return 0;
  return 1;
}

/* Whether displs puts the blocks of `count` one after another in rank order. */
static int in_order(const int *displs, int count, size_t n) {
  for (size_t i = 1; i < n; ++i)
    if ((long long)displs[i] != (long long)displs[0] + (long long)i * count) return 0;
  return 1;
}

/* The buffer from displacement `displ` of dt on. */
static void *displaced(const void *buf, int displ, struct ompi_datatype_t *dt) {
  ptrdiff_t lb, extent;
  ompi_datatype_get_extent(dt, &lb, &extent);
  return (char *)buf + (ptrdiff_t)displ * extent;
}

/* Whether an allgatherv of these counts stages on every rank alike, without the agreement. */
static int allgatherv_staged(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, const int *rcounts) {
  return mca_coll_gpu_counted_staged(comm, m) || (equal_counts(rcounts, mca_coll_gpu_peers(comm)) && rcounts[0] == 0);
}

static int stage_allgather(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                           void **hs, void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = coll_gpu_span_if(a->sbuf, a->sdtype, (size_t)a->scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(a->rdtype, (size_t)a->rcount * mca_coll_gpu_peers(comm), &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_allgather(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                              struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                              struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_allgather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm,
                                   m->previous_allgather_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iallgather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, request,
                                    m->previous_iallgather_module);
    default:
      return m->previous_allgather_init(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, info, request,
                                        m->previous_allgather_init_module);
  }
}

static mca_coll_gpu_move_t gpu_allgather(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                         mca_coll_gpu_module_t *m) {
  (void)comm;
  (void)m;
  const mca_coll_gpu_move_t mv = {
      COLL_GPU_COLL_ALLGATHER, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, 0};
  return mv;
}
static const mca_coll_gpu_collective_t allgather = {
    "MPI_Allgather", "MPI_Iallgather", "MPI_Allgather_init", stage_allgather, previous_allgather, NULL, gpu_allgather};
static mca_coll_gpu_coll_args_t allgather_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                               int rcount, struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&allgather,   .sbuf = sbuf,     .scount = scount, .sdtype = sdtype,
                                      .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(rdtype, rcount), comm, m);
    return m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous_allgather_module);
  }
  const mca_coll_gpu_coll_args_t a = allgather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(rdtype, rcount), comm, m);
    return m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                  m->previous_iallgather_module);
  }
  const mca_coll_gpu_coll_args_t a = allgather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(rdtype, rcount), comm, m);
    return m->previous_allgather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                      m->previous_allgather_init_module);
  }
  const mca_coll_gpu_coll_args_t a = allgather_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Allgatherv */

static int stage_allgatherv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                            void **hs, void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = coll_gpu_span_if(a->sbuf, a->sdtype, (size_t)a->scount, &sbytes);
  coll_gpu_span_t rspan =
      mca_coll_gpu_span_v(a->rdtype, (int)mca_coll_gpu_peers(comm), a->rcounts, a->rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_allgatherv(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                               struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                               struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_allgatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm,
                                    m->previous_allgatherv_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_iallgatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm, request,
                                     m->previous_iallgatherv_module);
    default:
      return m->previous_allgatherv_init(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm, info,
                                         request, m->previous_allgatherv_init_module);
  }
}

static mca_coll_gpu_move_t gpu_allgatherv(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                          mca_coll_gpu_module_t *m) {
  const size_t n = mca_coll_gpu_peers(comm);
  mca_coll_gpu_move_t mv = {COLL_GPU_COLL_ALLGATHER,
                            a->sbuf,
                            a->scount,
                            a->sdtype,
                            a->rbuf,
                            0,
                            a->rdtype,
                            0,
                            "MPI_Allgatherv",
                            0,
                            0,
                            NULL,
                            NULL,
                            a->rcounts,
                            a->rdispls,
                            a->sbuf,
                            a->rbuf};
  mv.staged = allgatherv_staged(comm, m, a->rcounts);
  if (mv.staged) return mv;
  mv.unlike = !equal_counts(a->rcounts, n) || !in_order(a->rdispls, a->rcounts[0], n);
  if (mv.unlike) return mv;
  mv.rcount = a->rcounts[0];
  mv.rbuf = displaced(a->rbuf, a->rdispls[0], a->rdtype);
  return mv;
}
static const mca_coll_gpu_collective_t allgatherv = {"MPI_Allgatherv", "MPI_Iallgatherv",   "MPI_Allgatherv_init",
                                                     stage_allgatherv, previous_allgatherv, NULL,
                                                     gpu_allgatherv};
static mca_coll_gpu_coll_args_t allgatherv_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                                void *rbuf, const int *rcounts, const int *displs,
                                                struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&allgatherv,  .sbuf = sbuf,       .scount = scount,  .sdtype = sdtype,
                                      .rbuf = rbuf, .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                            const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(allgatherv_staged(comm, m, rcounts) ? 0 : 1, comm, m);
    return m->previous_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                  m->previous_allgatherv_module);
  }
  const mca_coll_gpu_coll_args_t a = allgatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                             const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(allgatherv_staged(comm, m, rcounts) ? 0 : 1, comm, m);
    return m->previous_iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, request,
                                   m->previous_iallgatherv_module);
  }
  const mca_coll_gpu_coll_args_t a = allgatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_allgatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                 const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                                 mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF)
      mca_coll_gpu_path_host(allgatherv_staged(comm, m, rcounts) ? 0 : 1, comm, m);
    return m->previous_allgatherv_init(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, info, request,
                                       m->previous_allgatherv_init_module);
  }
  const mca_coll_gpu_coll_args_t a = allgatherv_args(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Alltoall(v,w): a block to and from every peer
 */

static int stage_alltoall(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                          void **hs, void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = coll_gpu_span_if(a->sbuf, a->sdtype, (size_t)a->scount * mca_coll_gpu_peers(comm), &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(a->rdtype, (size_t)a->rcount * mca_coll_gpu_peers(comm), &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_alltoall(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                             struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                             struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_alltoall(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm,
                                  m->previous_alltoall_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ialltoall(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, request,
                                   m->previous_ialltoall_module);
    default:
      return m->previous_alltoall_init(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, comm, info, request,
                                       m->previous_alltoall_init_module);
  }
}

static mca_coll_gpu_move_t gpu_alltoall(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                        mca_coll_gpu_module_t *m) {
  (void)comm;
  (void)m;
  const mca_coll_gpu_move_t mv = {
      COLL_GPU_COLL_ALLTOALL, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, 0};
  return mv;
}
static const mca_coll_gpu_collective_t alltoall = {
    "MPI_Alltoall", "MPI_Ialltoall", "MPI_Alltoall_init", stage_alltoall, previous_alltoall, NULL, gpu_alltoall};
static mca_coll_gpu_coll_args_t alltoall_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                              int rcount, struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&alltoall,    .sbuf = sbuf,     .scount = scount, .sdtype = sdtype,
                                      .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(rdtype, rcount), comm, m);
    return m->previous_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous_alltoall_module);
  }
  const mca_coll_gpu_coll_args_t a = alltoall_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(rdtype, rcount), comm, m);
    return m->previous_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                 m->previous_ialltoall_module);
  }
  const mca_coll_gpu_coll_args_t a = alltoall_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    if (m->gpu.agree_state != COLL_GPU_STATE_OFF) mca_coll_gpu_path_host(coll_gpu_bytes(rdtype, rcount), comm, m);
    return m->previous_alltoall_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
                                     m->previous_alltoall_init_module);
  }
  const mca_coll_gpu_coll_args_t a = alltoall_args(sbuf, scount, sdtype, rbuf, rcount, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Alltoallv */

static int stage_alltoallv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                           void **hs, void **hr) {
  const int n = (int)mca_coll_gpu_peers(comm);
  size_t sbytes = 0, rbytes;
  coll_gpu_span_t sspan = {0, 0};
  if (a->sbuf != MPI_IN_PLACE) sspan = mca_coll_gpu_span_v(a->sdtype, n, a->scounts, a->sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(a->rdtype, n, a->rcounts, a->rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_alltoallv(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                              struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                              struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_alltoallv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm,
                                   m->previous_alltoallv_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ialltoallv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, comm,
                                    request, m->previous_ialltoallv_module);
    default:
      return m->previous_alltoallv_init(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype,
                                        comm, info, request, m->previous_alltoallv_init_module);
  }
}

static mca_coll_gpu_move_t gpu_alltoallv(const mca_coll_gpu_coll_args_t *a, struct ompi_communicator_t *comm,
                                         mca_coll_gpu_module_t *m) {
  const size_t n = mca_coll_gpu_peers(comm);
  mca_coll_gpu_move_t mv = {COLL_GPU_COLL_ALLTOALL,
                            a->sbuf,
                            0,
                            a->sdtype,
                            a->rbuf,
                            0,
                            a->rdtype,
                            0,
                            "MPI_Alltoallv",
                            0,
                            0,
                            a->scounts,
                            a->sdispls,
                            a->rcounts,
                            a->rdispls,
                            a->sbuf,
                            a->rbuf};
  mv.staged = mca_coll_gpu_counted_staged(comm, m);
  if (mv.staged) return mv;
  /* in place (no send counts) the alltoall stages anyway */
  mv.unlike = a->sbuf == MPI_IN_PLACE || !equal_counts(a->scounts, n) || !equal_counts(a->rcounts, n) ||
              !in_order(a->sdispls, a->scounts[0], n) || !in_order(a->rdispls, a->rcounts[0], n);
  if (mv.unlike) return mv;
  mv.scount = a->scounts[0];
  mv.rcount = a->rcounts[0];
  mv.sbuf = displaced(a->sbuf, a->sdispls[0], a->sdtype);
  mv.rbuf = displaced(a->rbuf, a->rdispls[0], a->rdtype);
  return mv;
}
static const mca_coll_gpu_collective_t alltoallv = {
    "MPI_Alltoallv", "MPI_Ialltoallv", "MPI_Alltoallv_init", stage_alltoallv, previous_alltoallv, NULL, gpu_alltoallv};
static mca_coll_gpu_coll_args_t alltoallv_args(const void *sbuf, const int *scounts, const int *sdispls,
                                               struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                               const int *rdispls, struct ompi_datatype_t *rdtype) {
  const mca_coll_gpu_coll_args_t a = {&alltoallv,         .sbuf = sbuf,       .scounts = scounts,
                                      .sdispls = sdispls, .sdtype = sdtype,   .rbuf = rbuf,
                                      .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype};
  return a;
}

int mca_coll_gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                           void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm,
                                 m->previous_alltoallv_module);
  }
  const mca_coll_gpu_coll_args_t a = alltoallv_args(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, request,
                                  m->previous_ialltoallv_module);
  }
  const mca_coll_gpu_coll_args_t a = alltoallv_args(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                                struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible())) {
    mca_coll_gpu_counted_host(comm, m);
    return m->previous_alltoallv_init(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, info,
                                      request, m->previous_alltoallv_init_module);
  }
  const mca_coll_gpu_coll_args_t a = alltoallv_args(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}

/* ------------------------------------------------------------------ MPI_Alltoallw */

static int stage_alltoallw(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const mca_coll_gpu_coll_args_t *a,
                           void **hs, void **hr) {
  const int n = (int)mca_coll_gpu_peers(comm);
  size_t sbytes = 0, rbytes;
  coll_gpu_span_t sspan = {0, 0};
  if (a->sbuf != MPI_IN_PLACE) sspan = mca_coll_gpu_span_w(a->sdtypes, n, a->scounts, a->sdispls, NULL, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_w(a->rdtypes, n, a->rcounts, a->rdispls, NULL, &rbytes);
  return mca_coll_gpu_stage_pair(st, a->sbuf, sspan, sbytes, a->rbuf, rspan, rbytes, hs, hr);
}
static int previous_alltoallw(const mca_coll_gpu_coll_args_t *a, const void *hs, void *hr,
                              struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, mca_coll_gpu_form_t form,
                              struct ompi_info_t *info, ompi_request_t **request) {
  switch (form) {
    case COLL_GPU_BLOCKING:
      return m->previous_alltoallw(hs, a->scounts, a->sdispls, a->sdtypes, hr, a->rcounts, a->rdispls, a->rdtypes, comm,
                                   m->previous_alltoallw_module);
    case COLL_GPU_NONBLOCKING:
      return m->previous_ialltoallw(hs, a->scounts, a->sdispls, a->sdtypes, hr, a->rcounts, a->rdispls, a->rdtypes,
                                    comm, request, m->previous_ialltoallw_module);
    default:
      return m->previous_alltoallw_init(hs, a->scounts, a->sdispls, a->sdtypes, hr, a->rcounts, a->rdispls, a->rdtypes,
                                        comm, info, request, m->previous_alltoallw_init_module);
  }
}

static const mca_coll_gpu_collective_t alltoallw = {
    "MPI_Alltoallw", "MPI_Ialltoallw", "MPI_Alltoallw_init", stage_alltoallw, previous_alltoallw, NULL, NULL};
static mca_coll_gpu_coll_args_t alltoallw_args(const void *sbuf, const int *scounts, const int *sdispls,
                                               struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                               const int *rdispls, struct ompi_datatype_t *const *rdtypes) {
  const mca_coll_gpu_coll_args_t a = {&alltoallw,         .sbuf = sbuf,       .scounts = scounts,
                                      .sdispls = sdispls, .sdtypes = sdtypes, .rbuf = rbuf,
                                      .rcounts = rcounts, .rdispls = rdispls, .rdtypes = rdtypes};
  return a;
}

int mca_coll_gpu_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                           struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                           struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm,
                                 m->previous_alltoallw_module);
  const mca_coll_gpu_coll_args_t a = alltoallw_args(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
  return mca_coll_gpu_blocking(&a, comm, m);
}

int mca_coll_gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                            struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, request,
                                  m->previous_ialltoallw_module);
  const mca_coll_gpu_coll_args_t a = alltoallw_args(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
  return mca_coll_gpu_nonblocking(&a, comm, request, m);
}

int mca_coll_gpu_alltoallw_init(const void *sbuf, const int *scounts, const int *sdispls,
                                struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                                const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                                mca_coll_base_module_t *module) {
  mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *)module;
  if (OPAL_LIKELY(!mca_coll_gpu_staging_possible()))
    return m->previous_alltoallw_init(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, info,
                                      request, m->previous_alltoallw_init_module);
  const mca_coll_gpu_coll_args_t a = alltoallw_args(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes);
  return mca_coll_gpu_persistent(&a, comm, info, request, m);
}
