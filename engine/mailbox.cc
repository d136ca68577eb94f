/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The node's ranks' messages in shared memory (engine/mailbox.h).
 */
#include "engine/mailbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

namespace coll_gpu {

struct Mailbox::Slot {
  std::atomic<uint64_t> n;  // the message the words hold (0: none yet)
  uint64_t words[kMailWords];
};
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t), "a slot's number is a plain word in the segment");

namespace {
std::atomic<uint32_t> made{0};  // this process's segments, for their names
}

size_t Mailbox::segment_bytes(int nranks) { return (size_t)nranks * kMailSlots * sizeof(Slot); }

Mailbox::Slot *Mailbox::slot(int r, uint64_t n) const {
  return (Slot *)base_ + (size_t)r * kMailSlots + n % kMailSlots;
}

coll_gpu_status_t Mailbox::map(int fd, int nranks, int rank, char *why, size_t len) {
  const size_t bytes = segment_bytes(nranks);
  void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(why, len, "mapping the node's mailbox: %s", strerror(err));
    return COLL_GPU_SYSTEM_ERROR;
  }
  base_ = m;
  bytes_ = bytes;
  rank_ = rank;
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Mailbox::make(const char *name, int nranks, int rank, char *why, size_t len) {
  reset();
  const int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    snprintf(why, len, "making the node's mailbox %s: %s", name, strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  if (ftruncate(fd, (off_t)segment_bytes(nranks)) != 0) {  // zero: no message yet
    snprintf(why, len, "sizing the node's mailbox %s: %s", name, strerror(errno));
    close(fd);
    shm_unlink(name);
    return COLL_GPU_SYSTEM_ERROR;
  }
  return map(fd, nranks, rank, why, len);
}

coll_gpu_status_t Mailbox::open(const char *name, int nranks, int rank, char *why, size_t len) {
  reset();
  const int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) {
    snprintf(why, len, "opening the node's mailbox %s: %s", name, strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != segment_bytes(nranks)) {
    snprintf(why, len, "the node's mailbox %s is not of %d ranks", name, nranks);
    close(fd);
    return COLL_GPU_SYSTEM_ERROR;
  }
  return map(fd, nranks, rank, why, len);
}

void Mailbox::unlink(const char *name) { shm_unlink(name); }

void Mailbox::name_for(int pid, unsigned k, char *name, size_t len) {
  snprintf(name, len, "/coll_gpu_mbox.%d.%u", pid, k);
}

int Mailbox::sweep() {
  DIR *dir = opendir("/dev/shm");  // where shm_open keeps its segments on Linux
  if (dir == nullptr) return 0;
  int swept = 0;
  while (const dirent *d = readdir(dir)) {
    int pid = 0, end = 0;
    unsigned k = 0;
    if (sscanf(d->d_name, "coll_gpu_mbox.%d.%u%n", &pid, &k, &end) != 2 || d->d_name[end] != '\0' || pid <= 0) continue;
    struct stat st;
    if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid() || kill(pid, 0) == 0 ||
        errno != ESRCH)
      continue;  // another user's, or its process lives (or cannot be asked)
    char name[64];
    name_for(pid, k, name, sizeof(name));
    if (shm_unlink(name) == 0) ++swept;
  }
  closedir(dir);
  return swept;
}

coll_gpu_status_t Mailbox::create(const coll_gpu_bootstrap_t *b, char *why, size_t len) {
  char name[64] = "";
  coll_gpu_status_t st = COLL_GPU_SUCCESS;
  if (b->rank == 0) {
    sweep();
    name_for((int)getpid(), made.fetch_add(1) + 1, name, sizeof(name));
    st = make(name, b->size, 0, why, len);
    if (st != COLL_GPU_SUCCESS) name[0] = '\0';
  }
  if (b->bcast(b->ctx, name, sizeof(name), 0) != 0) {
    if (b->rank == 0 && name[0] != '\0') unlink(name);
    reset();
    snprintf(why, len, "the mailbox's name bcast failed");
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  if (b->rank != 0 && name[0] != '\0') {
    st = open(name, b->size, b->rank, why, len);
  } else if (b->rank != 0) {
    snprintf(why, len, "rank 0 could not make the node's mailbox");
    st = COLL_GPU_UNAVAILABLE;
  }
  int bad = -1;
  const bool all = coll_gpu_all_ok(b, st == COLL_GPU_SUCCESS ? 0 : 1, &bad);  // every rank has mapped it
  if (b->rank == 0 && name[0] != '\0') unlink(name);
  if (!all) {
    if (st == COLL_GPU_SUCCESS) snprintf(why, len, "rank %d could not map the node's mailbox", bad);
    reset();
    return COLL_GPU_UNAVAILABLE;
  }
  return COLL_GPU_SUCCESS;
}

void Mailbox::reset() {
  if (base_ != nullptr) munmap(base_, bytes_);
  base_ = nullptr;
  bytes_ = 0;
}

void Mailbox::post(uint64_t n, const uint64_t *words) {
  Slot *s = slot(rank_, n);
  memcpy(s->words, words, sizeof(s->words));
  s->n.store(n, std::memory_order_release);
}

bool Mailbox::read(int r, uint64_t n, uint64_t *words) const {
  const Slot *s = slot(r, n);
  if (s->n.load(std::memory_order_acquire) != n) return false;
  memcpy(words, s->words, sizeof(s->words));
  std::atomic_thread_fence(std::memory_order_acquire);
  return s->n.load(std::memory_order_relaxed) == n;  // not posted over meanwhile
}

}  // namespace coll_gpu
