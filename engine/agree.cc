/*
 * Shared-memory agreement (engine/agree.h). Slot r belongs to rank r: it writes bits[n % 4] for its
 * agreement n, then releases n. A rank can be at most one agreement ahead of any peer still reading
 * (each agreement precedes a collective that needs every rank), so four entries never collide.
 */
#include "engine/agree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

namespace {

constexpr int kDepth = 4;

struct Slot {
  std::atomic<uint64_t> n;
  uint32_t bits[kDepth];
  int32_t pid;  // written once, when the rank maps the segment
  char pad[64 - sizeof(uint64_t) - kDepth * sizeof(uint32_t) - sizeof(int32_t)];
};
// other processes map the same bytes: the counter must be a plain lock-free word
static_assert(std::atomic<uint64_t>::is_always_lock_free && sizeof(std::atomic<uint64_t>) == sizeof(uint64_t),
              "the agreement's counter must be a lock-free 64-bit word");
static_assert(sizeof(Slot) == 64, "one cache line per rank");

}  // namespace

struct coll_gpu_agree {
  int rank, size;
  uint64_t n;
  Slot *slots;
  size_t bytes;
  char name[64];
  uint8_t *visible;  // 1: that rank's process can be checked from here (set while every rank is alive)
  uint8_t *late;     // a wait's scratch: the ranks that have not posted yet
};

coll_gpu_status_t coll_gpu_agree_create(const coll_gpu_bootstrap_t *b, const uint8_t id[COLL_GPU_UNIQUE_ID_BYTES],
                                        coll_gpu_agree_t **out, char *why, size_t why_len) {
  int err = 0, fd = -1;
  const char *failed = "";  // the call that failed on this rank
  coll_gpu_agree_t *a = (coll_gpu_agree_t *)calloc(1, sizeof(*a));
  if (a == nullptr) {
    coll_gpu_say(why, why_len, "out of host memory");
    return COLL_GPU_SYSTEM_ERROR;
  }
  a->visible = (uint8_t *)calloc((size_t)b->size, 1);
  a->late = (uint8_t *)calloc((size_t)b->size, 1);
  if (a->visible == nullptr || a->late == nullptr) {
    err = ENOMEM;
    failed = "calloc";
  }
  a->rank = b->rank;
  a->size = b->size;
  a->bytes = (size_t)b->size * sizeof(Slot);
  int len = snprintf(a->name, sizeof(a->name), "/coll_gpu_");
  for (int i = 0; i < COLL_GPU_UNIQUE_ID_BYTES; ++i)
    len += snprintf(a->name + len, sizeof(a->name) - len, "%02x", id[i]);

  if (b->rank == 0 && err == 0) {
    fd = shm_open(a->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)a->bytes) != 0) {
      err = errno;
      failed = fd < 0 ? "shm_open" : "ftruncate";
    }
  }
  // every rank learns whether rank 0 succeeded, then maps
  int status = err;
  bool bootstrap_ok = b->bcast(b->ctx, &status, sizeof(status), 0) == 0;
  if (!bootstrap_ok && status == 0) status = EIO;
  if (status == 0 && b->rank != 0) {
    fd = shm_open(a->name, O_RDWR, 0600);
    if (fd < 0) {
      err = errno;
      failed = "shm_open";
    }
  }
  if (status == 0 && err == 0) {
    void *m = mmap(nullptr, a->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      err = errno;
      failed = "mmap";
    } else {
      a->slots = (Slot *)m;
      a->slots[a->rank].pid = (int32_t)getpid();  // before the allgather below: every peer's is there after
    }
  }
  if (fd >= 0) close(fd);
  // everyone has mapped (or failed): the name goes now
  int *all = (int *)calloc((size_t)b->size, sizeof(int));
  int rc = all == nullptr ? ENOMEM : b->allgather(b->ctx, status != 0 ? &status : &err, all, sizeof(int));
  bootstrap_ok = bootstrap_ok && (all == nullptr || rc == 0);
  if (b->rank == 0 && status == 0) shm_unlink(a->name);
  // and no rank returns before it is gone
  if (rc == 0 && b->barrier(b->ctx) != 0) {
    rc = EIO;
    bootstrap_ok = false;
  }
  int bad = -1;
  for (int r = 0; rc == 0 && all != nullptr && r < b->size; ++r)
    if (all[r] != 0) {
      rc = all[r];
      bad = r;
    }
  free(all);
  if (rc != 0) {
    if (!bootstrap_ok)
      coll_gpu_say(why, why_len, "a bootstrap exchange failed");
    else if (err != 0)
      coll_gpu_say(why, why_len, "%s %s: %s", failed, a->name, strerror(err));
    else
      coll_gpu_say(why, why_len, "rank %d could not map %s: %s", bad < 0 ? 0 : bad, a->name, strerror(rc));
    coll_gpu_agree_destroy(a);
    return bootstrap_ok ? COLL_GPU_SYSTEM_ERROR : COLL_GPU_BOOTSTRAP_ERROR;
  }
  for (int r = 0; r < a->size; ++r) a->visible[r] = r != a->rank && coll_gpu_pid_visible(a->slots[r].pid);
  *out = a;
  return COLL_GPU_SUCCESS;
}

void coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits) {
  const uint64_t n = ++a->n;
  Slot *mine = &a->slots[a->rank];
  mine->bits[n % kDepth] = bits;
  mine->n.store(n, std::memory_order_release);
}

namespace {

// After a wait's check or report: marks in late[] the ranks from `from` on that have not posted n, and in
// missing[] those of them whose process is gone (checked when `check`). Returns whether any is gone.
bool find_late(coll_gpu_agree_t *a, int from, uint64_t n, bool check, uint8_t *late, uint8_t *missing) {
  bool gone = false;
  for (int r = from; r < a->size; ++r) {
    late[r] = a->slots[r].n.load(std::memory_order_acquire) < n;
    if (late[r] && check && a->visible[r] && coll_gpu_pid_gone(a->slots[r].pid)) {
      missing[r] = 1;
      gone = true;
    }
  }
  return gone;
}

}  // namespace

coll_gpu_status_t coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                                 uint8_t *missing) {
  coll_gpu_agree_post(a, bits);
  const uint64_t n = a->n;
  uint32_t acc = 0;
  coll_gpu_wait_t w;
  coll_gpu_wait_init(&w, &watch->wait);
  for (int r = 0; r < a->size; ++r) {
    Slot *s = &a->slots[r];
    while (s->n.load(std::memory_order_acquire) < n) {
      const int what = coll_gpu_wait_pause(&w);
      if (what == 0) continue;
      memset(a->late, 0, (size_t)a->size);
      if (find_late(a, r, n, what & COLL_GPU_WAIT_CHECK, a->late, missing)) return COLL_GPU_PEER_GONE;
      if ((what & COLL_GPU_WAIT_REPORT) && watch->report != nullptr) watch->report(watch->ctx, a->late);
    }
    acc |= s->bits[n % kDepth];
  }
  *all = acc;
  return COLL_GPU_SUCCESS;
}

void coll_gpu_agree_destroy(coll_gpu_agree_t *a) {
  if (a == nullptr) return;
  if (a->slots != nullptr) munmap(a->slots, a->bytes);
  free(a->visible);
  free(a->late);
  free(a);
}

const char *coll_gpu_agree_name(const coll_gpu_agree_t *a) { return a->name; }
