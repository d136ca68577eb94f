/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Data movement: bcast, gather(v), scatter(v), allgather(v), alltoall(v,w), blocking, nonblocking and
 * persistent (coll_gpu_wrap.h), on intra- and intercommunicators. Send blocks go in, receive blocks come
 * out; in place, the receive buffer goes in and out. Blocks are counted over the ranks a rank exchanges
 * with: the communicator's for an intra-communicator, the remote group's for an intercommunicator.
 * Arguments MPI leaves undefined (a non-root's receive buffer, a send count in place) are never read.
 * MPI_Bcast, MPI_Allgather and MPI_Alltoall run on the GPUs when every rank passes device memory
 * (coll_gpu_gpupath.c), and so do MPI_Allgatherv and MPI_Alltoallv of equal blocks in rank order (below).
 */
#include "coll_gpu_wrap.h"

/* The ranks a rank sends blocks to and receives blocks from (Open MPI's remote size is 0 on an
 * intra-communicator). */
static size_t peers(struct ompi_communicator_t *comm) {
  return (size_t)(OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm));
}

/* ------------------------------------------------------------------ MPI_Bcast: in at the root, out elsewhere */

#define PARAMS_bcast void *rbuf, int count, struct ompi_datatype_t *dtype, int root
#define ARGS_bcast(S, R) R, count, dtype, root
#define NAME_bcast "MPI_Bcast"
static int stage_bcast(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_bcast, void **hs, void **hr) {
  *hs = NULL;
  *hr = rbuf;
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, root);
  if (role == COLL_GPU_NOT_INVOLVED) return OMPI_SUCCESS;
  size_t bytes;
  coll_gpu_span_t span = mca_coll_gpu_span(dtype, (size_t)count, &bytes);
  return mca_coll_gpu_stage(st, rbuf, span, bytes, role == COLL_GPU_ROOT ? COLL_GPU_IN : COLL_GPU_OUT, hr);
}
#define GPU_bcast \
  { COLL_GPU_COLL_BCAST, NULL, 0, NULL, rbuf, count, dtype, root }
COLL_GPU_MOVE_ENTRIES(bcast, coll_gpu_bytes(dtype, count))

static int counted_staged(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m);

/* A gather or scatter (rooted: COLL_GPU_GATHER or COLL_GPU_SCATTER) as a call with counts: blocking, on the GPUs
 * as the zero-copy alltoall whose blocks are empty but to or from the root (coll_gpu_gpupath.c's plan_rooted);
 * otherwise staged. Counts NULL: the one count of every rank, in rank order. */
static mca_coll_gpu_move_t rooted_move(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, const char *name,
                                       int rooted, const void *sbuf, int scount, const int *scounts, const int *sdispls,
                                       struct ompi_datatype_t *sdtype, void *rbuf, int rcount, const int *rcounts,
                                       const int *rdispls, struct ompi_datatype_t *rdtype, int root) {
  mca_coll_gpu_move_t mv = {COLL_GPU_COLL_ALLTOALL,
                            sbuf,
                            scount,
                            sdtype,
                            rbuf,
                            rcount,
                            rdtype,
                            root,
                            name,
                            0,
                            1,
                            scounts,
                            sdispls,
                            rcounts,
                            rdispls,
                            sbuf,
                            rbuf,
                            rooted};
  mv.staged = counted_staged(comm, m);
  return mv;
}

/* ------------------------------------------------------------------ MPI_Gather(v): blocks to the root */

/* The root's receive counts are significant at the root alone (elsewhere they may be NULL): the span
 * they give is computed only where role says ROOT. */
static int stage_to_root(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, coll_gpu_role_t role, const void *sbuf,
                         int scount, struct ompi_datatype_t *sdtype, void *rbuf, coll_gpu_span_t rspan, size_t rbytes,
                         void **hs, void **hr) {
  *hs = (void *)sbuf;
  *hr = rbuf;
  size_t sbytes = 0;
  coll_gpu_span_t sspan = {0, 0};
  if (role == COLL_GPU_NOT_INVOLVED) return OMPI_SUCCESS;
  if (role == COLL_GPU_LEAF || !OMPI_COMM_IS_INTER(comm))
    sspan = coll_gpu_span_if(sbuf, sdtype, (size_t)scount, &sbytes);
  if (role == COLL_GPU_LEAF) return mca_coll_gpu_stage(st, sbuf, sspan, sbytes, COLL_GPU_IN, hs);
  if (OMPI_COMM_IS_INTER(comm)) return mca_coll_gpu_stage(st, rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr); /* in place: rbuf in too */
}

#define PARAMS_gather                                                                   \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, \
      struct ompi_datatype_t *rdtype, int root
#define ARGS_gather(S, R) S, scount, sdtype, R, rcount, rdtype, root
#define NAME_gather "MPI_Gather"
static int stage_gather(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_gather, void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, root);
  size_t rbytes = 0;
  coll_gpu_span_t rspan = {0, 0};
  if (role == COLL_GPU_ROOT) rspan = mca_coll_gpu_span(rdtype, (size_t)rcount * peers(comm), &rbytes);
  return stage_to_root(st, comm, role, sbuf, scount, sdtype, rbuf, rspan, rbytes, hs, hr);
}
#define GPU_gather                                                                                                \
  rooted_move(comm, m, "MPI_Gather", COLL_GPU_GATHER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, \
              rdtype, root)
COLL_GPU_MOVE_ENTRIES(gather, counted_staged(comm, m) ? 0 : 1)

#define PARAMS_gatherv                                                                                             \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *displs, \
      struct ompi_datatype_t *rdtype, int root
#define ARGS_gatherv(S, R) S, scount, sdtype, R, rcounts, displs, rdtype, root
#define NAME_gatherv "MPI_Gatherv"
static int stage_gatherv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_gatherv, void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, root);
  size_t rbytes = 0;
  coll_gpu_span_t rspan = {0, 0};
  if (role == COLL_GPU_ROOT) rspan = mca_coll_gpu_span_v(rdtype, (int)peers(comm), rcounts, displs, &rbytes);
  return stage_to_root(st, comm, role, sbuf, scount, sdtype, rbuf, rspan, rbytes, hs, hr);
}
#define GPU_gatherv                                                                                                \
  rooted_move(comm, m, "MPI_Gatherv", COLL_GPU_GATHER, sbuf, scount, NULL, NULL, sdtype, rbuf, 0, rcounts, displs, \
              rdtype, root)
COLL_GPU_MOVE_ENTRIES(gatherv, counted_staged(comm, m) ? 0 : 1)

/* ------------------------------------------------------------------ MPI_Scatter(v): blocks from the root */

/* The root's send span, computed by the caller only where role says ROOT, goes in; the receive buffer
 * comes out, except at an intercommunicator's root and in place at an intra-communicator's root. */
static int stage_from_root(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, coll_gpu_role_t role,
                           const void *sbuf, coll_gpu_span_t sspan, size_t sbytes, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, void **hs, void **hr) {
  *hs = (void *)sbuf;
  *hr = rbuf;
  size_t rbytes;
  int rc = OMPI_SUCCESS;
  if (role == COLL_GPU_ROOT) rc = mca_coll_gpu_stage(st, sbuf, sspan, sbytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS || role == COLL_GPU_NOT_INVOLVED || (role == COLL_GPU_ROOT && OMPI_COMM_IS_INTER(comm)))
    return rc;
  coll_gpu_span_t rspan = coll_gpu_span_if(rbuf, rdtype, (size_t)rcount, &rbytes);
  return mca_coll_gpu_stage(st, rbuf, rspan, rbytes, COLL_GPU_OUT, hr);
}

#define PARAMS_scatter                                                                  \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, \
      struct ompi_datatype_t *rdtype, int root
#define ARGS_scatter(S, R) S, scount, sdtype, R, rcount, rdtype, root
#define NAME_scatter "MPI_Scatter"
static int stage_scatter(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_scatter, void **hs, void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, root);
  size_t sbytes = 0;
  coll_gpu_span_t sspan = {0, 0};
  if (role == COLL_GPU_ROOT) sspan = mca_coll_gpu_span(sdtype, (size_t)scount * peers(comm), &sbytes);
  return stage_from_root(st, comm, role, sbuf, sspan, sbytes, rbuf, rcount, rdtype, hs, hr);
}
#define GPU_scatter                                                                                                 \
  rooted_move(comm, m, "MPI_Scatter", COLL_GPU_SCATTER, sbuf, scount, NULL, NULL, sdtype, rbuf, rcount, NULL, NULL, \
              rdtype, root)
COLL_GPU_MOVE_ENTRIES(scatter, counted_staged(comm, m) ? 0 : 1)

#define PARAMS_scatterv                                                                                            \
  const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, \
      struct ompi_datatype_t *rdtype, int root
#define ARGS_scatterv(S, R) S, scounts, displs, sdtype, R, rcount, rdtype, root
#define NAME_scatterv "MPI_Scatterv"
static int stage_scatterv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_scatterv, void **hs,
                          void **hr) {
  const coll_gpu_role_t role = mca_coll_gpu_role(comm, root);
  size_t sbytes = 0;
  coll_gpu_span_t sspan = {0, 0};
  if (role == COLL_GPU_ROOT) sspan = mca_coll_gpu_span_v(sdtype, (int)peers(comm), scounts, displs, &sbytes);
  return stage_from_root(st, comm, role, sbuf, sspan, sbytes, rbuf, rcount, rdtype, hs, hr);
}
#define GPU_scatterv                                                                                                 \
  rooted_move(comm, m, "MPI_Scatterv", COLL_GPU_SCATTER, sbuf, 0, scounts, displs, sdtype, rbuf, rcount, NULL, NULL, \
              rdtype, root)
COLL_GPU_MOVE_ENTRIES(scatterv, counted_staged(comm, m) ? 0 : 1)

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

/* Whether a call with counts stages on every rank alike, without the agreement. */
static int counted_staged(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) {
  return OMPI_COMM_IS_INTER(comm) || mca_coll_gpu_component.uniform_buffers || mca_coll_gpu_spans_hosts(m, comm);
}

static mca_coll_gpu_move_t allgatherv_move(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, const void *sbuf,
                                           int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                           const int *displs, struct ompi_datatype_t *rdtype) {
  const size_t n = peers(comm);
  mca_coll_gpu_move_t mv = {COLL_GPU_COLL_ALLGATHER,
                            sbuf,
                            scount,
                            sdtype,
                            rbuf,
                            0,
                            rdtype,
                            0,
                            "MPI_Allgatherv",
                            0,
                            0,
                            NULL,
                            NULL,
                            rcounts,
                            displs,
                            sbuf,
                            rbuf};
  mv.staged = counted_staged(comm, m) || (equal_counts(rcounts, n) && rcounts[0] == 0);
  if (mv.staged) return mv;
  mv.unlike = !equal_counts(rcounts, n) || !in_order(displs, rcounts[0], n);
  if (mv.unlike) return mv;
  mv.rcount = rcounts[0];
  mv.rbuf = displaced(rbuf, displs[0], rdtype);
  return mv;
}

static mca_coll_gpu_move_t alltoallv_move(struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m, const void *sbuf,
                                          const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
                                          void *rbuf, const int *rcounts, const int *rdispls,
                                          struct ompi_datatype_t *rdtype) {
  const size_t n = peers(comm);
  mca_coll_gpu_move_t mv = {COLL_GPU_COLL_ALLTOALL,
                            sbuf,
                            0,
                            sdtype,
                            rbuf,
                            0,
                            rdtype,
                            0,
                            "MPI_Alltoallv",
                            0,
                            0,
                            scounts,
                            sdispls,
                            rcounts,
                            rdispls,
                            sbuf,
                            rbuf};
  mv.staged = counted_staged(comm, m);
  if (mv.staged) return mv;
  /* in place (no send counts) the alltoall stages anyway */
  mv.unlike = sbuf == MPI_IN_PLACE || !equal_counts(scounts, n) || !equal_counts(rcounts, n) ||
              !in_order(sdispls, scounts[0], n) || !in_order(rdispls, rcounts[0], n);
  if (mv.unlike) return mv;
  mv.scount = scounts[0];
  mv.rcount = rcounts[0];
  mv.sbuf = displaced(sbuf, sdispls[0], sdtype);
  mv.rbuf = displaced(rbuf, rdispls[0], rdtype);
  return mv;
}

/* ------------------------------------------------------------------ MPI_Allgather(v): a block from every peer */

#define PARAMS_allgather \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype
#define ARGS_allgather(S, R) S, scount, sdtype, R, rcount, rdtype
#define NAME_allgather "MPI_Allgather"
static int stage_allgather(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_allgather, void **hs,
                           void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = coll_gpu_span_if(sbuf, sdtype, (size_t)scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(rdtype, (size_t)rcount * peers(comm), &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
#define GPU_allgather \
  { COLL_GPU_COLL_ALLGATHER, sbuf, scount, sdtype, rbuf, rcount, rdtype, 0 }
COLL_GPU_MOVE_ENTRIES(allgather, coll_gpu_bytes(rdtype, rcount))

#define PARAMS_allgatherv                                                                                          \
  const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *displs, \
      struct ompi_datatype_t *rdtype
#define ARGS_allgatherv(S, R) S, scount, sdtype, R, rcounts, displs, rdtype
#define NAME_allgatherv "MPI_Allgatherv"
static int stage_allgatherv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_allgatherv, void **hs,
                            void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = coll_gpu_span_if(sbuf, sdtype, (size_t)scount, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(rdtype, (int)peers(comm), rcounts, displs, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
#define GPU_allgatherv allgatherv_move(comm, m, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype)
COLL_GPU_MOVE_ENTRIES(allgatherv,
                      allgatherv_move(comm, m, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype).staged ? 0 : 1)

/* ------------------------------------------------------------------ MPI_Alltoall(v,w): a block to and from every peer
 */

#define PARAMS_alltoall PARAMS_allgather
#define ARGS_alltoall ARGS_allgather
#define NAME_alltoall "MPI_Alltoall"
static int stage_alltoall(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_alltoall, void **hs,
                          void **hr) {
  size_t sbytes, rbytes;
  coll_gpu_span_t sspan = coll_gpu_span_if(sbuf, sdtype, (size_t)scount * peers(comm), &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span(rdtype, (size_t)rcount * peers(comm), &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
#define GPU_alltoall \
  { COLL_GPU_COLL_ALLTOALL, sbuf, scount, sdtype, rbuf, rcount, rdtype, 0 }
COLL_GPU_MOVE_ENTRIES(alltoall, coll_gpu_bytes(rdtype, rcount))

#define PARAMS_alltoallv                                                                                \
  const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype, void *rbuf, \
      const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype
#define ARGS_alltoallv(S, R) S, scounts, sdispls, sdtype, R, rcounts, rdispls, rdtype
#define NAME_alltoallv "MPI_Alltoallv"
static int stage_alltoallv(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_alltoallv, void **hs,
                           void **hr) {
  size_t sbytes = 0, rbytes;
  coll_gpu_span_t sspan = {0, 0};
  if (sbuf != MPI_IN_PLACE) sspan = mca_coll_gpu_span_v(sdtype, (int)peers(comm), scounts, sdispls, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_v(rdtype, (int)peers(comm), rcounts, rdispls, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
#define GPU_alltoallv alltoallv_move(comm, m, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype)
COLL_GPU_MOVE_ENTRIES(alltoallv, counted_staged(comm, m) ? 0 : 1)

#define PARAMS_alltoallw                                                                                        \
  const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *const *sdtypes, void *rbuf, \
      const int *rcounts, const int *rdispls, struct ompi_datatype_t *const *rdtypes
#define ARGS_alltoallw(S, R) S, scounts, sdispls, sdtypes, R, rcounts, rdispls, rdtypes
#define NAME_alltoallw "MPI_Alltoallw"
static int stage_alltoallw(coll_gpu_stage_t *st, struct ompi_communicator_t *comm, PARAMS_alltoallw, void **hs,
                           void **hr) {
  size_t sbytes = 0, rbytes;
  coll_gpu_span_t sspan = {0, 0};
  if (sbuf != MPI_IN_PLACE) sspan = mca_coll_gpu_span_w(sdtypes, (int)peers(comm), scounts, sdispls, NULL, &sbytes);
  coll_gpu_span_t rspan = mca_coll_gpu_span_w(rdtypes, (int)peers(comm), rcounts, rdispls, NULL, &rbytes);
  return mca_coll_gpu_stage_pair(st, sbuf, sspan, sbytes, rbuf, rspan, rbytes, hs, hr);
}
COLL_GPU_ENTRIES(alltoallw)
