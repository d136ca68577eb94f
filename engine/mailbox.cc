/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The node's ranks' messages in shared memory (engine/mailbox.h).
 */
#include "engine/mailbox.h"

#include <stdio.h>
#include <string.h>
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
constexpr const char *kKind = "mbox";
constexpr const char *kWhat = "the node's mailbox";
}  // namespace

size_t Mailbox::segment_bytes(int nranks) { return (size_t)nranks * kMailSlots * sizeof(Slot); }

Mailbox::Slot *Mailbox::slot(int r, uint64_t n) const {
  return (Slot *)seg_.base() + (size_t)r * kMailSlots + n % kMailSlots;
}

coll_gpu_status_t Mailbox::make(const char *name, int nranks, int rank, char *why, size_t len) {
  rank_ = rank;
  return seg_.make(name, segment_bytes(nranks), kWhat, why, len);  // zero: no message yet
}

coll_gpu_status_t Mailbox::open(const char *name, int nranks, int rank, char *why, size_t len) {
  rank_ = rank;
  return seg_.open(name, segment_bytes(nranks), kWhat, why, len);
}

void Mailbox::unlink(const char *name) { ShmSegment::unlink(name); }

void Mailbox::name_for(int pid, unsigned k, char *name, size_t len) { ShmSegment::name_for(kKind, pid, k, name, len); }

int Mailbox::sweep() { return ShmSegment::sweep(kKind); }

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

void Mailbox::reset() { seg_.reset(); }

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
