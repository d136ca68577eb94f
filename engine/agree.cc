/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The path agreement (engine/agree.h).
 *
 * The table file: a header (the mark) and COLL_GPU_AGREE_ENTRIES entries, each a communicator's key and a
 * slot per rank. An entry is claimed once (state 0 -> 1, key written, -> 2) and kept for the job's life;
 * its communicator's instances take turns in it, since a communicator is created only once every member
 * has freed the last one with the same key (its context id was free on all of them).
 *
 * Slot r belongs to rank r, one process for every instance. When the rank joins instance g at agreement j
 * it resets the slot (joined = j, nothing read or posted before j, the bits cleared) and then releases
 * gen = g: a peer trusts the rest of the slot only once it reads its own instance there. For agreement n it
 * writes n << kBitsShift | bits into bits[n % kWindow], then releases the same word as last: a peer that
 * reads agreement n while it is this rank's last finds its bits in the word it polls, one cache line per
 * peer; one that reads it later takes them from bits[], or COLL_GPU_AGREE_UNKNOWN once another number
 * stands there. Once this rank has read agreement n (or posted it not to read it) and every one before, it
 * releases read = n, on a line of its own (peers look at it only when the room they saw is spent).
 *
 * What may be overwritten: a post that was not read exactly (host bits, or bits posted with UNKNOWN)
 * decides "not the GPU path" whichever of its values a reader takes, so it is overwritten freely. A kept
 * post (a reader's bits where every rank had joined) is overwritten only once every joined rank has read
 * it or joined after it; a rank that had not joined then cannot need it, since the post needed it joined.
 */
#include "engine/agree.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "common/hash.h"
#include "engine/bootstrap.h"

namespace {

constexpr int kWindow = COLL_GPU_AGREE_WINDOW;
constexpr int kBitsShift = COLL_GPU_AGREE_BITS;
constexpr uint64_t kBitsMask = (1u << kBitsShift) - 1;
constexpr int kEntries = COLL_GPU_AGREE_ENTRIES;
constexpr int kMaxLocal = COLL_GPU_AGREE_NODE_RANKS;  // slots of an entry: the node's ranks, in rank order
// In a message's instance: the rank joins at the agreement the word names, whose post follows.
constexpr uint64_t kJoinFlag = 1ull << 63;

struct Slot {
  std::atomic<uint64_t> gen;     // the instance this rank has joined; 0: none yet
  std::atomic<uint64_t> last;    // the last agreement posted and its bits: n << kBitsShift | bits
  std::atomic<uint64_t> joined;  // the first agreement it posts in instance gen
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> pidns;  // its PID namespace (the inode of /proc/self/ns/pid; 0: not known)
  char pad0[64 - 4 * sizeof(uint64_t) - sizeof(int32_t) - 4];
  std::atomic<uint64_t> read;  // every agreement up to this one read, or posted not to be read
  char pad1[64 - sizeof(uint64_t)];
  std::atomic<uint64_t> bits[kWindow];  // agreement n's at n % kWindow, as n << kBitsShift | bits
};

enum : uint64_t { kFree = 0, kClaiming = 1, kClaimed = 2 };

struct Entry {
  std::atomic<uint64_t> state;
  coll_gpu_agree_key_t key;
  char pad[128 - sizeof(uint64_t) - sizeof(coll_gpu_agree_key_t)];
  Slot slots[kMaxLocal];
};

struct Header {
  std::atomic<uint64_t> marked;  // a process of the node may pass device memory
  char pad[64 - sizeof(uint64_t)];
};

struct File {
  Header header;
  Entry entries[kEntries];
};

// other processes map the same bytes: the words must be plain lock-free words, and all zero a valid start
static_assert(std::atomic<uint64_t>::is_always_lock_free && sizeof(std::atomic<uint64_t>) == sizeof(uint64_t),
              "the agreement's counters must be lock-free 64-bit words");
static_assert(sizeof(Slot) % 64 == 0 && sizeof(Entry) % 64 == 0, "whole cache lines per rank");
static_assert(kBitsShift == 16 && COLL_GPU_AGREE_UNKNOWN <= kBitsMask, "bits fit below the agreement number");

uint64_t key_hash(const coll_gpu_agree_key_t *k) { return coll_gpu_hash(k, sizeof(*k), 0); }

}  // namespace

struct coll_gpu_agree_table {
  File *file;
};

coll_gpu_status_t coll_gpu_agree_table_open(const char *path, coll_gpu_agree_table_t **out, char *why, size_t why_len) {
  const size_t bytes = sizeof(File);
  const int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    coll_gpu_say(why, why_len, "open %s: %s", path, strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  struct stat st;
  const char *bad = nullptr;
  int err = 0;
  if (fstat(fd, &st) != 0) {
    err = errno;
    bad = "fstat";
  } else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    bad = "not a regular file of this user";
  } else if (st.st_size != 0 && (size_t)st.st_size != bytes) {
    bad = "a file of another size (another version of coll/gpu?)";
  } else if (ftruncate(fd, (off_t)bytes) != 0) {  // every opener sets the same size: new pages read as zero
    err = errno;
    bad = "ftruncate";
  }
  void *m = MAP_FAILED;
  if (bad == nullptr) {
    m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      err = errno;
      bad = "mmap";
    }
  }
  close(fd);
  coll_gpu_agree_table_t *t = bad == nullptr ? (coll_gpu_agree_table_t *)calloc(1, sizeof(*t)) : nullptr;
  if (t == nullptr) {
    if (bad == nullptr) bad = "out of host memory";
    if (m != MAP_FAILED) munmap(m, bytes);
    coll_gpu_say(why, why_len, "%s: %s%s%s", path, bad, err != 0 ? ": " : "", err != 0 ? strerror(err) : "");
    return COLL_GPU_SYSTEM_ERROR;
  }
  t->file = (File *)m;
  *out = t;
  return COLL_GPU_SUCCESS;
}

void coll_gpu_agree_table_close(coll_gpu_agree_table_t *t) {
  if (t == nullptr) return;
  munmap(t->file, sizeof(File));
  free(t);
}

void coll_gpu_agree_table_mark(coll_gpu_agree_table_t *t) {
  if (t->file->header.marked.load(std::memory_order_relaxed) == 0)
    t->file->header.marked.store(1, std::memory_order_release);
}

int coll_gpu_agree_table_marked(const coll_gpu_agree_table_t *t) {
  return t->file->header.marked.load(std::memory_order_acquire) != 0;
}

// ------------------------------------------------------------------ instances, counted per process

namespace {

struct Instances {
  coll_gpu_agree_key_t *keys = nullptr;
  uint64_t *counts = nullptr;  // 0: a free place
  size_t cap = 0, used = 0;
};
Instances instances;
pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;

// The place of key in a table of cap places (a power of two): its own, or the free one it would take.
size_t place(const coll_gpu_agree_key_t *keys, const uint64_t *counts, size_t cap, const coll_gpu_agree_key_t *k) {
  size_t i = key_hash(k) & (cap - 1);
  while (counts[i] != 0 && memcmp(&keys[i], k, sizeof(*k)) != 0) i = (i + 1) & (cap - 1);
  return i;
}

bool grow(Instances *in) {
  const size_t cap = in->cap == 0 ? 64 : 2 * in->cap;
  auto *keys = (coll_gpu_agree_key_t *)calloc(cap, sizeof(coll_gpu_agree_key_t));
  auto *counts = (uint64_t *)calloc(cap, sizeof(uint64_t));
  if (keys == nullptr || counts == nullptr) {
    free(keys);
    free(counts);
    return false;
  }
  for (size_t i = 0; i < in->cap; ++i) {
    if (in->counts[i] == 0) continue;
    const size_t j = place(keys, counts, cap, &in->keys[i]);
    keys[j] = in->keys[i];
    counts[j] = in->counts[i];
  }
  free(in->keys);
  free(in->counts);
  in->keys = keys;
  in->counts = counts;
  in->cap = cap;
  return true;
}

}  // namespace

uint64_t coll_gpu_agree_instance(const coll_gpu_agree_key_t *key) {
  pthread_mutex_lock(&instances_lock);
  uint64_t n = 0;  // 0: out of memory; the communicator then never joins, and its peers read UNKNOWN
  if (2 * (instances.used + 1) <= instances.cap || grow(&instances)) {
    const size_t i = place(instances.keys, instances.counts, instances.cap, key);
    if (instances.counts[i] == 0) {
      instances.keys[i] = *key;
      ++instances.used;
    }
    n = ++instances.counts[i];
  }
  pthread_mutex_unlock(&instances_lock);
  return n;
}

// ------------------------------------------------------------------ one communicator's handle

namespace {

// What this rank knows of a rank on another node: the posts that came from it (coll_gpu_agree_deliver).
// Those of agreements after this rank's `read` are kept until it has read them, however far ahead the
// sender is: its kept posts must be read exactly, and no room check of the sender sees this rank's reads.
struct Remote {
  uint64_t gen = 0;     // the instance of the posts that came; 0: none yet (it has not joined, as far as is known)
  uint64_t joined = 0;  // the number of its first post
  uint64_t last = 0;    // its last post, n << kBitsShift | bits
  uint64_t *words = nullptr;  // posts of agreements after this rank's read, at n & (cap - 1) (0: none there)
  size_t cap = 0;
};

}  // namespace

struct coll_gpu_agree {
  coll_gpu_agree_table_t *t;
  const std::atomic<uint64_t> *mark;  // the table's mark, read in every call of a rank that has not joined
  coll_gpu_agree_key_t key;
  uint64_t instance;
  int rank, size;
  Slot *slots;  // the entry's, once joined
  bool joined;
  bool broken;              // no entry could be had: this rank never joins
  uint64_t n;               // the last agreement posted or counted
  uint64_t room;            // the last one the window had room for, when the slots were last looked at
  uint64_t read;            // every agreement up to this one read (this rank's slot's read)
  bool done[kWindow];       // agreements after `read` that are read already (at n % kWindow)
  bool kept[kWindow];       // this rank's post there must stay until every rank has read it
  uint64_t local[kWindow];  // agreements answered at the post (UNKNOWN): n << kBitsShift | answer
  uint64_t every_joined;    // 0, or an agreement from which on every rank takes part
  uint64_t join_wait_n, join_wait_since;
  // a byte or an int per rank, in one allocation with this struct
  uint8_t *given_up;  // ranks whose join a reader waited for in vain: not waited for again
  uint8_t *visible;   // 1: that rank's process can be checked from here (one PID namespace); 2: not known yet
  uint8_t *late;      // a wait's scratch
  uint8_t *remote;    // 1: on another node (coll_gpu_agree_set_net): its posts come as messages
  int *slot;          // a rank of this node: its slot in the entry (its place among the node's ranks); -1: remote
  coll_gpu_agree_net_t net;
  Remote *from;  // per rank, for those on other nodes; nullptr: every rank is on this node
  uint64_t polls;
};

coll_gpu_status_t coll_gpu_agree_create(coll_gpu_agree_table_t *t, const coll_gpu_agree_key_t *key, uint64_t instance,
                                        int rank, coll_gpu_agree_t **out) {
  if (key->size < 1 || key->size > COLL_GPU_MAX_COMM_RANKS || rank < 0 || rank >= (int)key->size)
    return COLL_GPU_INTERNAL_ERROR;
  const size_t n = key->size, head = (sizeof(coll_gpu_agree_t) + 7) / 8 * 8;
  auto *a = (coll_gpu_agree_t *)calloc(1, head + n * sizeof(int) + 4 * n);
  if (a == nullptr) return COLL_GPU_SYSTEM_ERROR;
  a->slot = (int *)((char *)a + head);
  a->given_up = (uint8_t *)(a->slot + n);
  a->visible = a->given_up + n;
  a->late = a->visible + n;
  a->remote = a->late + n;
  for (size_t r = 0; r < n; ++r) a->slot[r] = (int)r;  // every rank on this node, until set_net says otherwise
  a->t = t;
  a->mark = &t->file->header.marked;
  a->key = *key;
  a->instance = instance;
  a->rank = rank;
  a->size = (int)key->size;
  a->broken = instance == 0 || n > (size_t)kMaxLocal;
  memset(a->visible, 2, n);
  *out = a;
  return COLL_GPU_SUCCESS;
}

namespace {

// The key's entry: found, or claimed where the probe meets a free one; nullptr when the table is full.
Entry *find_entry(File *f, const coll_gpu_agree_key_t *k) {
  const size_t start = key_hash(k) % kEntries;
  for (size_t probe = 0; probe < (size_t)kEntries; ++probe) {
    Entry *e = &f->entries[(start + probe) % kEntries];
    uint64_t state = e->state.load(std::memory_order_acquire);
    if (state == kFree) {
      uint64_t expected = kFree;
      if (e->state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel)) {
        memcpy(&e->key, k, sizeof(*k));
        e->state.store(kClaimed, std::memory_order_release);
        return e;
      }
      state = expected;
    }
    // another process is writing this entry's key: a few stores away
    while (state == kClaiming) {
      sched_yield();
      state = e->state.load(std::memory_order_acquire);
    }
    if (memcmp(&e->key, k, sizeof(*k)) == 0) return e;
  }
  return nullptr;
}

// This process's PID namespace: a peer's pid means the same process here only within the same one.
uint64_t pid_namespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

// This rank takes part from agreement `first` on: its slot is reset, then shows this instance.
bool join(coll_gpu_agree_t *a, uint64_t first) {
  Entry *e = find_entry(a->t->file, &a->key);
  if (e == nullptr) return false;
  a->slots = e->slots;
  Slot *s = &a->slots[a->slot[a->rank]];
  s->pid.store((int32_t)getpid(), std::memory_order_relaxed);
  s->pidns.store(pid_namespace(), std::memory_order_relaxed);
  s->joined.store(first, std::memory_order_relaxed);
  s->read.store(first - 1, std::memory_order_relaxed);
  s->last.store((first - 1) << kBitsShift, std::memory_order_relaxed);
  for (auto &b : s->bits) b.store(0, std::memory_order_relaxed);
  s->gen.store(a->instance, std::memory_order_release);
  a->joined = true;
  return true;
}

// Where rank r stands towards agreement n: it will post it (0), it joined after it (1: it never will), or
// it has not joined (2).
int standing(const coll_gpu_agree_t *a, int r, uint64_t n) {
  if (a->remote[r]) {
    const Remote &x = a->from[r];
    return x.gen != a->instance ? 2 : x.joined <= n ? 0 : 1;
  }
  const Slot *s = &a->slots[a->slot[r]];
  if (s->gen.load(std::memory_order_acquire) != a->instance) return 2;
  return s->joined.load(std::memory_order_relaxed) <= n ? 0 : 1;
}

// Whether every rank posts agreement n (and every later one).
bool every_joined_by(coll_gpu_agree_t *a, uint64_t n) {
  if (a->every_joined != 0 && a->every_joined <= n) return true;
  for (int r = 0; r < a->size; ++r)
    if (standing(a, r, n) != 0) return false;
  a->every_joined = n;
  return true;
}

// Whether a reader of agreement n goes on waiting for ranks that have not joined: up to
// COLL_GPU_AGREE_JOIN_WAIT_NS per rank and communicator, after which it reads them as not taking part.
bool wait_for_joins(coll_gpu_agree_t *a, uint64_t n) {
  bool unjoined = false;
  for (int r = 0; r < a->size; ++r) unjoined = unjoined || (!a->given_up[r] && standing(a, r, n) == 2);
  if (!unjoined) return false;  // only ranks that joined after it: they never post it
  const uint64_t t = coll_gpu_now_ns();
  if (a->join_wait_n != n) {
    a->join_wait_n = n;
    a->join_wait_since = t;
    return true;
  }
  if (t - a->join_wait_since < COLL_GPU_AGREE_JOIN_WAIT_NS) return true;
  for (int r = 0; r < a->size; ++r)
    if (standing(a, r, n) == 2) a->given_up[r] = 1;
  return false;
}

// Agreement n (posted by this rank) is read: read moves past every agreement read in a row.
void mark_read(coll_gpu_agree_t *a, uint64_t n) {
  if (n != a->read + 1) {  // one before it is unread: read stays behind that one
    a->done[n % kWindow] = true;
    return;
  }
  a->read = n;
  while (a->read < a->n && a->done[(a->read + 1) % kWindow]) {
    ++a->read;
    a->done[a->read % kWindow] = false;
  }
  a->slots[a->slot[a->rank]].read.store(a->read, std::memory_order_release);
}

// The last agreement a joined rank is done with: read, or before it joined (it never reads those).
uint64_t done_through(const Slot *s) {
  const uint64_t read = s->read.load(std::memory_order_acquire);
  const uint64_t before = s->joined.load(std::memory_order_relaxed) - 1;
  return before > read ? before : read;
}

// Whether the window has room for agreement n, beyond the room seen last: every joined rank has read
// n - kWindow or joined after it.
bool look_for_room(coll_gpu_agree_t *a, uint64_t n) {
  uint64_t least = a->read;
  for (int r = 0; r < a->size; ++r) {
    // a rank on another node reads messages, which nothing overwrites
    if (r == a->rank || a->remote[r]) continue;
    const Slot *s = &a->slots[a->slot[r]];
    if (s->gen.load(std::memory_order_acquire) != a->instance) continue;
    const uint64_t read = done_through(s);
    if (read < least) least = read;
  }
  a->room = least + kWindow;
  return n <= a->room;
}

// Hands the posts that came from other nodes to coll_gpu_agree_deliver.
void poll(coll_gpu_agree_t *a) {
  if (a->from != nullptr) a->net.poll(a->net.ctx, a);
}

// Counts agreement n, which this rank neither posts nor reads (it has not joined). Posts from other nodes
// are taken in now and then, so that they do not pile up for a rank that never joins.
void count_only(coll_gpu_agree_t *a, uint64_t n, uint32_t bits, bool read) {
  a->n = a->read = n;
  if (read) a->local[n % kWindow] = n << kBitsShift | bits | COLL_GPU_AGREE_UNKNOWN;
  if (a->from != nullptr && ++a->polls % kWindow == 0) poll(a);
}

// Agreement n's post, or (join) that this rank takes part from n on, to the ranks on other nodes.
void send(coll_gpu_agree_t *a, uint64_t word, bool join = false) {
  for (int r = 0; a->from != nullptr && r < a->size; ++r)
    if (a->remote[r]) a->net.send(a->net.ctx, r, a->instance | (join ? kJoinFlag : 0), word);
}

// Rank r's post of agreement n: its bits, UNKNOWN where it cannot be read (overwritten); 0 when it has not
// come yet (the caller checked that r posts n). From its last post, else from the one kept for n (read only
// then): in its slot on this node, or as it came from another node.
uint64_t post_of(const coll_gpu_agree_t *a, int r, uint64_t n) {
  const bool remote = a->remote[r];
  const Remote *x = remote ? &a->from[r] : nullptr;
  const Slot *s = remote ? nullptr : &a->slots[a->slot[r]];
  const uint64_t last = remote ? x->last : s->last.load(std::memory_order_acquire);
  if (last >> kBitsShift < n) return 0;
  if (last >> kBitsShift == n) return (last & kBitsMask) | 1ull << 63;
  const uint64_t word =
      remote ? (x->cap == 0 ? 0 : x->words[n & (x->cap - 1)]) : s->bits[n % kWindow].load(std::memory_order_acquire);
  return (word >> kBitsShift == n ? word & kBitsMask : COLL_GPU_AGREE_UNKNOWN) | 1ull << 63;
}

}  // namespace

int coll_gpu_agree_try_post(coll_gpu_agree_t *a, uint32_t bits, int read, uint64_t *out) {
  const uint64_t n = a->n + 1;
  bits &= kBitsMask;
  if (!a->joined) {
    if (!a->broken && (read || a->mark->load(std::memory_order_acquire) != 0)) {
      if (read) coll_gpu_agree_table_mark(a->t);
      a->broken = !join(a, n);
      if (a->joined) send(a, n << kBitsShift, true);  // before any wait: readers elsewhere wait for it
    }
    if (!a->joined) {
      count_only(a, n, bits, read);
      *out = n;
      return 1;
    }
  }
  bool readable = false;
  if (read) {
    poll(a);  // the joins of ranks on other nodes come with their posts
    readable = every_joined_by(a, n);
    if (!readable && wait_for_joins(a, n)) return 0;
    if (!readable) readable = every_joined_by(a, n);  // a rank may have joined since the first look
  }
  if (read && !readable) bits |= COLL_GPU_AGREE_UNKNOWN;  // what every reader of it then sees
  if (a->kept[n % kWindow] && n > a->room && !look_for_room(a, n)) return 0;
  Slot *mine = &a->slots[a->slot[a->rank]];
  const uint64_t word = n << kBitsShift | bits;
  mine->bits[n % kWindow].store(word, std::memory_order_release);
  mine->last.store(word, std::memory_order_release);
  send(a, word);
  if (!read && a->from != nullptr && ++a->polls % kWindow == 0) poll(a);  // a rank that only posts, now and then
  a->n = n;
  a->kept[n % kWindow] = readable;
  if (!readable) {
    if (read) a->local[n % kWindow] = word;
    mark_read(a, n);
  }
  *out = n;
  return 1;
}

int coll_gpu_agree_test(coll_gpu_agree_t *a, uint64_t n, uint32_t *all) {
  const uint64_t local = a->local[n % kWindow];
  if (local >> kBitsShift == n) {
    *all = (uint32_t)(local & kBitsMask);
    return 1;
  }
  poll(a);
  uint32_t acc = 0;
  for (int r = 0; r < a->size; ++r) {
    const uint64_t post = post_of(a, r, n);
    if (post == 0) return 0;
    acc |= (uint32_t)(post & kBitsMask);
  }
  *all = acc;
  mark_read(a, n);
  return 1;
}

namespace {

// Marks in late[] the ranks that hold up agreement n, and in missing[] those of them whose process is gone
// (looked up when `check`). Returns whether any is gone.
bool find_late(coll_gpu_agree_t *a, uint64_t n, bool check, uint8_t *late, uint8_t *missing) {
  const bool posting = n > a->n;  // its post waits: for room, or for joins
  bool gone = false;
  for (int r = 0; r < a->size; ++r) {
    late[r] = 0;
    if (r == a->rank || !a->joined) continue;
    const Slot *s = a->remote[r] ? nullptr : &a->slots[a->slot[r]];
    const int st = standing(a, r, n);
    if (st == 2) {
      late[r] = posting && !a->given_up[r];
      continue;  // no process to look at yet
    }
    if (posting && a->remote[r]) {  // the window holds this rank's own unread posts: whose post they wait for
      const uint64_t oldest = a->read + 1;
      late[r] = a->kept[n % kWindow] && oldest <= a->n && standing(a, r, oldest) == 0 && post_of(a, r, oldest) == 0;
    } else if (posting) {
      late[r] = a->kept[n % kWindow] && done_through(s) + kWindow < n;
    } else {
      late[r] = st == 0 && post_of(a, r, n) == 0;
    }
    if (!late[r] || !check) continue;
    if (a->visible[r] == 2) {  // a process of this namespace (it may be gone already: then it is found so)
      const uint64_t ns = s->pidns.load(std::memory_order_relaxed);
      a->visible[r] = ns != 0 && ns == pid_namespace();
    }
    if (a->visible[r] == 1 && coll_gpu_pid_gone(s->pid.load(std::memory_order_relaxed))) {
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
  if (find_late(a, n, what & COLL_GPU_WAIT_CHECK, a->late, missing)) {
    coll_gpu::breadcrumb(__FILE__, __LINE__, COLL_GPU_PEER_GONE);
    return COLL_GPU_PEER_GONE;
  }
  if ((what & COLL_GPU_WAIT_REPORT) && watch->report != nullptr) watch->report(watch->ctx, a->late);
  return COLL_GPU_SUCCESS;
}

}  // namespace

int coll_gpu_agree_late(coll_gpu_agree_t *a, uint64_t n, int check, uint8_t *late, uint8_t *missing) {
  return find_late(a, n, check != 0, late, missing);
}

uint64_t coll_gpu_agree_last(const coll_gpu_agree_t *a) { return a->n; }

int coll_gpu_agree_joined(const coll_gpu_agree_t *a) { return a->joined; }

void coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits) {
  uint64_t n;
  coll_gpu_agree_try_post(a, bits, 0, &n);  // a post not to be read is never kept: it always goes
}

coll_gpu_status_t coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                                 uint8_t *missing) {
  coll_gpu_wait_t w;
  coll_gpu_wait_init(&w, &watch->wait);
  uint64_t n;
  while (!coll_gpu_agree_try_post(a, bits, 1, &n)) {
    // the room this rank's own unread agreements take only its own reads give back: waiting would never end
    const uint64_t next = a->n + 1;
    if (a->kept[next % kWindow] && a->read + kWindow < next) return COLL_GPU_INTERNAL_ERROR;
    COLL_GPU_CHECK(pause(a, next, &w, watch, missing));
  }
  while (!coll_gpu_agree_test(a, n, all)) COLL_GPU_CHECK(pause(a, n, &w, watch, missing));
  return COLL_GPU_SUCCESS;
}

void coll_gpu_agree_destroy(coll_gpu_agree_t *a) {
  if (a == nullptr) return;
  for (int r = 0; a->from != nullptr && r < a->size; ++r) free(a->from[r].words);
  free(a->from);
  free(a);
}

coll_gpu_status_t coll_gpu_agree_set_net(coll_gpu_agree_t *a, const uint8_t *remote, const coll_gpu_agree_net_t *net) {
  bool any = false;
  for (int r = 0; r < a->size; ++r) any = any || (r != a->rank && remote[r]);
  if (!any) return COLL_GPU_SUCCESS;
  a->from = (Remote *)calloc((size_t)a->size, sizeof(Remote));
  if (a->from == nullptr) return COLL_GPU_SYSTEM_ERROR;
  int local = 0;
  for (int r = 0; r < a->size; ++r) {
    a->remote[r] = r != a->rank && remote[r];
    a->visible[r] = a->remote[r] ? 0 : a->visible[r];  // its pid means nothing here
    a->slot[r] = a->remote[r] ? -1 : local++;
  }
  a->broken = a->instance == 0 || local > kMaxLocal;
  a->net = *net;
  return COLL_GPU_SUCCESS;
}

void coll_gpu_agree_deliver(coll_gpu_agree_t *a, int from, uint64_t instance, uint64_t word) {
  const bool join = (instance & kJoinFlag) != 0;
  instance &= ~kJoinFlag;
  if (a->from == nullptr || from < 0 || from >= a->size || !a->remote[from] || instance != a->instance) return;
  Remote &x = a->from[from];
  const uint64_t n = word >> kBitsShift;
  if (x.gen != instance) {  // it takes part from this agreement on
    x.gen = instance;
    x.joined = n;
  }
  if (join) return;
  x.last = word;
  if (n <= a->read) return;                 // this rank is past it: never read
  if (x.cap == 0 || n - a->read > x.cap) {  // room for every agreement from read + 1 to n
    size_t cap = x.cap == 0 ? kWindow : x.cap;
    while (n - a->read > cap) cap *= 2;
    auto *words = (uint64_t *)calloc(cap, sizeof(uint64_t));
    if (words == nullptr) return;  // out of memory: read as UNKNOWN, where a reader elsewhere may read it exactly
    for (size_t i = 0; i < x.cap; ++i)
      if (x.words[i] != 0 && x.words[i] >> kBitsShift > a->read)
        words[(x.words[i] >> kBitsShift) & (cap - 1)] = x.words[i];
    free(x.words);
    x.words = words;
    x.cap = cap;
  }
  x.words[n & (x.cap - 1)] = word;
}
