/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Staging of device buffers through host memory. See engine/stage.h.
 *
 * A staged buffer is copied as the whole byte span its datatype layout covers, holes included: one
 * large copy instead of one per block. A receive buffer whose span has holes is staged INOUT, so the
 * holes go back with the bytes they had. A sparse layout (a few bytes over a large extent) is staged
 * through its pieces instead (coll_gpu_stage_pieces): a copy per piece into host memory that holds pages
 * only where they are.
 */
#include "engine/stage.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/owning.h"
#include "kernels/staging.h"

/* ------------------------------------------------------------------ spans */

coll_gpu_span_t coll_gpu_span_of(ptrdiff_t true_lb, ptrdiff_t true_extent, ptrdiff_t extent, size_t count) {
  coll_gpu_span_t s = {0, 0, nullptr, 0};
  if (count == 0 || true_extent <= 0) return s;
  ptrdiff_t last = true_lb + (ptrdiff_t)(count - 1) * extent;
  ptrdiff_t lo = last < true_lb ? last : true_lb;
  ptrdiff_t hi = (last > true_lb ? last : true_lb) + true_extent;
  s.lo = lo;
  s.len = (size_t)(hi - lo);
  return s;
}

coll_gpu_span_t coll_gpu_span_shift(coll_gpu_span_t s, ptrdiff_t shift) {
  if (s.len != 0) s.lo += shift;
  s.layout = nullptr;
  return s;
}

coll_gpu_span_t coll_gpu_span_union(coll_gpu_span_t a, coll_gpu_span_t b) {
  if (a.len == 0) return b;
  if (b.len == 0) return a;
  ptrdiff_t lo = a.lo < b.lo ? a.lo : b.lo;
  ptrdiff_t ahi = a.lo + (ptrdiff_t)a.len, bhi = b.lo + (ptrdiff_t)b.len;
  coll_gpu_span_t s = {lo, (size_t)((ahi > bhi ? ahi : bhi) - lo), nullptr, 0};
  return s;
}

/* ------------------------------------------------------------------ engines */

namespace {

// What a failed host allocation says.
constexpr const char *kOutOfMemory = "out of host memory";

// Each runs in the context that owns the buffer, the caller's coming back after (engine/owning.h).
coll_gpu_status_t cuda_alloc(void **ptr, size_t bytes, const coll_gpu_meminfo_t *owner) {
  const coll_gpu::ContextScope ctx(*owner);
  return ctx.rc() == COLL_GPU_SUCCESS ? coll_gpu_staging_host_alloc(ptr, bytes) : ctx.rc();
}

void cuda_release(void *ptr, const coll_gpu_meminfo_t *owner) {
  const coll_gpu::ContextScope ctx(*owner);
  if (ctx.rc() == COLL_GPU_SUCCESS) coll_gpu_staging_host_free(ptr);
}

coll_gpu_status_t cuda_copy(void *dst, const void *src, size_t bytes, const coll_gpu_meminfo_t *owner) {
  const coll_gpu::ContextScope ctx(*owner);
  return ctx.rc() == COLL_GPU_SUCCESS ? coll_gpu_staging_copy(dst, src, bytes) : ctx.rc();
}

coll_gpu_status_t host_alloc(void **ptr, size_t bytes, const coll_gpu_meminfo_t *) {
  *ptr = malloc(bytes);
  return *ptr == nullptr ? COLL_GPU_SYSTEM_ERROR : COLL_GPU_SUCCESS;
}

void host_release(void *ptr, const coll_gpu_meminfo_t *) { free(ptr); }

coll_gpu_status_t host_copy(void *dst, const void *src, size_t bytes, const coll_gpu_meminfo_t *) {
  memcpy(dst, src, bytes);
  return COLL_GPU_SUCCESS;
}

const char *host_reason() { return kOutOfMemory; }  // its only failure

}  // namespace

const coll_gpu_copy_engine_t coll_gpu_cuda_engine = {"cuda", cuda_alloc, cuda_release, cuda_copy,
                                                     coll_gpu_kernels_error};
const coll_gpu_copy_engine_t coll_gpu_host_engine = {"host", host_alloc, host_release, host_copy, host_reason};

/* ------------------------------------------------------------------ bounce buffer cache */

namespace {

// Sizes are rounded up to a power of two from 4 KiB (one page) to 64 MiB, then to 2 MiB multiples (a
// huge page), so that a reused buffer wastes at most half of itself, or 2 MiB for large ones.
constexpr size_t kMinBounce = 4096;
constexpr size_t kPow2Max = (size_t)64 << 20;
constexpr size_t kLargeRound = (size_t)2 << 20;

}  // namespace

/* A bounce buffer: in the cache, or with the staged buffer using it. */
struct coll_gpu_bounce {
  coll_gpu_bounce_t *next;
  void *ptr;
  size_t bytes;
  bool sparse;              /* anonymous memory of a sparse layout: unmapped at finish, never cached */
  coll_gpu_meminfo_t owner; /* what it was allocated for: it is released in that context */
  const coll_gpu_copy_engine_t *engine;
};

namespace {

// The process's cache: every communicator and thread stages through it.
struct Cache {
  pthread_mutex_t lock;
  coll_gpu_bounce_t *head;
  size_t bytes;
  size_t limit;
  size_t allocs;
} cache = {PTHREAD_MUTEX_INITIALIZER, nullptr, 0, (size_t)256 << 20, 0};

// Holds the cache's lock for its scope.
class Locked {
 public:
  Locked() { pthread_mutex_lock(&cache.lock); }
  ~Locked() { pthread_mutex_unlock(&cache.lock); }
  Locked(const Locked &) = delete;
  Locked &operator=(const Locked &) = delete;
};

size_t round_size(size_t n) {
  if (n <= kMinBounce) return kMinBounce;
  if (n > kPow2Max) return (n + kLargeRound - 1) / kLargeRound * kLargeRound;
  size_t s = kMinBounce;
  while (s < n) s <<= 1;
  return s;
}

// Frees a list of bounce buffers (outside the lock: a release may take a while).
void release_all(coll_gpu_bounce_t *c) {
  while (c != nullptr) {
    coll_gpu_bounce_t *next = c->next;
    c->engine->release(c->ptr, &c->owner);
    free(c);
    c = next;
  }
}

// Takes the smallest cached buffer of this engine that holds `bytes` (a rounded size) and is at most
// twice as large.
coll_gpu_bounce_t *cache_take(const coll_gpu_copy_engine_t *engine, size_t bytes) {
  Locked held;
  coll_gpu_bounce_t **best = nullptr;
  for (coll_gpu_bounce_t **p = &cache.head; *p != nullptr; p = &(*p)->next) {
    coll_gpu_bounce_t *c = *p;
    if (c->engine != engine || c->bytes < bytes || c->bytes / 2 > bytes) continue;
    if (best == nullptr || c->bytes < (*best)->bytes) best = p;
  }
  if (best == nullptr) return nullptr;
  coll_gpu_bounce_t *c = *best;
  *best = c->next;
  cache.bytes -= c->bytes;
  return c;
}

// Returns a buffer to the cache; buffers beyond the limit are freed, oldest first.
void cache_give(coll_gpu_bounce_t *c) {
  coll_gpu_bounce_t *evict = nullptr;
  {
    Locked held;
    c->next = cache.head;
    cache.head = c;
    cache.bytes += c->bytes;
    while (cache.bytes > cache.limit) {
      coll_gpu_bounce_t **p = &cache.head;
      while ((*p)->next != nullptr) p = &(*p)->next;
      coll_gpu_bounce_t *old = *p;
      *p = nullptr;
      cache.bytes -= old->bytes;
      old->next = evict;
      evict = old;
    }
  }
  release_all(evict);
}

}  // namespace

void coll_gpu_stage_cache_limit(size_t bytes) {
  Locked held;
  cache.limit = bytes;
}

size_t coll_gpu_stage_cache_bytes(void) {
  Locked held;
  return cache.bytes;
}

size_t coll_gpu_stage_cache_allocs(void) {
  Locked held;
  return cache.allocs;
}

void coll_gpu_stage_cache_flush(void) {
  coll_gpu_bounce_t *c;
  {
    Locked held;
    c = cache.head;
    cache.head = nullptr;
    cache.bytes = 0;
  }
  release_all(c);
}

/* ------------------------------------------------------------------ staging */

void coll_gpu_stage_init(coll_gpu_stage_t *st) {
  st->count = 0;
  st->status = COLL_GPU_SUCCESS;
  st->reason = nullptr;
  st->failed = nullptr;
  st->failed_engine = nullptr;
}

namespace {

// Records the first failure of a call: what failed, and why.
coll_gpu_status_t fail(coll_gpu_stage_t *st, coll_gpu_status_t status, const char *reason, const char *what,
                       const coll_gpu_copy_engine_t *engine) {
  if (st->status == COLL_GPU_SUCCESS) {
    st->status = status;
    st->reason = reason;
    st->failed = what;
    st->failed_engine = engine;
  }
  return status;
}

}  // namespace

namespace {

// A bounce buffer of the span's size for b, from the cache or newly allocated.
coll_gpu_status_t take_bounce(coll_gpu_stage_t *st, coll_gpu_staged_t *b, const coll_gpu_copy_engine_t *engine,
                              const coll_gpu_meminfo_t *mem) {
  const size_t bytes = round_size(b->span.len);
  coll_gpu_bounce_t *c = cache_take(engine, bytes);
  if (c == nullptr) {
    c = (coll_gpu_bounce_t *)calloc(1, sizeof(*c));
    if (c == nullptr) return fail(st, COLL_GPU_SYSTEM_ERROR, kOutOfMemory, "allocate", engine);
    const coll_gpu_status_t rc = engine->alloc(&c->ptr, bytes, mem);
    if (rc != COLL_GPU_SUCCESS) {
      free(c);
      return fail(st, rc, engine->reason(), "allocate", engine);
    }
    c->bytes = bytes;
    c->owner = *mem;
    c->engine = engine;
    Locked held;
    cache.allocs++;
  }
  b->block = c;
  return COLL_GPU_SUCCESS;
}

}  // namespace

namespace {

// Copies a staged buffer's bytes to its bounce buffer (in) or back (out): the span, or each piece.
coll_gpu_status_t copy_staged(const coll_gpu_staged_t *b, bool in) {
  const size_t n = b->pieces != nullptr ? b->npieces : 1;
  for (size_t i = 0; i < n; ++i) {
    const ptrdiff_t off = b->pieces != nullptr ? b->pieces[i].off : b->span.lo;
    const size_t len = b->pieces != nullptr ? b->pieces[i].len : b->span.len;
    char *user = (char *)b->user + off, *bounce = b->bounce + (off - b->span.lo);
    const coll_gpu_status_t rc =
        in ? b->engine->copy(bounce, user, len, &b->mem) : b->engine->copy(user, bounce, len, &b->mem);
    if (rc != COLL_GPU_SUCCESS) return rc;
  }
  return COLL_GPU_SUCCESS;
}

// Gives a bounce buffer back: to the cache, or unmapped (a sparse layout's).
void give_back(coll_gpu_bounce_t *c) {
  if (!c->sparse) {
    cache_give(c);
    return;
  }
  munmap(c->ptr, c->bytes);
  free(c);
}

}  // namespace

coll_gpu_status_t coll_gpu_stage_buffer(coll_gpu_stage_t *st, void *user, coll_gpu_span_t span, coll_gpu_dir_t dir,
                                        const coll_gpu_meminfo_t *mem, const coll_gpu_copy_engine_t *engine,
                                        void **host) {
  return coll_gpu_stage_pieces(st, user, span, nullptr, 0, dir, mem, engine, host);
}

coll_gpu_status_t coll_gpu_stage_pieces(coll_gpu_stage_t *st, void *user, coll_gpu_span_t span,
                                        coll_gpu_piece_t *pieces, size_t npieces, coll_gpu_dir_t dir,
                                        const coll_gpu_meminfo_t *mem, const coll_gpu_copy_engine_t *engine,
                                        void **host) {
  *host = user;
  if (span.len == 0) {  // nothing is touched: the pointer is passed on, never dereferenced
    free(pieces);
    return COLL_GPU_SUCCESS;
  }
  if (st->count == COLL_GPU_STAGE_MAX) {
    free(pieces);
    return fail(st, COLL_GPU_INTERNAL_ERROR, "more buffers than a call stages", "track", engine);
  }
  coll_gpu_staged_t *b = &st->buf[st->count];
  b->user = user;
  b->span = span;
  b->pieces = pieces;
  b->npieces = npieces;
  b->dir = dir;
  b->mem = *mem;
  b->engine = engine;
  if (pieces != nullptr) {
    // pages only where the pieces are: the rest of the span is address space, never touched
    coll_gpu_bounce_t *c = (coll_gpu_bounce_t *)calloc(1, sizeof(*c));
    void *m = c == nullptr
                  ? MAP_FAILED
                  : mmap(nullptr, span.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      free(c);
      free(pieces);
      b->pieces = nullptr;
      return fail(st, COLL_GPU_SYSTEM_ERROR, kOutOfMemory, "allocate", engine);
    }
    c->ptr = m;
    c->bytes = span.len;
    c->sparse = true;
    c->owner = *mem;
    c->engine = engine;
    b->block = c;
  } else {
    const coll_gpu_status_t rc = take_bounce(st, b, engine, mem);
    if (rc != COLL_GPU_SUCCESS) return rc;
  }
  b->bounce = (char *)b->block->ptr;
  st->count++;
  if (dir & COLL_GPU_IN) {
    const coll_gpu_status_t rc = copy_staged(b, true);
    if (rc != COLL_GPU_SUCCESS) return fail(st, rc, engine->reason(), "copy to host", engine);
  }
  // The collective addresses user + off for off in the span: hand it the base that maps the span onto
  // the bounce buffer.
  *host = (void *)((uintptr_t)b->bounce - (uintptr_t)span.lo);
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t coll_gpu_stage_copy_in(coll_gpu_stage_t *st) {
  for (int i = 0; i < st->count; ++i) {
    coll_gpu_staged_t *b = &st->buf[i];
    if (!(b->dir & COLL_GPU_IN)) continue;
    const coll_gpu_status_t rc = copy_staged(b, true);
    if (rc != COLL_GPU_SUCCESS) return fail(st, rc, b->engine->reason(), "copy to host", b->engine);
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t coll_gpu_stage_copy_out(coll_gpu_stage_t *st) {
  for (int i = 0; i < st->count; ++i) {  // every buffer is tried: one failed copy loses no other
    coll_gpu_staged_t *b = &st->buf[i];
    if (!(b->dir & COLL_GPU_OUT)) continue;
    const coll_gpu_status_t rc = copy_staged(b, false);
    if (rc != COLL_GPU_SUCCESS) fail(st, rc, b->engine->reason(), "copy to device", b->engine);
  }
  return st->status;
}

coll_gpu_status_t coll_gpu_stage_finish(coll_gpu_stage_t *st, bool copy_back) {
  if (copy_back) coll_gpu_stage_copy_out(st);
  for (int i = 0; i < st->count; ++i) {
    give_back(st->buf[i].block);
    free(st->buf[i].pieces);
  }
  st->count = 0;
  return st->status;
}
