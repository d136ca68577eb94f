/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Staging of device buffers through host memory: byte spans of datatype layouts, a cache of bounce
 * buffers, and the copy engines. A C API without Open MPI headers (stage.cc is the engine's C++): the
 * unit tests drive it on host memory through the host copy engine.
 */
#ifndef COLL_GPU_STAGE_H
#define COLL_GPU_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/status.h"
#include "kernels/gpu_mem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes [lo, lo + len) relative to a buffer's base pointer. len == 0: nothing is touched. A span made
 * from `count` elements of one datatype also names it (`layout`, the glue's datatype, opaque here), so
 * that a sparse one can be staged through its pieces; moved or joined spans name none. */
typedef struct {
  ptrdiff_t lo;
  size_t len;
  const void *layout;
  size_t count;
} coll_gpu_span_t;

/* The span of `count` elements of a datatype with the given true lower bound, true extent and extent
 * (the extent may be negative or smaller than the true extent). */
coll_gpu_span_t coll_gpu_span_of(ptrdiff_t true_lb, ptrdiff_t true_extent, ptrdiff_t extent, size_t count);
/* The span moved by `shift` bytes (no layout). */
coll_gpu_span_t coll_gpu_span_shift(coll_gpu_span_t s, ptrdiff_t shift);
/* The smallest span covering both; an empty span is ignored. */
coll_gpu_span_t coll_gpu_span_union(coll_gpu_span_t a, coll_gpu_span_t b);

/* How a collective uses a buffer. */
typedef enum {
  COLL_GPU_IN = 1,   /* read only: copied to the host before */
  COLL_GPU_OUT = 2,  /* written only: copied back after */
  COLL_GPU_INOUT = 3 /* read and written, or written with holes that must keep their bytes */
} coll_gpu_dir_t;

/* Moves bytes between a user buffer and host bounce memory. Its functions return the project's status (a CUDA or a
 * system error where they fail), and reason() the reason of the calling thread's last failure of the engine. */
typedef struct coll_gpu_copy_engine {
  const char *name;
  coll_gpu_status_t (*alloc)(void **ptr, size_t bytes, const coll_gpu_meminfo_t *owner);
  void (*release)(void *ptr, const coll_gpu_meminfo_t *owner);
  coll_gpu_status_t (*copy)(void *dst, const void *src, size_t bytes, const coll_gpu_meminfo_t *owner);
  const char *(*reason)(void);
} coll_gpu_copy_engine_t;

/* Device and managed memory, through the CUDA runtime, in the context that owns the buffer. */
extern const coll_gpu_copy_engine_t coll_gpu_cuda_engine;
/* Host memory with malloc and memcpy: the staging path without a GPU (tests, coll_gpu_force_staging). */
extern const coll_gpu_copy_engine_t coll_gpu_host_engine;

/* Bounce buffers are kept for reuse up to this many bytes in all (coll_gpu_stage_cache_size). */
void coll_gpu_stage_cache_limit(size_t bytes);
/* Frees every cached bounce buffer. */
void coll_gpu_stage_cache_flush(void);
/* Bytes now held in the cache, and buffers allocated since start (for tests and verbose output). */
size_t coll_gpu_stage_cache_bytes(void);
size_t coll_gpu_stage_cache_allocs(void);

/* A bounce buffer with its cache bookkeeping (stage.cc). */
typedef struct coll_gpu_bounce coll_gpu_bounce_t;

/* Bytes [off, off + len) of a buffer, relative to its base pointer: one piece of a sparse layout. */
typedef struct {
  ptrdiff_t off;
  size_t len;
} coll_gpu_piece_t;

/* One staged buffer of a collective call. */
typedef struct {
  void *user;               /* the user's base pointer */
  coll_gpu_bounce_t *block; /* the bounce buffer it is staged in, back to the cache at finish */
  char *bounce;             /* block's host memory, holding span.len bytes */
  coll_gpu_span_t span;
  coll_gpu_piece_t *pieces; /* a sparse layout's pieces, the only bytes copied (owned); NULL: the span */
  size_t npieces;
  coll_gpu_dir_t dir;
  coll_gpu_meminfo_t mem;
  const coll_gpu_copy_engine_t *engine;
} coll_gpu_staged_t;

/* The staged buffers of one collective call (at most a send and a receive buffer). */
#define COLL_GPU_STAGE_MAX 2
typedef struct {
  int count;
  coll_gpu_staged_t buf[COLL_GPU_STAGE_MAX];
  coll_gpu_status_t status; /* the first failure, COLL_GPU_SUCCESS if none */
  const char *reason;       /* and its reason, in words */
  const char *failed;       /* what failed: "allocate", "copy to host", "copy to device", "track" */
  const coll_gpu_copy_engine_t *failed_engine;
} coll_gpu_stage_t;

void coll_gpu_stage_init(coll_gpu_stage_t *st);
/* Stages `user` (memory described by mem, copied by engine) for a collective that touches `span`
 * bytes of it in direction dir. *host receives the pointer to hand to the host collective in its
 * place (it addresses the same span inside bounce memory). A failure is also recorded in st (the
 * first of the call: status, reason, failed, failed_engine), and returned. */
coll_gpu_status_t coll_gpu_stage_buffer(coll_gpu_stage_t *st, void *user, coll_gpu_span_t span, coll_gpu_dir_t dir,
                                        const coll_gpu_meminfo_t *mem, const coll_gpu_copy_engine_t *engine,
                                        void **host);
/* The same for a sparse layout: only pieces[0..npieces) (inside span, not overlapping) are copied, in and
 * out, and the bounce buffer is host memory of the span's size that holds pages only where the pieces
 * are (never pinned, never cached). What lies between the pieces is never copied back, so an OUT buffer
 * needs no copy in. The pieces array is taken over (freed at finish, or here on a failure). */
coll_gpu_status_t coll_gpu_stage_pieces(coll_gpu_stage_t *st, void *user, coll_gpu_span_t span,
                                        coll_gpu_piece_t *pieces, size_t npieces, coll_gpu_dir_t dir,
                                        const coll_gpu_meminfo_t *mem, const coll_gpu_copy_engine_t *engine,
                                        void **host);
/* Copies IN and INOUT buffers to their bounce buffers again (a persistent collective's next start).
 * Returns st->status after it. */
coll_gpu_status_t coll_gpu_stage_copy_in(coll_gpu_stage_t *st);
/* Copies OUT and INOUT buffers back; every one is tried. Returns st->status after it. */
coll_gpu_status_t coll_gpu_stage_copy_out(coll_gpu_stage_t *st);
/* Copies OUT and INOUT buffers back when `copy_back`, then returns every bounce buffer to the cache.
 * Returns st->status after it. */
coll_gpu_status_t coll_gpu_stage_finish(coll_gpu_stage_t *st, bool copy_back);

#ifdef __cplusplus
}
#endif
#endif
