/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The GPU path of MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Bcast, MPI_Allgather(v),
 * MPI_Alltoall(v), MPI_Gather(v) and MPI_Scatter(v): which path a call takes, the same on every rank, and the blocking
 * calls' way onto the GPUs (the nonblocking and persistent ones go on in coll_gpu_request.c; what both use of the
 * communicator's GPU resources, the engine's bootstrap among them, is coll_gpu_comm.c's).
 *
 * Each rank classifies its own buffers into one bit: HOST (both buffers host memory), GPU (both on the
 * engine's device, a type and op the kernels implement) or STAGE (anything else on a device). The OR
 * over all ranks decides: GPU only when every rank said GPU; HOST when every rank said HOST; otherwise
 * the staging fallback, where device ranks stage and host ranks pass straight through, so all ranks
 * meet in the same host collective.
 *
 * The OR goes through the node's agreement table (engine/agree.h): a file in Open MPI's job session
 * directory that each process maps at its first need, with an entry per communicator found by its context
 * id and members, on communicators that can take the GPU path at all (2 to 32768 ranks); the ranks of other
 * hosts' posts come as messages (coll_gpu_agree_net.c). Across hosts, calls below coll_gpu_net_min_bytes
 * stage without an agreement, on every rank alike. Nothing about it needs
 * the other ranks: no collective, no wait inside a nonblocking call, progress or communicator
 * construction. A process that never loaded CUDA only counts its calls while no process of the node may
 * pass device memory (the table's mark), and posts "host" after (mca_coll_gpu_path_host: a few stores,
 * never a wait). A rank that may pass device memory posts and reads every rank's post (one cache line per
 * peer) where every rank has joined; where one has not (it may have passed the call already) it posts
 * UNKNOWN and stages, and so does every other reader of that call. coll_gpu_uniform_buffers=1 lets the
 * user assert that all ranks pass the same kind of memory, and skips the agreement.
 *
 * A rank posts GPU only under a claim on the communicator's engine (coll_gpu_hold_claim), which may be shared
 * with other communicators over the same ranks (engine/engine.h): while another communicator's calls hold
 * it, the rank posts STAGE, and the call stages everywhere.
 *
 * A communicator across nodes whose engine is its own (the first over its processes, engine/engine.h) makes no
 * agreement for its blocking calls once the engine exists: whether a call can run on the GPUs then follows from
 * arguments alike on every rank of a correct program (the collective, its size, a reduction's type and op,
 * MPI_IN_PLACE), and a rank whose buffers the engine cannot take as they are joins through the engine's device
 * memory (coll_gpu_join.c); such blocking calls take the GPU path from the collective's figure in
 * coll_gpu_net_blocking_min_bytes where that is below coll_gpu_net_min_bytes (net_min). Nonblocking and
 * persistent calls still agree.
 *
 * The engine's set-up (the first call on the GPUs, coll_gpu_comm.c) exchanges through the previous module's
 * nonblocking collectives, completed by driving progress: it may run inside progress (a queued nonblocking call), and
 * a nested blocking wait would wait on itself with threads.
 *
 * Late is not dead: every wait (the agreement's, the kernels') lasts as long as the ranks it waits for
 * have a process, with a watchdog line after coll_gpu_timeout; a rank whose process is gone ends the
 * call with an error naming it.
 */
#include "coll_gpu.h"
#include "common/hash.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/datatype/ompi_datatype_internal.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>

/* ------------------------------------------------------------------ types and ops */

static int map_type(struct ompi_datatype_t *dt, coll_gpu_dtype_t *out) {
  if (!ompi_datatype_is_predefined(dt)) return 0;
  switch (dt->id) {
    case OMPI_DATATYPE_MPI_INT8_T:
      *out = COLL_GPU_INT8;
      break;
    case OMPI_DATATYPE_MPI_UINT8_T:
      *out = COLL_GPU_UINT8;
      break;
    case OMPI_DATATYPE_MPI_INT16_T:
      *out = COLL_GPU_INT16;
      break;
    case OMPI_DATATYPE_MPI_UINT16_T:
      *out = COLL_GPU_UINT16;
      break;
    case OMPI_DATATYPE_MPI_INT32_T:
      *out = COLL_GPU_INT32;
      break;
    case OMPI_DATATYPE_MPI_UINT32_T:
      *out = COLL_GPU_UINT32;
      break;
    case OMPI_DATATYPE_MPI_INT64_T:
    case OMPI_DATATYPE_MPI_AINT:
    case OMPI_DATATYPE_MPI_OFFSET:
    case OMPI_DATATYPE_MPI_COUNT:
      *out = COLL_GPU_INT64;
      break;
    case OMPI_DATATYPE_MPI_UINT64_T:
      *out = COLL_GPU_UINT64;
      break;
    case OMPI_DATATYPE_MPI_LONG:
      *out = sizeof(long) == 8 ? COLL_GPU_INT64 : COLL_GPU_INT32;
      break;
    case OMPI_DATATYPE_MPI_UNSIGNED_LONG:
      *out = sizeof(long) == 8 ? COLL_GPU_UINT64 : COLL_GPU_UINT32;
      break;
    case OMPI_DATATYPE_MPI_FLOAT:
      *out = COLL_GPU_FLOAT;
      break;
    case OMPI_DATATYPE_MPI_DOUBLE:
      *out = COLL_GPU_DOUBLE;
      break;
    case OMPI_DATATYPE_MPI_BOOL:
    case OMPI_DATATYPE_MPI_C_BOOL:
      *out = COLL_GPU_BOOL;
      break;
    case OMPI_DATATYPE_MPI_FLOAT_INT:
      *out = COLL_GPU_FLOAT_INT;
      break;
    case OMPI_DATATYPE_MPI_DOUBLE_INT:
      *out = COLL_GPU_DOUBLE_INT;
      break;
    case OMPI_DATATYPE_MPI_LONG_INT:
      *out = COLL_GPU_LONG_INT;
      break;
    case OMPI_DATATYPE_MPI_2INT:
      *out = COLL_GPU_2INT;
      break;
    case OMPI_DATATYPE_MPI_SHORT_INT:
      *out = COLL_GPU_SHORT_INT;
      break;
    default:
      return 0;
  }
  /* the kernels step by their element size: it must be this type's extent, from a zero lower bound */
  ptrdiff_t lb, extent;
  ompi_datatype_get_extent(dt, &lb, &extent);
  return lb == 0 && (size_t)extent == coll_gpu_dtype_size(*out);
}

/* The predefined ops, compared by handle: ompi/op/op.h cannot be included out of tree (it needs Fortran
 * headers the devel package does not install). */
static int map_op(struct ompi_op_t *op, coll_gpu_redop_t *out) {
  static const struct {
    MPI_Op handle;
    coll_gpu_redop_t op;
  } ops[] = {{MPI_SUM, COLL_GPU_SUM},   {MPI_PROD, COLL_GPU_PROD},     {MPI_MAX, COLL_GPU_MAX},
             {MPI_MIN, COLL_GPU_MIN},   {MPI_LAND, COLL_GPU_LAND},     {MPI_LOR, COLL_GPU_LOR},
             {MPI_LXOR, COLL_GPU_LXOR}, {MPI_BAND, COLL_GPU_BAND},     {MPI_BOR, COLL_GPU_BOR},
             {MPI_BXOR, COLL_GPU_BXOR}, {MPI_MAXLOC, COLL_GPU_MAXLOC}, {MPI_MINLOC, COLL_GPU_MINLOC}};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i)
    if ((MPI_Op)op == ops[i].handle) {
      *out = ops[i].op;
      return 1;
    }
  return 0;
}

/* Whether a call of `bytes` stages at once, on every rank alike: across hosts, below `min`. */
static int staged_across_hosts(size_t bytes, size_t min, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) {
  return bytes < min && mca_coll_gpu_spans_hosts(m, comm);
}

/* Across hosts, the fewest bytes a call takes the GPU path with: coll_gpu_net_min_bytes, or for a blocking
 * call the collective's figure of coll_gpu_net_blocking_min_bytes, which holds where the communicator's engine
 * is its own (mca_coll_gpu_run_blocking stages the others below coll_gpu_net_min_bytes after all). Alike on every rank:
 * the collective and whether the call blocks are. */
static size_t net_min(coll_gpu_coll_t coll, int blocking) {
  const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  return blocking ? c->net_blocking_min_bytes[coll] : c->net_min_bytes;
}

/* Whether a blocking call planned now may join its engine through the engine's memory (mca_coll_gpu_run_blocking): only
 * on an engine of the communicator's own, so not once the communicator has another (a module's engine, once made,
 * stays). The join's layout is worked out only then, off the path of every other call. */
static int may_join(int blocking, const mca_coll_gpu_plan_t *pl, const mca_coll_gpu_module_t *m) {
  return blocking && pl->any_memory && (m->gpu.engine == NULL || coll_gpu_engine_own(m->gpu.engine));
}

void mca_coll_gpu_path_host(size_t bytes, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m) {
  /* the calls the others make no agreement for: nothing to post, and nothing to count */
  if (bytes == 0 || mca_coll_gpu_component.uniform_buffers ||
      staged_across_hosts(bytes, mca_coll_gpu_component.net_min_bytes, comm, m))
    return;
  coll_gpu_agree_t *a = mca_coll_gpu_agreement(m, comm);
  if (a == NULL) return;
  mca_coll_gpu_agree_lock(m);
  coll_gpu_agree_post(a, COLL_GPU_PATH_HOST); /* a count, or a few stores: never a wait */
  mca_coll_gpu_agree_unlock(m);
}

/* ------------------------------------------------------------------ the decision */

/* This rank's path bit, and the memory the engine would run on. */
static int local_path(const void *sbuf, void *rbuf, int typed, const mca_coll_gpu_module_t *m, coll_gpu_meminfo_t *mem,
                      coll_gpu_meminfo_t *smem) {
  coll_gpu_mem_classify(rbuf, mem);
  if (sbuf == MPI_IN_PLACE)
    *smem = *mem;
  else
    coll_gpu_mem_classify(sbuf, smem);
  if (mem->kind == COLL_GPU_MEM_HOST && smem->kind == COLL_GPU_MEM_HOST) return COLL_GPU_PATH_HOST;
  if (mem->kind != COLL_GPU_MEM_DEVICE || smem->kind != COLL_GPU_MEM_DEVICE || smem->device != mem->device)
    return COLL_GPU_PATH_STAGE;
  if (!typed) return COLL_GPU_PATH_STAGE;
  if (m->gpu.engine != NULL && !(coll_gpu_engine_owns(m->gpu.engine, mem) && coll_gpu_engine_owns(m->gpu.engine, smem)))
    return COLL_GPU_PATH_STAGE;
  return COLL_GPU_PATH_GPU;
}

/* The plan of a reduction (coll_gpu.h). */
int mca_coll_gpu_plan_reduction(const mca_coll_gpu_reduction_t *rd, int blocking, struct ompi_communicator_t *comm,
                                mca_coll_gpu_module_t *m, mca_coll_gpu_plan_t *pl) {
  const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  if (m->gpu.agree_state == COLL_GPU_STATE_OFF) return 0; /* from here on, 2 to COLL_GPU_MAX_COMM_RANKS ranks */
  const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
  size_t total = (size_t)rd->count, each = (size_t)rd->count;
  int equal = 1;
  if (rd->coll == COLL_GPU_COLL_REDUCE_SCATTER) {
    total = 0;
    each = (size_t)(rd->rcounts != NULL ? rd->rcounts[0] : rd->count);
    for (int q = 0; q < n; ++q) {
      const size_t count = (size_t)(rd->rcounts != NULL ? rd->rcounts[q] : rd->count);
      if (n <= COLL_GPU_MAX_DIRECT) pl->counts[q] = count; /* args.counts (by_counts below) */
      total += count;
      equal = equal && count == each;
    }
  }
  if (total == 0) return 0;
  size_t dsize = 0;
  ompi_datatype_type_size(rd->dtype, &dsize);
  if (staged_across_hosts(total * dsize, net_min(rd->coll, blocking), comm, m)) return 0;
  const int leaf = rd->coll == COLL_GPU_COLL_REDUCE && me != rd->root; /* only its send buffer counts */
  coll_gpu_dtype_t type = COLL_GPU_NTYPES;
  coll_gpu_redop_t redop = COLL_GPU_NOPS;
  const int algorithm = c->algorithm[rd->coll];
  /* in place, a rank's result would overwrite input a later block of another length still reads: the engine
   * reduces from a copy of the input (engine.h); beyond COLL_GPU_MAX_DIRECT ranks the kernels take equal blocks
   * only */
  const int blocks_ok = !(rd->coll == COLL_GPU_COLL_REDUCE_SCATTER && !equal && n > COLL_GPU_MAX_DIRECT);
  /* a type and op the kernels implement; then, every argument here being the same on every rank of a correct
   * program, whether any rank can join the call whatever memory it passes */
  const int typed = map_type(rd->dtype, &type) && map_op(rd->op, &redop) && coll_gpu_op_supported(type, redop);
  const int usable = m->gpu.engine_state != COLL_GPU_STATE_OFF && algorithm != COLL_GPU_NALGOS && blocks_ok;
  pl->any_memory = usable && typed && !OMPI_COMM_IS_INTER(comm);
  pl->mine = COLL_GPU_PATH_STAGE;
  /* no GPU path on this rank (it failed, or was told to stage): the others still get an answer */
  if (usable)
    pl->mine = (uint32_t)local_path(leaf ? MPI_IN_PLACE : rd->sbuf, leaf ? (void *)rd->sbuf : rd->rbuf, typed, m,
                                    &pl->mem, &pl->smem);
  /* joining through the engine's memory: the input at 0, the result over it, or after it for a reduce-scatter
   * not in place or of unequal counts (of equal ones in place it stays in place: the engine runs one another way,
   * as the other ranks' do); the elements as they lie (a pair type's padding too), as the kernels read them */
  if (may_join(blocking, pl, m)) {
    const size_t esize = coll_gpu_dtype_size(type);
    const size_t mine =
        rd->coll != COLL_GPU_COLL_REDUCE_SCATTER ? total : (size_t)(rd->rcounts != NULL ? rd->rcounts[me] : rd->count);
    const size_t out_at =
        rd->coll == COLL_GPU_COLL_REDUCE_SCATTER && (rd->sbuf != MPI_IN_PLACE || !equal) ? total * esize : 0;
    const mca_coll_gpu_join_t join = {{rd->sbuf == MPI_IN_PLACE ? rd->rbuf : rd->sbuf, rd->dtype, total, 1},
                                      {rd->rbuf, leaf ? NULL : rd->dtype, mine, 1},
                                      0,
                                      out_at,
                                      0,
                                      leaf ? SIZE_MAX : out_at,
                                      out_at + (out_at == 0 ? total : mine) * esize};
    pl->join = join;
  }
  pl->bytes = total * dsize;
  pl->name = rd->name;
  /* reduce-scatter: counts per rank, or beyond COLL_GPU_MAX_DIRECT ranks none (equal blocks of `each`) */
  const int by_counts = rd->coll == COLL_GPU_COLL_REDUCE_SCATTER && n <= COLL_GPU_MAX_DIRECT;
  const coll_gpu_args_t args = {rd->coll,
                                rd->sbuf == MPI_IN_PLACE ? rd->rbuf : rd->sbuf,
                                leaf ? NULL : rd->rbuf,
                                rd->coll == COLL_GPU_COLL_REDUCE_SCATTER ? each : total,
                                by_counts ? pl->counts : NULL,
                                type,
                                redop,
                                rd->coll == COLL_GPU_COLL_REDUCE ? rd->root : 0};
  pl->args = args;
  return 1;
}

/* The call on the engine (args); a rank that joins (its buffers are not the engine's memory) copies its input into
 * the engine's device memory before and its result back after (coll_gpu_join.c). COLL_GPU_SUCCESS when it ran;
 * otherwise why is said (COLL_GPU_UNAVAILABLE and COLL_GPU_MISMATCH: the engine's answer to a call with counts,
 * engine.h). */
static coll_gpu_status_t run_engine(mca_coll_gpu_module_t *m, const mca_coll_gpu_plan_t *pl,
                                    const coll_gpu_args_t *args, int joins, char *why, size_t len) {
  if (!joins) return coll_gpu_engine_run(m->gpu.engine, args, why, len);
  const mca_coll_gpu_join_t *j = &pl->join;
  char *dev = NULL;
  coll_gpu_status_t st = coll_gpu_engine_bounce(m->gpu.engine, j->bytes, (void **)&dev, why, len);
  if (st != COLL_GPU_SUCCESS) return st;
  if (mca_coll_gpu_join_in(m->gpu.engine, j, dev, why, len) != 0) return COLL_GPU_CUDA_ERROR;
  coll_gpu_args_t in_dev = *args;
  in_dev.sendbuf = dev + j->send_at;
  in_dev.recvbuf = j->recv_at == SIZE_MAX ? NULL : dev + j->recv_at;
  st = coll_gpu_engine_run(m->gpu.engine, &in_dev, why, len);
  if (st == COLL_GPU_SUCCESS && mca_coll_gpu_join_out(m->gpu.engine, j, dev, why, len) != 0) st = COLL_GPU_CUDA_ERROR;
  return st;
}

/* mca_coll_gpu_run_blocking's agreement (none on an engine of the communicator's own) and run, the claim taken. */
static int run_claimed(mca_coll_gpu_plan_t *pl, int own, int joins, struct ompi_communicator_t *comm,
                       mca_coll_gpu_module_t *m, int *rc) {
  uint32_t all = COLL_GPU_PATH_GPU;
  if (!own) { /* every rank's path, from this rank's: through the agreement, or as the user asserted it */
    mca_coll_gpu_watch_ctx_t wctx = {comm, pl->name, pl->bytes};
    const coll_gpu_agree_watch_t watch = {mca_coll_gpu_wait_config(), mca_coll_gpu_agree_report, &wctx};
    char why[256];
    const coll_gpu_status_t st = coll_gpu_calls_agree(&m->calls, pl->mine, &watch, &all, why, sizeof(why));
    if (st == COLL_GPU_UNAVAILABLE) return 0; /* no agreement: through the previous module */
    if (st != COLL_GPU_SUCCESS) {
      *rc = mca_coll_gpu_failed(m, comm, pl->name, pl->bytes, "while the ranks agreed on its path", why);
      return 1;
    }
    if (!coll_gpu_path_is_gpu(all)) return 0;
  }
  if (m->gpu.engine == NULL && !mca_coll_gpu_create_engine(m, comm, &pl->mem)) return 0;
  if (!coll_gpu_engine_idle(m->gpu.engine)) mca_coll_gpu_drain(m, 1);
  char why[256];
  if (m->gpu.engine_state == COLL_GPU_STATE_OFF) { /* the call in flight failed */
    snprintf(why, sizeof(why), "an earlier nonblocking call failed on the GPU");
  } else {
    const coll_gpu_status_t st = run_engine(m, pl, mca_coll_gpu_plan_args(pl, all), joins, why, sizeof(why));
    if (st == COLL_GPU_SUCCESS) {
      *rc = OMPI_SUCCESS;
      return 1;
    }
    if (st == COLL_GPU_UNAVAILABLE) return 0; /* not on the GPUs here, on every rank alike: staged */
    if (st == COLL_GPU_MISMATCH) {
      *rc = mca_coll_gpu_mismatched(comm, pl->name, pl->bytes, why);
      return 1;
    }
  }
  *rc = mca_coll_gpu_failed(m, comm, pl->name, pl->bytes,
                            joins ? "while it joined through the GPU's memory" : "on the GPU", why);
  return 1;
}

/* A blocking call with a plan: in order after the calls still queued, its agreement, then the GPUs; it
 * posts the GPU path only under a claim on the engine. On an engine of the communicator's own that no other
 * communicator has taken (engine/engine.h; decided after the drain, where a creation in progress may have
 * taken it: alike, since it is taken only where every rank counted as many calls without an agreement), every
 * rank takes the GPU path without an agreement, and one whose buffers the engine cannot take joins through its
 * device memory; one that cannot join (no device memory left for it, a copy failed) fails the call, naming
 * why. */
int mca_coll_gpu_run_blocking(mca_coll_gpu_plan_t *pl, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                              int *rc) {
  if (coll_gpu_calls_queued(&m->calls)) mca_coll_gpu_drain(m, 0);
  /* a queued call's start may have made the engine meanwhile: this rank's buffers must be its memory */
  if (coll_gpu_path_is_gpu(pl->mine) && m->gpu.engine != NULL &&
      !(coll_gpu_engine_owns(m->gpu.engine, &pl->mem) && coll_gpu_engine_owns(m->gpu.engine, &pl->smem)))
    pl->mine = COLL_GPU_PATH_STAGE;
  const int own = pl->any_memory && m->gpu.engine != NULL && m->gpu.engine_state == COLL_GPU_STATE_READY &&
                  coll_gpu_engine_unagreed(m->gpu.engine);
  /* planned below coll_gpu_net_min_bytes for an engine of its own, which it has not (alike now: drained) */
  if (!own && staged_across_hosts(pl->bytes, mca_coll_gpu_component.net_min_bytes, comm, m)) return 0;
  const int joins = own && pl->mine != COLL_GPU_PATH_GPU;
  if (own) pl->mine = COLL_GPU_PATH_GPU;
  /* on an engine of its own, refused only where it failed (with uniform buffers, which skip the agreement, engines
   * are never shared: never refused there) */
  const int claimed = coll_gpu_hold_claim(&m->gpu, &pl->mine);
  const int handled = run_claimed(pl, own, joins, comm, m, rc);
  if (claimed) coll_gpu_hold_unclaim(&m->gpu);
  return handled;
}

/* ------------------------------------------------------------------ the moves: bcast, allgather, alltoall */

/* Whether a buffer's memory can go through the engine this rank has or would create on mem. */
static int on_engine(const mca_coll_gpu_module_t *m, const coll_gpu_meminfo_t *b, const coll_gpu_meminfo_t *mem) {
  if (b->kind != COLL_GPU_MEM_DEVICE || b->device != mem->device || b->ctx != mem->ctx) return 0;
  return m->gpu.engine == NULL || coll_gpu_engine_owns(m->gpu.engine, b);
}

/* How a rank joins a move through the engine's memory: the blocks in rank order; alltoall's received ones after
 * the sent. */
static void move_join(const mca_coll_gpu_move_t *mv, int me, size_t bytes, size_t blocks, mca_coll_gpu_join_t *j) {
  memset(j, 0, sizeof(*j));
  const mca_coll_gpu_ubuf_t all = {mv->rbuf, mv->rdtype, (size_t)mv->rcount * blocks};
  if (mv->coll == COLL_GPU_COLL_BCAST) {
    if (me == mv->root)
      j->in = all;
    else
      j->out = all;
    j->bytes = bytes;
  } else if (mv->coll == COLL_GPU_COLL_ALLGATHER) {
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(mv->rdtype, &lb, &extent);
    const mca_coll_gpu_ubuf_t own = {(const char *)mv->rbuf + (ptrdiff_t)me * mv->rcount * extent, mv->rdtype,
                                     (size_t)mv->rcount};
    const mca_coll_gpu_ubuf_t sent = {mv->sbuf, mv->sdtype, (size_t)mv->scount};
    j->in = mv->sbuf == MPI_IN_PLACE ? own : sent;
    j->in_at = j->send_at = (size_t)me * bytes;
    j->out = all;
    j->bytes = blocks * bytes;
  } else {
    const mca_coll_gpu_ubuf_t sent = {mv->sbuf, mv->sdtype, (size_t)mv->scount * blocks};
    j->in = sent;
    j->out = all;
    j->recv_at = j->out_at = blocks * bytes;
    j->bytes = 2 * blocks * bytes;
  }
}

/* Whether dt's elements lie one after another from its start: no gaps, a lower bound of 0. */
static int dense(struct ompi_datatype_t *dt) {
  ptrdiff_t lb, extent;
  size_t size = 0;
  ompi_datatype_get_extent(dt, &lb, &extent);
  ompi_datatype_type_size(dt, &size);
  return lb == 0 && extent > 0 && (size_t)extent == size;
}

/* A counted call's layout in bytes (pl->layout) and its call with counts (pl->vargs): 1, or 0 where it has none
 * (datatypes that are not dense, a negative count or displacement, an alltoallv in place). */
static int plan_vlayout(const mca_coll_gpu_move_t *mv, int n, int me, mca_coll_gpu_plan_t *pl) {
  const int in_place = mv->sbuf == MPI_IN_PLACE;
  if ((in_place && mv->coll == COLL_GPU_COLL_ALLTOALL) || !dense(mv->rdtype) || (!in_place && !dense(mv->sdtype)))
    return 0;
  size_t rsize = 0, ssize = 0;
  ompi_datatype_type_size(mv->rdtype, &rsize);
  if (!in_place) ompi_datatype_type_size(mv->sdtype, &ssize);
  coll_gpu_vlayout_t *v = &pl->layout;
  for (int q = 0; q < n; ++q) {
    if (mv->rcounts[q] < 0 || mv->rdispls[q] < 0) return 0;
    v->recv[q].displ = (size_t)mv->rdispls[q] * rsize;
    v->recv[q].bytes = (size_t)mv->rcounts[q] * rsize;
    if (mv->scounts != NULL) { /* alltoallv */
      if (mv->scounts[q] < 0 || mv->sdispls[q] < 0) return 0;
      v->send[q].displ = (size_t)mv->sdispls[q] * ssize;
      v->send[q].bytes = (size_t)mv->scounts[q] * ssize;
    } else { /* allgatherv: the one send buffer, or in place this rank's block of the receive buffer */
      v->send[q].displ = 0;
      v->send[q].bytes = in_place ? (size_t)mv->rcounts[me] * rsize : (size_t)mv->scount * ssize;
    }
  }
  const void *src = in_place ? (const char *)mv->vrbuf + v->recv[me].displ : mv->vsbuf;
  v->call = mv->counted;
  const coll_gpu_args_t args = {mv->coll, src, mv->vrbuf, 0, NULL, COLL_GPU_UINT8, COLL_GPU_SUM, 0, v};
  pl->vargs = args;
  return 1;
}

/* The bytes a call with counts of layout v sends (its messages name them). */
static size_t layout_sent(const coll_gpu_vlayout_t *v, int n) {
  size_t bytes = 0;
  for (int q = 0; q < n; ++q) bytes += v->send[q].bytes;
  return bytes;
}

/* Whether a call with counts can take the zero-copy path with counts: on at most COLL_GPU_MAX_DIRECT ranks of one
 * node (one host: counted_staged; not split into virtual nodes). Alike on every rank. */
static int counted_on_gpu(int n) {
  const int virtual_nodes = mca_coll_gpu_component.virtual_nodes;
  return n <= COLL_GPU_MAX_DIRECT && (virtual_nodes == 0 || virtual_nodes >= n);
}

/* A gather's or scatter's layout in bytes (pl->layout) and its call with counts (pl->vargs), as an alltoall whose
 * blocks are empty but to the root (gather) or from it (scatter): 1, or 0 where it has none (a datatype that is
 * significant here and not dense, a negative count or displacement). What MPI leaves undefined (the receive
 * arguments of a gather and the send ones of a scatter off the root, the count and datatype beside MPI_IN_PLACE)
 * is never read. */
static int plan_rooted_layout(const mca_coll_gpu_move_t *mv, int n, int me, mca_coll_gpu_plan_t *pl) {
  const int gather = mv->rooted == COLL_GPU_GATHER, at_root = me == mv->root;
  /* MPI_IN_PLACE at the root: a gather's send buffer, a scatter's receive buffer */
  const int in_place = at_root && (gather ? mv->sbuf == MPI_IN_PLACE : mv->rbuf == MPI_IN_PLACE);
  coll_gpu_vlayout_t *v = &pl->layout;
  memset(v, 0, sizeof(*v));
  v->call = mv->counted;
  const void *src = NULL;
  void *dst = NULL;
  /* the blocks that travel: the many at the root (its receive or send buffer by rank), the one elsewhere */
  struct ompi_datatype_t *many_dt = gather ? mv->rdtype : mv->sdtype;
  struct ompi_datatype_t *one_dt = gather ? mv->sdtype : mv->rdtype;
  const int one_count = gather ? mv->scount : mv->rcount;
  size_t one = 0; /* the bytes of this rank's own block (0 in place at the root) */
  if (!in_place) {
    if (!dense(one_dt) || one_count < 0) return 0;
    size_t size = 0;
    ompi_datatype_type_size(one_dt, &size);
    one = (size_t)one_count * size;
  }
  if (at_root) {
    if (!dense(many_dt)) return 0;
    size_t size = 0;
    ompi_datatype_type_size(many_dt, &size);
    const int *counts = gather ? mv->rcounts : mv->scounts, *displs = gather ? mv->rdispls : mv->sdispls;
    const int each = gather ? mv->rcount : mv->scount;
    coll_gpu_vblock_t *blocks = gather ? v->recv : v->send;
    for (int q = 0; q < n; ++q) {
      const int count = counts != NULL ? counts[q] : each, displ = counts != NULL ? displs[q] : q * each;
      if (count < 0 || displ < 0) return 0;
      blocks[q].displ = (size_t)displ * size;
      blocks[q].bytes = (size_t)count * size;
    }
    if (gather) { /* the root's own block: from its send buffer, or in place already where it goes */
      dst = mv->vrbuf;
      src = in_place ? (const char *)mv->vrbuf + v->recv[me].displ : mv->vsbuf;
      v->send[me].bytes = in_place ? v->recv[me].bytes : one;
    } else { /* kept in the send buffer in place */
      src = mv->vsbuf;
      dst = in_place ? NULL : mv->vrbuf;
      if (in_place) v->send[me].bytes = 0;
      v->recv[me].bytes = in_place ? 0 : one;
    }
  } else if (gather) {
    src = mv->vsbuf;
    v->send[mv->root].bytes = one;
  } else {
    dst = mv->vrbuf;
    v->recv[mv->root].bytes = one;
  }
  const coll_gpu_args_t args = {COLL_GPU_COLL_ALLTOALL, src, dst, 0, NULL, COLL_GPU_UINT8, COLL_GPU_SUM, 0, v};
  pl->vargs = args;
  return 1;
}

/* The plan of a blocking, nonblocking or persistent gather or scatter (mv->rooted): the zero-copy call with counts
 * where every rank can make it (at most COLL_GPU_MAX_DIRECT ranks of one node, device memory the engine takes), else
 * staged; 0 when the call takes no part in the agreement. */
static int plan_rooted(const mca_coll_gpu_move_t *mv, struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                       mca_coll_gpu_plan_t *pl) {
  const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
  if (m->gpu.agree_state == COLL_GPU_STATE_OFF || mv->staged) return 0;
  const int gather = mv->rooted == COLL_GPU_GATHER, at_root = me == mv->root;
  /* this rank's buffers that MPI defines: the engine lives where the first is */
  const void *bufs[2] = {gather ? mv->sbuf : mv->rbuf, at_root ? (gather ? mv->rbuf : mv->sbuf) : NULL};
  if (bufs[0] == MPI_IN_PLACE) bufs[0] = NULL;
  if (bufs[0] == NULL) {
    bufs[0] = bufs[1];
    bufs[1] = NULL;
  }
  coll_gpu_mem_classify(bufs[0], &pl->mem);
  pl->smem = pl->mem;
  if (bufs[1] != NULL) coll_gpu_mem_classify(bufs[1], &pl->smem);
  pl->mine = COLL_GPU_PATH_STAGE;
  if (pl->mem.kind == COLL_GPU_MEM_HOST && pl->smem.kind == COLL_GPU_MEM_HOST)
    pl->mine = COLL_GPU_PATH_HOST;
  else if (counted_on_gpu(n) && m->gpu.engine_state != COLL_GPU_STATE_OFF &&
           c->algorithm[COLL_GPU_COLL_ALLTOALL] != COLL_GPU_NALGOS && on_engine(m, &pl->mem, &pl->mem) &&
           on_engine(m, &pl->smem, &pl->mem) && plan_rooted_layout(mv, n, me, pl))
    pl->mine = COLL_GPU_PATH_GPU | COLL_GPU_PATH_VLAYOUT;
  pl->any_memory = 0;
  pl->bytes = 0;
  pl->name = mv->counted;
  if (pl->mine & COLL_GPU_PATH_VLAYOUT) {
    pl->bytes = layout_sent(&pl->layout, n); /* what this rank sends, for messages */
    pl->args = pl->vargs;                    /* every rank that takes the GPU path says VLAYOUT: the call with counts */
  }
  return 1;
}

int mca_coll_gpu_plan_move(const mca_coll_gpu_move_t *mv, int blocking, struct ompi_communicator_t *comm,
                           mca_coll_gpu_module_t *m, mca_coll_gpu_plan_t *pl) {
  if (mv->rooted) return plan_rooted(mv, comm, m, pl);
  const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
  size_t rsize = 0;
  ompi_datatype_type_size(mv->rdtype, &rsize);
  const size_t bytes = (size_t)mv->rcount * rsize; /* per block: the same on every rank (but a counted unlike one) */
  if (m->gpu.agree_state == COLL_GPU_STATE_OFF || mv->staged ||
      (mv->counted == NULL && (bytes == 0 || staged_across_hosts(bytes, net_min(mv->coll, blocking), comm, m))))
    return 0;
  const size_t blocks = mv->coll == COLL_GPU_COLL_BCAST ? 1 : (size_t)n;
  coll_gpu_meminfo_t smem;
  const char *src = NULL;
  char *dst = mca_coll_gpu_contiguous(mv->rbuf, mv->rdtype, (size_t)mv->rcount * blocks);
  coll_gpu_mem_classify(mv->rbuf, &pl->mem);
  smem = pl->mem;
  if (mv->coll != COLL_GPU_COLL_BCAST && mv->sbuf != MPI_IN_PLACE) {
    coll_gpu_mem_classify(mv->sbuf, &smem);
    src = mca_coll_gpu_contiguous(mv->sbuf, mv->sdtype,
                                  (size_t)mv->scount * (mv->coll == COLL_GPU_COLL_ALLTOALL ? blocks : 1));
  } else if (mv->coll == COLL_GPU_COLL_ALLGATHER && dst != NULL) {
    src = dst + (size_t)me * bytes; /* in place: my block of recvbuf */
  } else if (mv->coll == COLL_GPU_COLL_ALLTOALL && mv->counted == NULL) {
    src = dst; /* in place: the engine sends from a copy of recvbuf (engine.h) */
  } else if (mv->coll == COLL_GPU_COLL_BCAST) {
    src = dst;
  }
  /* a call with counts that can take the zero-copy path with counts can, whatever this rank's layout (another's may
   * be unlike) */
  const int vpossible = mv->counted != NULL && counted_on_gpu(n); /* alike everywhere */
  const int vcan = vpossible && plan_vlayout(mv, n, me, pl);
  const int engine_can = m->gpu.engine_state != COLL_GPU_STATE_OFF && c->algorithm[mv->coll] != COLL_GPU_NALGOS;
  pl->mine = COLL_GPU_PATH_STAGE;
  if (pl->mem.kind == COLL_GPU_MEM_HOST && smem.kind == COLL_GPU_MEM_HOST)
    pl->mine = COLL_GPU_PATH_HOST;
  else if (vpossible && !vcan)
    ; /* staged: an unlike rank would ask every rank for the call with counts, which this one cannot make */
  else if (engine_can && dst != NULL && src != NULL && !mv->unlike && bytes > 0 && on_engine(m, &pl->mem, &pl->mem) &&
           on_engine(m, &smem, &pl->mem) && (mv->coll != COLL_GPU_COLL_ALLTOALL || n <= COLL_GPU_MAX_DIRECT))
    pl->mine = COLL_GPU_PATH_GPU; /* an alltoall of more ranks has no pairwise connections: staged */
  else if (vcan && engine_can && on_engine(m, &pl->mem, &pl->mem) && on_engine(m, &smem, &pl->mem))
    pl->mine = COLL_GPU_PATH_GPU | COLL_GPU_PATH_VLAYOUT;
  /* every argument here is the same on every rank of a correct program (MPI_IN_PLACE in alltoall too), but a
   * counted call's layout, which only the agreement brings together */
  pl->any_memory = m->gpu.engine_state != COLL_GPU_STATE_OFF && c->algorithm[mv->coll] != COLL_GPU_NALGOS &&
                   !OMPI_COMM_IS_INTER(comm) && mv->counted == NULL &&
                   (mv->coll != COLL_GPU_COLL_ALLTOALL || (n <= COLL_GPU_MAX_DIRECT && mv->sbuf != MPI_IN_PLACE));
  if (may_join(blocking, pl, m)) move_join(mv, me, bytes, blocks, &pl->join);
  pl->smem = smem;
  pl->bytes = vcan && mv->unlike ? layout_sent(&pl->layout, n) : bytes; /* an unlike layout's: what it sends */
  pl->name = mv->counted != NULL ? mv->counted : coll_gpu_coll_mpi_name(mv->coll);
  const coll_gpu_args_t args = {mv->coll, src, dst, bytes, NULL, COLL_GPU_UINT8, COLL_GPU_SUM, mv->root};
  pl->args = args;
  /* a nonblocking or persistent move that goes zero-copy (coll_gpu_zero_copy_wins; an alltoall not in place) from
   * coll_gpu_zero_copy_min_bytes and coll_gpu_zero_copy_nonblocking_min_bytes a block: the blocking call's zero-copy
   * moves, begun by the zero-copy exchange in the steps of a call with counts, which never wait for a peer (vargs
   * without a layout: through the FIFOs where some rank's receive buffer cannot be mapped). Made wherever this rank
   * takes the GPU path, as any rank's VLAYOUT makes every rank's call that one. */
  if (!blocking && pl->mine == COLL_GPU_PATH_GPU && mv->counted == NULL && counted_on_gpu(n) &&
      coll_gpu_zero_copy_wins(mv->coll, n, bytes) && (mv->coll != COLL_GPU_COLL_ALLTOALL || mv->sbuf != MPI_IN_PLACE)) {
    pl->vargs = args;
    if (c->zero_copy_min_bytes > 0 && bytes >= c->zero_copy_min_bytes && bytes >= c->zero_copy_nonblocking_min_bytes)
      pl->mine |= COLL_GPU_PATH_VLAYOUT;
  }
  return 1;
}
