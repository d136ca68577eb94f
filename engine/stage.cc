/*
 * Staging of device buffers through host memory. See engine/stage.h.
 *
 * A staged buffer is copied as the whole byte span its datatype layout covers, holes included: one
 * large copy instead of one per block. A receive buffer whose span has holes is staged INOUT, so the
 * holes go back with the bytes they had.
 */
#include "engine/stage.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/staging.h"

/* ------------------------------------------------------------------ spans */

coll_gpu_span_t coll_gpu_span_of(ptrdiff_t true_lb, ptrdiff_t true_extent, ptrdiff_t extent, size_t count) {
  coll_gpu_span_t s = {0, 0};
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
  return s;
}

coll_gpu_span_t coll_gpu_span_union(coll_gpu_span_t a, coll_gpu_span_t b) {
  if (a.len == 0) return b;
  if (b.len == 0) return a;
  ptrdiff_t lo = a.lo < b.lo ? a.lo : b.lo;
  ptrdiff_t ahi = a.lo + (ptrdiff_t)a.len, bhi = b.lo + (ptrdiff_t)b.len;
  coll_gpu_span_t s = {lo, (size_t)((ahi > bhi ? ahi : bhi) - lo)};
  return s;
}

/* ------------------------------------------------------------------ engines */

static int cuda_alloc(void **ptr, size_t bytes, const coll_gpu_meminfo_t *owner) {
  void *saved;
  int rc = coll_gpu_mem_ctx_enter(owner, &saved);
  if (rc == 0) rc = coll_gpu_staging_host_alloc(ptr, bytes);
  coll_gpu_mem_ctx_leave(saved);
  return rc;
}

static void cuda_release(void *ptr, const coll_gpu_meminfo_t *owner) {
  void *saved;
  if (coll_gpu_mem_ctx_enter(owner, &saved) == 0) coll_gpu_staging_host_free(ptr);
  coll_gpu_mem_ctx_leave(saved);
}

static int cuda_copy(void *dst, const void *src, size_t bytes, const coll_gpu_meminfo_t *owner) {
  void *saved;
  int rc = coll_gpu_mem_ctx_enter(owner, &saved);
  if (rc == 0) rc = coll_gpu_staging_copy(dst, src, bytes);
  coll_gpu_mem_ctx_leave(saved);
  return rc;
}

const coll_gpu_copy_engine_t coll_gpu_cuda_engine = {"cuda", cuda_alloc, cuda_release, cuda_copy,
                                                     coll_gpu_staging_error_string};

static int host_alloc(void **ptr, size_t bytes, const coll_gpu_meminfo_t *owner) {
  (void)owner;
  *ptr = malloc(bytes);
  return *ptr == NULL ? 2 /* like cudaErrorMemoryAllocation */ : 0;
}

static void host_release(void *ptr, const coll_gpu_meminfo_t *owner) {
  (void)owner;
  free(ptr);
}

static int host_copy(void *dst, const void *src, size_t bytes, const coll_gpu_meminfo_t *owner) {
  (void)owner;
  memcpy(dst, src, bytes);
  return 0;
}

static const char *host_error_string(int err) { return err == 2 ? "out of host memory" : "host copy error"; }

const coll_gpu_copy_engine_t coll_gpu_host_engine = {"host", host_alloc, host_release, host_copy, host_error_string};

/* ------------------------------------------------------------------ bounce buffer cache */

/* Sizes are rounded up to a power of two from 4 KiB (one page) to 64 MiB, then to 2 MiB multiples
 * (a huge page), so that a reused buffer wastes at most half of itself, or 2 MiB for large ones. */
#define MIN_BOUNCE ((size_t)4096)
#define POW2_MAX ((size_t)64 << 20)
#define LARGE_ROUND ((size_t)2 << 20)

/* A bounce buffer: in the cache, or with the staged buffer using it. */
struct coll_gpu_bounce {
  coll_gpu_bounce_t *next;
  void *ptr;
  size_t bytes;
  coll_gpu_meminfo_t owner; /* what it was allocated for: it is released in that context */
  const coll_gpu_copy_engine_t *engine;
};

static struct {
  pthread_mutex_t lock;
  coll_gpu_bounce_t *head;
  size_t bytes;
  size_t limit;
  size_t allocs;
} cache = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, (size_t)256 << 20, 0};

static size_t round_size(size_t n) {
  if (n <= MIN_BOUNCE) return MIN_BOUNCE;
  if (n > POW2_MAX) return (n + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
  size_t s = MIN_BOUNCE;
  while (s < n) s <<= 1;
  return s;
}

void coll_gpu_stage_cache_limit(size_t bytes) {
  pthread_mutex_lock(&cache.lock);
  cache.limit = bytes;
  pthread_mutex_unlock(&cache.lock);
}

size_t coll_gpu_stage_cache_bytes(void) {
  pthread_mutex_lock(&cache.lock);
  size_t b = cache.bytes;
  pthread_mutex_unlock(&cache.lock);
  return b;
}

size_t coll_gpu_stage_cache_allocs(void) {
  pthread_mutex_lock(&cache.lock);
  size_t n = cache.allocs;
  pthread_mutex_unlock(&cache.lock);
  return n;
}

/* Takes the smallest cached buffer of this engine that holds `bytes` (a rounded size) and is at most
 * twice as large. */
static coll_gpu_bounce_t *cache_take(const coll_gpu_copy_engine_t *engine, size_t bytes) {
  coll_gpu_bounce_t **best = NULL;
  pthread_mutex_lock(&cache.lock);
  for (coll_gpu_bounce_t **p = &cache.head; *p != NULL; p = &(*p)->next) {
    coll_gpu_bounce_t *c = *p;
    if (c->engine != engine || c->bytes < bytes || c->bytes / 2 > bytes) continue;
    if (best == NULL || c->bytes < (*best)->bytes) best = p;
  }
  coll_gpu_bounce_t *c = NULL;
  if (best != NULL) {
    c = *best;
    *best = c->next;
    cache.bytes -= c->bytes;
  }
  pthread_mutex_unlock(&cache.lock);
  return c;
}

/* Returns a buffer to the cache; buffers beyond the limit are freed, oldest first. */
static void cache_give(coll_gpu_bounce_t *c) {
  coll_gpu_bounce_t *evict = NULL;
  pthread_mutex_lock(&cache.lock);
  c->next = cache.head;
  cache.head = c;
  cache.bytes += c->bytes;
  while (cache.bytes > cache.limit) {
    coll_gpu_bounce_t **p = &cache.head;
    while ((*p)->next != NULL) p = &(*p)->next;
    coll_gpu_bounce_t *old = *p;
    *p = NULL;
    cache.bytes -= old->bytes;
    old->next = evict;
    evict = old;
  }
  pthread_mutex_unlock(&cache.lock);
  while (evict != NULL) {
    coll_gpu_bounce_t *next = evict->next;
    evict->engine->release(evict->ptr, &evict->owner);
    free(evict);
    evict = next;
  }
}

void coll_gpu_stage_cache_flush(void) {
  pthread_mutex_lock(&cache.lock);
  coll_gpu_bounce_t *c = cache.head;
  cache.head = NULL;
  cache.bytes = 0;
  pthread_mutex_unlock(&cache.lock);
  while (c != NULL) {
    coll_gpu_bounce_t *next = c->next;
    c->engine->release(c->ptr, &c->owner);
    free(c);
    c = next;
  }
}

/* ------------------------------------------------------------------ staging */

void coll_gpu_stage_init(coll_gpu_stage_t *st) {
  st->count = 0;
  st->error = 0;
  st->failed = NULL;
  st->failed_engine = NULL;
}

static int fail(coll_gpu_stage_t *st, int err, const char *what, const coll_gpu_copy_engine_t *engine) {
  if (st->error == 0) {
    st->error = err;
    st->failed = what;
    st->failed_engine = engine;
  }
  return -1;
}

int coll_gpu_stage_buffer(coll_gpu_stage_t *st, void *user, coll_gpu_span_t span, coll_gpu_dir_t dir,
                          const coll_gpu_meminfo_t *mem, const coll_gpu_copy_engine_t *engine, void **host) {
  *host = user;
  if (span.len == 0) return 0; /* nothing is touched: the pointer is passed on, never dereferenced */
  if (st->count == COLL_GPU_STAGE_MAX) return fail(st, -1, "track", engine);
  coll_gpu_staged_t *b = &st->buf[st->count];
  b->user = user;
  b->span = span;
  b->dir = dir;
  b->mem = *mem;
  b->engine = engine;
  size_t bytes = round_size(span.len);
  coll_gpu_bounce_t *c = cache_take(engine, bytes);
  if (c == NULL) {
    c = (coll_gpu_bounce_t *)malloc(sizeof(*c));
    if (c == NULL) return fail(st, 2 /* like cudaErrorMemoryAllocation */, "allocate", engine);
    int rc = engine->alloc(&c->ptr, bytes, mem);
    if (rc != 0) {
      free(c);
      return fail(st, rc, "allocate", engine);
    }
    c->bytes = bytes;
    c->owner = *mem;
    c->engine = engine;
    pthread_mutex_lock(&cache.lock);
    cache.allocs++;
    pthread_mutex_unlock(&cache.lock);
  }
  b->block = c;
  b->bounce = (char *)c->ptr;
  st->count++;
  if (dir & COLL_GPU_IN) {
    int rc = engine->copy(b->bounce, (char *)user + span.lo, span.len, mem);
    if (rc != 0) return fail(st, rc, "copy to host", engine);
  }
  /* The collective addresses user + off for off in the span: hand it the base that maps the span
   * onto the bounce buffer. */
  *host = (void *)((uintptr_t)b->bounce - (uintptr_t)span.lo);
  return 0;
}

int coll_gpu_stage_copy_in(coll_gpu_stage_t *st) {
  for (int i = 0; i < st->count; ++i) {
    coll_gpu_staged_t *b = &st->buf[i];
    if (!(b->dir & COLL_GPU_IN)) continue;
    int rc = b->engine->copy(b->bounce, (char *)b->user + b->span.lo, b->span.len, &b->mem);
    if (rc != 0) return fail(st, rc, "copy to host", b->engine);
  }
  return 0;
}

int coll_gpu_stage_copy_out(coll_gpu_stage_t *st) {
  for (int i = 0; i < st->count; ++i) {
    coll_gpu_staged_t *b = &st->buf[i];
    if (!(b->dir & COLL_GPU_OUT)) continue;
    int rc = b->engine->copy((char *)b->user + b->span.lo, b->bounce, b->span.len, &b->mem);
    if (rc != 0) fail(st, rc, "copy to device", b->engine);
  }
  return st->error == 0 ? 0 : -1;
}

int coll_gpu_stage_finish(coll_gpu_stage_t *st, bool copy_back) {
  if (copy_back) coll_gpu_stage_copy_out(st);
  for (int i = 0; i < st->count; ++i) cache_give(st->buf[i].block);
  st->count = 0;
  return st->error == 0 ? 0 : -1;
}
