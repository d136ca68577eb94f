/*
 * Shared-memory agreement (engine/agree.h). Slot r belongs to rank r. For its agreement n it writes the
 * bits into bits[n % kWindow], then releases last = n << kBitsShift | bits: a peer that reads agreement n
 * while it is this rank's last finds its bits in the word it polls, one cache line per peer; one that reads
 * it later takes them from bits[]. Once this rank has read agreement n (or posted it not to read it) and
 * every one before, it releases read = n, on a line of its own (peers look at it only when the room they
 * saw is spent). A rank posts n only when every slot's read is at least n - kWindow, so an entry of bits[]
 * is never overwritten before every rank is done with it.
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

constexpr int kWindow = COLL_GPU_AGREE_WINDOW;
constexpr int kBitsShift = COLL_GPU_AGREE_BITS;
constexpr uint64_t kBitsMask = (1u << kBitsShift) - 1;

struct Slot {
  std::atomic<uint64_t> last;  // the last agreement posted and its bits: n << kBitsShift | bits
  int32_t pid;                 // written once, when the rank maps the segment
  char pad0[64 - sizeof(uint64_t) - sizeof(int32_t)];
  std::atomic<uint64_t> read;  // every agreement up to this one read, or posted not to be read
  char pad1[64 - sizeof(uint64_t)];
  uint16_t bits[kWindow];  // agreement n's at n % kWindow
};
// other processes map the same bytes: the counters must be plain lock-free words
static_assert(std::atomic<uint64_t>::is_always_lock_free && sizeof(std::atomic<uint64_t>) == sizeof(uint64_t),
              "the agreement's counters must be lock-free 64-bit words");
static_assert(sizeof(Slot) % 64 == 0, "whole cache lines per rank");
static_assert(kBitsShift == 16, "bits[] holds 16 bits per agreement");

uint64_t posted(const Slot *s) { return s->last.load(std::memory_order_acquire) >> kBitsShift; }

}  // namespace

struct coll_gpu_agree {
  int rank, size;
  uint64_t n;          // the last agreement posted
  uint64_t room;       // the last one the window had room for, when the slots were last looked at
  uint64_t read;       // every agreement up to this one read (this rank's slot's read)
  bool done[kWindow];  // agreements after `read` that are read already (at n % kWindow)
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

namespace {

// Agreement n (posted by this rank) is read: read moves past every agreement read in a row.
inline void mark_read(coll_gpu_agree_t *a, uint64_t n) {
  if (n != a->read + 1) {  // one before it is unread: read stays behind that one
    a->done[n % kWindow] = true;
    return;
  }
  a->read = n;
  while (a->read < a->n && a->done[(a->read + 1) % kWindow]) {
    ++a->read;
    a->done[a->read % kWindow] = false;
  }
  a->slots[a->rank].read.store(a->read, std::memory_order_release);
}

// Whether the window has room for agreement n, beyond the room seen last: every rank has read n - kWindow.
bool look_for_room(coll_gpu_agree_t *a, uint64_t n) {
  uint64_t least = UINT64_MAX;
  for (int r = 0; r < a->size; ++r) {
    const uint64_t read = a->slots[r].read.load(std::memory_order_acquire);
    if (read < least) least = read;
  }
  a->room = least + kWindow;
  return n <= a->room;
}

// Marks in late[] the ranks that hold up agreement n, and in missing[] those of them whose process is gone
// (looked up when `check`). Returns whether any is gone.
bool find_late(coll_gpu_agree_t *a, uint64_t n, bool check, uint8_t *late, uint8_t *missing) {
  const bool posting = n > a->n;  // its post waits for room
  bool gone = false;
  for (int r = 0; r < a->size; ++r) {
    const Slot *s = &a->slots[r];
    late[r] = posting ? s->read.load(std::memory_order_acquire) + kWindow < n : posted(s) < n;
    if (late[r] && check && a->visible[r] && coll_gpu_pid_gone(s->pid)) {
      missing[r] = 1;
      gone = true;
    }
  }
  return gone;
}

// One pause of a wait for agreement n, with its checks and report. PEER_GONE once a rank it waits for is.
coll_gpu_status_t pause(coll_gpu_agree_t *a, uint64_t n, coll_gpu_wait_t *w, const coll_gpu_agree_watch_t *watch,
                        uint8_t *missing) {
  const int what = coll_gpu_wait_pause(w);
  if (what == 0) return COLL_GPU_SUCCESS;
  memset(a->late, 0, (size_t)a->size);
  if (find_late(a, n, what & COLL_GPU_WAIT_CHECK, a->late, missing)) {
    coll_gpu::breadcrumb(__FILE__, __LINE__, COLL_GPU_PEER_GONE);
    return COLL_GPU_PEER_GONE;
  }
  if ((what & COLL_GPU_WAIT_REPORT) && watch->report != nullptr) watch->report(watch->ctx, a->late);
  return COLL_GPU_SUCCESS;
}

// Posts bits as the next agreement once the window has room. The room this rank's own unread agreements
// take only its own reads give back: waiting for them would never end.
coll_gpu_status_t post(coll_gpu_agree_t *a, uint32_t bits, bool read, coll_gpu_wait_t *w,
                       const coll_gpu_agree_watch_t *watch, uint8_t *missing) {
  uint64_t n;
  while (!coll_gpu_agree_try_post(a, bits, read, &n)) {
    if (a->read + kWindow <= a->n) return COLL_GPU_INTERNAL_ERROR;
    COLL_GPU_CHECK(pause(a, a->n + 1, w, watch, missing));
  }
  return COLL_GPU_SUCCESS;
}

}  // namespace

int coll_gpu_agree_try_post(coll_gpu_agree_t *a, uint32_t bits, int read, uint64_t *n) {
  if (a->n + 1 > a->room && !look_for_room(a, a->n + 1)) return 0;
  *n = ++a->n;
  Slot *mine = &a->slots[a->rank];
  mine->bits[*n % kWindow] = (uint16_t)bits;
  mine->last.store(*n << kBitsShift | (bits & kBitsMask), std::memory_order_release);
  if (!read) mark_read(a, *n);
  return 1;
}

int coll_gpu_agree_test(coll_gpu_agree_t *a, uint64_t n, uint32_t *all) {
  uint32_t acc = 0;
  for (int r = 0; r < a->size; ++r) {
    const Slot *s = &a->slots[r];
    const uint64_t last = s->last.load(std::memory_order_acquire);
    if (last >> kBitsShift < n) return 0;
    acc |= last >> kBitsShift == n ? (uint32_t)(last & kBitsMask) : s->bits[n % kWindow];
  }
  *all = acc;
  mark_read(a, n);
  return 1;
}

int coll_gpu_agree_late(coll_gpu_agree_t *a, uint64_t n, int check, uint8_t *late, uint8_t *missing) {
  return find_late(a, n, check != 0, late, missing);
}

uint64_t coll_gpu_agree_last(const coll_gpu_agree_t *a) { return a->n; }

coll_gpu_status_t coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch,
                                      uint8_t *missing) {
  coll_gpu_wait_t w;
  coll_gpu_wait_init(&w, &watch->wait);
  return post(a, bits, false, &w, watch, missing);
}

coll_gpu_status_t coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                                 uint8_t *missing) {
  coll_gpu_wait_t w;
  coll_gpu_wait_init(&w, &watch->wait);
  COLL_GPU_CHECK(post(a, bits, true, &w, watch, missing));
  const uint64_t n = a->n;
  while (!coll_gpu_agree_test(a, n, all)) COLL_GPU_CHECK(pause(a, n, &w, watch, missing));
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
