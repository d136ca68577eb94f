/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Staging decisions and completion for the collective entry points.
 *
 * Each rank decides for its own buffers: MPI lets one rank pass device memory and another host
 * memory to the same collective, and the previous module only ever sees host memory.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "coll_gpu.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/show_help.h"

coll_gpu_span_t mca_coll_gpu_span(struct ompi_datatype_t *dt, size_t count, size_t *bytes) {
  ptrdiff_t lb, extent, true_lb, true_extent;
  size_t size;
  ompi_datatype_get_extent(dt, &lb, &extent);
  ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
  ompi_datatype_type_size(dt, &size);
  *bytes = size * count;
  coll_gpu_span_t s = coll_gpu_span_of(true_lb, true_extent, extent, size == 0 ? 0 : count);
  s.layout = dt;
  s.count = count;
  return s;
}

coll_gpu_span_t mca_coll_gpu_span_v(struct ompi_datatype_t *dt, int n, const int *counts, const int *displs,
                                    size_t *bytes) {
  ptrdiff_t lb, extent;
  ompi_datatype_get_extent(dt, &lb, &extent);
  coll_gpu_span_t all = {0, 0};
  *bytes = 0;
  for (int i = 0; i < n; ++i) {
    size_t b;
    coll_gpu_span_t s = mca_coll_gpu_span(dt, (size_t)counts[i], &b);
    all = coll_gpu_span_union(all, coll_gpu_span_shift(s, (ptrdiff_t)displs[i] * extent));
    *bytes += b;
  }
  return all;
}

coll_gpu_span_t mca_coll_gpu_span_w(struct ompi_datatype_t *const *types, int n, const int *counts, const int *displs,
                                    const MPI_Aint *adispls, size_t *bytes) {
  coll_gpu_span_t all = {0, 0};
  *bytes = 0;
  for (int i = 0; i < n; ++i) {
    size_t b;
    coll_gpu_span_t s = mca_coll_gpu_span(types[i], (size_t)counts[i], &b);
    all = coll_gpu_span_union(all, coll_gpu_span_shift(s, displs != NULL ? (ptrdiff_t)displs[i] : adispls[i]));
    *bytes += b;
  }
  return all;
}

coll_gpu_role_t mca_coll_gpu_role(struct ompi_communicator_t *comm, int root) {
  if (!OMPI_COMM_IS_INTER(comm)) return ompi_comm_rank(comm) == root ? COLL_GPU_ROOT : COLL_GPU_LEAF;
  return root == MPI_ROOT ? COLL_GPU_ROOT : root == MPI_PROC_NULL ? COLL_GPU_NOT_INVOLVED : COLL_GPU_LEAF;
}

__thread int mca_coll_gpu_nesting;

/* Buffers staged since start: the MPI_T performance variable coll_gpu_staged_buffers. */
static unsigned long long staged_buffers;

unsigned long long mca_coll_gpu_staged_buffers(void) { return __atomic_load_n(&staged_buffers, __ATOMIC_RELAXED); }

static const char *kind_name(coll_gpu_memkind_t kind) {
  return kind == COLL_GPU_MEM_DEVICE ? "device" : kind == COLL_GPU_MEM_MANAGED ? "managed" : "host";
}

/* A span this much larger than its data (from 1 MiB on) is sparse: staged through its pieces. */
#define SPARSE_RATIO 4
#define SPARSE_MIN_SPAN ((size_t)1 << 20)
/* A piece must spare this many bytes of the span on average: a copy per piece costs a few microseconds
 * on a GPU (a CUDA copy call), in which the copy engine moves about as much. */
#define SPARSE_BYTES_PER_PIECE ((size_t)64 << 10)

/* The pieces of a sparse span's layout, adjacent ones merged; NULL when it has too many for staging them
 * one by one to pay (or no memory): then the whole span is staged. */
static coll_gpu_piece_t *sparse_pieces(coll_gpu_span_t span, size_t *n) {
  const size_t most = span.len / SPARSE_BYTES_PER_PIECE;
  opal_convertor_t *conv = opal_convertor_create(opal_local_arch, 0);
  coll_gpu_piece_t *pieces = malloc(sizeof(coll_gpu_piece_t) * (most + 1));
  if (conv == NULL || pieces == NULL ||
      opal_convertor_prepare_for_send(conv, &((struct ompi_datatype_t *)span.layout)->super, span.count, NULL) !=
          OPAL_SUCCESS) {
    if (conv != NULL) OBJ_RELEASE(conv);
    free(pieces);
    return NULL;
  }
  *n = 0;
  int done = 0;
  while (!done) {
    struct iovec iov[64];
    uint32_t count = 64;
    size_t length = 0;
    done = opal_convertor_raw(conv, iov, &count, &length) != 0;
    for (uint32_t i = 0; i < count && pieces != NULL; ++i) {
      const ptrdiff_t off = (ptrdiff_t)(uintptr_t)iov[i].iov_base; /* from a NULL base: the offset */
      if (iov[i].iov_len == 0) continue;
      if (*n > 0 && pieces[*n - 1].off + (ptrdiff_t)pieces[*n - 1].len == off) {
        pieces[*n - 1].len += iov[i].iov_len;
      } else if (*n == most) {
        free(pieces); /* too many: the whole span goes in one copy */
        pieces = NULL;
      } else {
        pieces[(*n)++] = (coll_gpu_piece_t){off, iov[i].iov_len};
      }
    }
    if (pieces == NULL) break;
  }
  OBJ_RELEASE(conv);
  return pieces;
}

int mca_coll_gpu_stage(coll_gpu_stage_t *st, const void *buf, coll_gpu_span_t span, size_t bytes, coll_gpu_dir_t dir,
                       void **host) {
  *host = (void *)buf;
  if (buf == MPI_IN_PLACE || span.len == 0) return OMPI_SUCCESS;
  /* the memory of the first byte the call touches: with MPI_BOTTOM (NULL) the datatype's addresses are absolute */
  coll_gpu_meminfo_t mem;
  coll_gpu_mem_classify((const char *)buf + span.lo, &mem);
  const coll_gpu_copy_engine_t *engine = &coll_gpu_cuda_engine;
  if (mem.kind == COLL_GPU_MEM_HOST) {
    if (!mca_coll_gpu_component.force_staging || mca_coll_gpu_nesting > 0) return OMPI_SUCCESS;
    engine = &coll_gpu_host_engine;
  }
  size_t npieces = 0;
  coll_gpu_piece_t *pieces = span.layout != NULL && span.len >= SPARSE_MIN_SPAN && bytes * SPARSE_RATIO <= span.len
                                 ? sparse_pieces(span, &npieces)
                                 : NULL;
  if (dir == COLL_GPU_OUT && bytes < span.len && pieces == NULL) dir = COLL_GPU_INOUT;
  COLL_GPU_LOG(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_STAGE, "%s buffer %p (device %d): %zu bytes at offset %td%s, %s",
               kind_name(mem.kind), buf, mem.device, span.len, span.lo, pieces != NULL ? " (its pieces only)" : "",
               dir == COLL_GPU_IN    ? "in"
               : dir == COLL_GPU_OUT ? "out"
                                     : "in and out");
  if (coll_gpu_stage_pieces(st, (void *)buf, span, pieces, npieces, dir, &mem, engine, host) != COLL_GPU_SUCCESS)
    return OMPI_ERROR;
  __atomic_fetch_add(&staged_buffers, 1, __ATOMIC_RELAXED);
  return OMPI_SUCCESS;
}

int mca_coll_gpu_stage_pair(coll_gpu_stage_t *st, const void *sbuf, coll_gpu_span_t sspan, size_t sbytes, void *rbuf,
                            coll_gpu_span_t rspan, size_t rbytes, void **hs, void **hr) {
  int rc = mca_coll_gpu_stage(st, sbuf, sspan, sbytes, COLL_GPU_IN, hs);
  if (rc != OMPI_SUCCESS) return rc;
  return mca_coll_gpu_stage(st, rbuf, rspan, rbytes, sbuf == MPI_IN_PLACE ? COLL_GPU_INOUT : COLL_GPU_OUT, hr);
}

static void report(const coll_gpu_stage_t *st, struct ompi_communicator_t *comm, const char *op) {
  opal_show_help("help-mpi-coll-gpu.txt", "staging failed", true, op, comm->c_name, st->failed, st->failed_engine->name,
                 st->reason);
}

int mca_coll_gpu_unstage(coll_gpu_stage_t *st, int rc, struct ompi_communicator_t *comm, const char *op) {
  if (st->count > 0)
    COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "%s on comm %s: %d buffer(s) staged through host memory", op,
                 comm->c_name, st->count);
  if (coll_gpu_stage_finish(st, rc == OMPI_SUCCESS) != COLL_GPU_SUCCESS) {
    report(st, comm, op);
    return OMPI_ERROR;
  }
  return rc;
}

/* A nonblocking collective whose buffers go back when its request completes. */
#define PENDING_MAGIC 0x636f6c6c67707521ull /* "collgpu!": tells our data from a request */
typedef struct {
  uint64_t magic;
  ompi_request_t *request;
  coll_gpu_stage_t st;
  struct ompi_communicator_t *comm;
  const char *op;
  ompi_request_complete_fn_t chained_cb; /* a callback the request had before ours */
  void *chained_data;
} pending_t;

/* Completion callback. Open MPI calls it with the request; but the MPI bindings of 4.1 wrap it after
 * the collective returns (to release datatypes) and then call it with its data instead. */
static int pending_complete(ompi_request_t *arg) {
  pending_t *p = (pending_t *)arg;
  if (p->magic != PENDING_MAGIC) p = (pending_t *)arg->req_complete_cb_data;
  ompi_request_t *request = p->request;
  if (p->chained_cb != NULL) {
    request->req_complete_cb_data = p->chained_data;
    int again = p->chained_cb(request);
    if (again != 0) {
      /* its owner restarted the request: wait for the next completion, behind what it installed */
      p->chained_cb = request->req_complete_cb;
      p->chained_data = request->req_complete_cb_data;
      request->req_complete_cb_data = p;
      request->req_complete_cb = pending_complete;
      return again;
    }
  }
  if (coll_gpu_stage_finish(&p->st, request->req_status.MPI_ERROR == MPI_SUCCESS) != 0) {
    report(&p->st, p->comm, p->op);
    request->req_status.MPI_ERROR = MPI_ERR_OTHER;
  }
  p->magic = 0;
  free(p);
  return 0;
}

int mca_coll_gpu_ibegin(const coll_gpu_stage_t *st, void **pending) {
  *pending = NULL;
  if (st->count == 0) return OMPI_SUCCESS;
  *pending = malloc(sizeof(pending_t));
  return *pending == NULL ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

int mca_coll_gpu_iend(coll_gpu_stage_t *st, int rc, void *pending, struct ompi_communicator_t *comm, const char *op,
                      ompi_request_t **request) {
  if (rc != OMPI_SUCCESS || pending == NULL) {
    free(pending);
    return mca_coll_gpu_unstage(st, rc, comm, op);
  }
  COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL,
               "%s on comm %s: %d buffer(s) staged through host memory, copied back at completion", op, comm->c_name,
               st->count);
  pending_t *p = (pending_t *)pending;
  p->magic = PENDING_MAGIC;
  p->request = *request;
  p->st = *st;
  p->comm = comm;
  p->op = op;
  p->chained_cb = (*request)->req_complete_cb;
  p->chained_data = (*request)->req_complete_cb_data;
  /* runs pending_complete at once if the request has completed already */
  ompi_request_set_callback(*request, pending_complete, p);
  return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ persistent collectives */

/* A persistent collective with staged buffers. Its request belongs to the previous module; our start and
 * free stand in front of that module's, and find this record by the request. */
typedef struct persistent {
  ompi_request_t *request;
  coll_gpu_stage_t st;
  struct ompi_communicator_t *comm;
  const char *op;
  ompi_request_start_fn_t start; /* the previous module's */
  ompi_request_free_fn_t free;
  struct persistent *next;
} persistent_t;

static struct {
  pthread_mutex_t lock;
  persistent_t *head;
} persistents = {PTHREAD_MUTEX_INITIALIZER, NULL};

/* The record of request, taken out of the list when `unlink`. */
static persistent_t *persistent_of(const ompi_request_t *request, bool unlink) {
  pthread_mutex_lock(&persistents.lock);
  persistent_t **at = &persistents.head;
  while (*at != NULL && (*at)->request != request) at = &(*at)->next;
  persistent_t *p = *at;
  if (p != NULL && unlink) *at = p->next;
  pthread_mutex_unlock(&persistents.lock);
  return p;
}

/* Completion of one start: the results go back to the user's buffers. */
static int persistent_complete(ompi_request_t *request) {
  persistent_t *p = persistent_of(request, false);
  if (p != NULL && request->req_status.MPI_ERROR == MPI_SUCCESS &&
      coll_gpu_stage_copy_out(&p->st) != COLL_GPU_SUCCESS) {
    report(&p->st, p->comm, p->op);
    request->req_status.MPI_ERROR = MPI_ERR_OTHER;
  }
  return 0;
}

/* MPI_Start(all): copy in, then the previous module's start, then the copy back at completion. */
static int persistent_start(size_t count, ompi_request_t **requests) {
  for (size_t i = 0; i < count; ++i) {
    persistent_t *p = persistent_of(requests[i], false);
    if (p == NULL) return OMPI_ERR_BAD_PARAM;
    p->st.status = COLL_GPU_SUCCESS; /* a failure of an earlier start is not this one's */
    if (coll_gpu_stage_copy_in(&p->st) != COLL_GPU_SUCCESS) {
      report(&p->st, p->comm, p->op);
      return OMPI_ERROR;
    }
    int rc = p->start(1, &requests[i]);
    if (rc != OMPI_SUCCESS) return rc;
    COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL, "%s on comm %s: started, %d buffer(s) staged", p->op,
                 p->comm->c_name, p->st.count);
    ompi_request_set_callback(requests[i], persistent_complete, p); /* at once if it completed already */
  }
  return OMPI_SUCCESS;
}

/* MPI_Request_free: an active request is completed first (its results go back), then the bounce
 * buffers are released and the previous module frees its request. */
static int persistent_free(ompi_request_t **request) {
  if ((*request)->req_state == OMPI_REQUEST_ACTIVE) ompi_request_wait_completion(*request);
  persistent_t *p = persistent_of(*request, true);
  if (p == NULL) return OMPI_ERR_BAD_PARAM;
  coll_gpu_stage_finish(&p->st, false);
  /* the previous module recycles its request objects without setting these again */
  (*request)->req_start = p->start;
  (*request)->req_free = p->free;
  int rc = p->free(request);
  free(p);
  return rc;
}

int mca_coll_gpu_pbegin(const coll_gpu_stage_t *st, void **persistent) {
  *persistent = NULL;
  if (st->count == 0) return OMPI_SUCCESS;
  *persistent = calloc(1, sizeof(persistent_t));
  return *persistent == NULL ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

int mca_coll_gpu_pend(coll_gpu_stage_t *st, int rc, void *persistent, struct ompi_communicator_t *comm, const char *op,
                      ompi_request_t **request) {
  if (rc != OMPI_SUCCESS || persistent == NULL) {
    free(persistent);
    return mca_coll_gpu_unstage(st, rc, comm, op);
  }
  COLL_GPU_LOG(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_COLL,
               "%s on comm %s: %d buffer(s) staged through host memory at each start", op, comm->c_name, st->count);
  persistent_t *p = persistent;
  p->request = *request;
  p->st = *st;
  p->comm = comm;
  p->op = op;
  p->start = (*request)->req_start;
  p->free = (*request)->req_free;
  (*request)->req_start = persistent_start;
  (*request)->req_free = persistent_free;
  pthread_mutex_lock(&persistents.lock);
  p->next = persistents.head;
  persistents.head = p;
  pthread_mutex_unlock(&persistents.lock);
  return OMPI_SUCCESS;
}
