/*
 * Shared-memory agreement (engine/agree.h). Slot r belongs to rank r: it writes bits[n % 4] for its
 * agreement n, then releases n. A rank can be at most one agreement ahead of any peer still reading
 * (each agreement precedes a collective that needs every rank), so four entries never collide.
 */
#include "engine/agree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define AGREE_DEPTH 4

typedef struct {
  _Atomic uint64_t n;
  uint32_t bits[AGREE_DEPTH];
  int32_t pid; /* written once, when the rank maps the segment */
  char pad[64 - sizeof(uint64_t) - AGREE_DEPTH * sizeof(uint32_t) - sizeof(int32_t)];
} slot_t;

struct coll_gpu_agree {
  int rank, size;
  uint64_t n;
  slot_t *slots;
  size_t bytes;
  char name[64];
  uint8_t *visible; /* 1: that rank's process can be checked from here (set while every rank is alive) */
};

int coll_gpu_agree_create(const coll_gpu_bootstrap_t *b, const uint8_t id[COLL_GPU_UNIQUE_ID_BYTES],
                          coll_gpu_agree_t **out) {
  int err = 0, fd = -1;
  coll_gpu_agree_t *a = calloc(1, sizeof(*a));
  if (a == NULL) return ENOMEM;
  a->visible = calloc((size_t)b->size, 1);
  if (a->visible == NULL) err = ENOMEM;
  a->rank = b->rank;
  a->size = b->size;
  a->bytes = (size_t)b->size * sizeof(slot_t);
  int len = snprintf(a->name, sizeof(a->name), "/coll_gpu_");
  for (int i = 0; i < COLL_GPU_UNIQUE_ID_BYTES; ++i)
    len += snprintf(a->name + len, sizeof(a->name) - len, "%02x", id[i]);

  if (b->rank == 0 && err == 0) {
    fd = shm_open(a->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)a->bytes) != 0) err = errno;
  }
  /* every rank learns whether rank 0 succeeded, then maps */
  int status = err;
  if (b->bcast(b->ctx, &status, sizeof(status), 0) != 0 && status == 0) status = EIO;
  if (status == 0 && b->rank != 0) {
    fd = shm_open(a->name, O_RDWR, 0600);
    if (fd < 0) err = errno;
  }
  if (status == 0 && err == 0) {
    a->slots = mmap(NULL, a->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (a->slots == MAP_FAILED) {
      a->slots = NULL;
      err = errno;
    } else {
      a->slots[a->rank].pid = (int32_t)getpid(); /* before the allgather below: every peer's is there after */
    }
  }
  if (fd >= 0) close(fd);
  /* everyone has mapped (or failed): the name goes now */
  int *all = calloc((size_t)b->size, sizeof(int));
  int rc = all == NULL ? ENOMEM : b->allgather(b->ctx, status != 0 ? &status : &err, all, sizeof(int));
  if (b->rank == 0 && status == 0) shm_unlink(a->name);
  /* and no rank returns before it is gone */
  if (rc == 0 && b->barrier(b->ctx) != 0) rc = EIO;
  for (int r = 0; rc == 0 && all != NULL && r < b->size; ++r)
    if (all[r] != 0) rc = all[r];
  free(all);
  if (rc != 0) {
    coll_gpu_agree_destroy(a);
    return rc;
  }
  for (int r = 0; r < a->size; ++r) a->visible[r] = r != a->rank && coll_gpu_pid_visible(a->slots[r].pid);
  *out = a;
  return 0;
}

void coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits) {
  uint64_t n = ++a->n;
  slot_t *mine = &a->slots[a->rank];
  mine->bits[n % AGREE_DEPTH] = bits;
  atomic_store_explicit(&mine->n, n, memory_order_release);
}

/* After a wait's check or report: marks in late[] the ranks from `from` on that have not posted n, and in
 * missing[] those of them whose process is gone (checked when `check`). Returns whether any is gone. */
static int find_late(coll_gpu_agree_t *a, int from, uint64_t n, int check, uint8_t *late, uint8_t *missing) {
  int gone = 0;
  for (int r = from; r < a->size; ++r) {
    late[r] = atomic_load_explicit(&a->slots[r].n, memory_order_acquire) < n;
    if (late[r] && check && a->visible[r] && coll_gpu_pid_gone(a->slots[r].pid)) gone = missing[r] = 1;
  }
  return gone;
}

int coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                   uint8_t *missing) {
  coll_gpu_agree_post(a, bits);
  const uint64_t n = a->n;
  uint32_t acc = 0;
  coll_gpu_wait_t w;
  coll_gpu_wait_init(&w, &watch->wait);
  for (int r = 0; r < a->size; ++r) {
    slot_t *s = &a->slots[r];
    while (atomic_load_explicit(&s->n, memory_order_acquire) < n) {
      const int what = coll_gpu_wait_pause(&w);
      if (what == 0) continue;
      uint8_t late[a->size];
      memset(late, 0, sizeof(late));
      if (find_late(a, r, n, what & COLL_GPU_WAIT_CHECK, late, missing)) return ESRCH;
      if ((what & COLL_GPU_WAIT_REPORT) && watch->report != NULL) watch->report(watch->ctx, late);
    }
    acc |= s->bits[n % AGREE_DEPTH];
  }
  *all = acc;
  return 0;
}

void coll_gpu_agree_destroy(coll_gpu_agree_t *a) {
  if (a == NULL) return;
  if (a->slots != NULL) munmap(a->slots, a->bytes);
  free(a->visible);
  free(a);
}

const char *coll_gpu_agree_name(const coll_gpu_agree_t *a) { return a->name; }
