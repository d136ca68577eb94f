/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A node's ranks' words for their calls, in host memory they share: each rank posts a message (kMailWords
 * words) under a number that grows with every message, and reads its peers' under the same number. C++ only.
 *
 * The memory is a POSIX shared memory segment (engine/shm_segment.h) that the communicator's rank 0 creates and
 * unlinks once every rank has mapped it (Mailbox::create, a collective step of the engine's creation), so nothing is
 * left behind however the job ends after that; one left by a rank 0 killed before it unlinked is unlinked by the next
 * rank 0 of the user's on the host to make one (Mailbox::sweep). Each rank has kMailSlots slots, message n in slot n
 * mod kMailSlots: a rank may post kMailSlots messages beyond the last one every peer has read, which the callers keep
 * to (every message is read by every peer before its sender's call can end). A slot's number is stored after its words
 * (release) and read before them (acquire), then once more: a reader never takes words of another message.
 */
#ifndef COLL_GPU_MAILBOX_H
#define COLL_GPU_MAILBOX_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "engine/bootstrap.h"
#include "engine/shm_segment.h"

namespace coll_gpu {

constexpr int kMailWords = 31;  // a slot is 256 bytes
constexpr int kMailSlots = 8;

class Mailbox {
 public:
  Mailbox() = default;
  ~Mailbox() { reset(); }
  Mailbox(const Mailbox &) = delete;
  Mailbox &operator=(const Mailbox &) = delete;

  // Collective over the bootstrap's ranks (all on this host): rank 0 makes the segment, the others map it.
  // Every rank makes the same bootstrap calls whatever fails; the result is the same on every rank.
  coll_gpu_status_t create(const coll_gpu_bootstrap_t *b, char *why, size_t len);
  // The same pieces, for tests: the segment for `nranks` made under `name` (unique on the host), or mapped.
  coll_gpu_status_t make(const char *name, int nranks, int rank, char *why, size_t len);
  coll_gpu_status_t open(const char *name, int nranks, int rank, char *why, size_t len);
  static void unlink(const char *name);
  // The name of the k-th segment that process pid makes in create.
  static void name_for(int pid, unsigned k, char *name, size_t len);
  // Unlinks the segments named by name_for that this user's processes made and that outlived them (their process
  // ended before unlinking it); returns how many. (A process of another pid namespace that shares /dev/shm looks
  // ended: a segment of its own it has not unlinked yet goes, and its engine then does without a mailbox.)
  static int sweep();
  void reset();
  bool ready() const { return seg_.base() != nullptr; }

  // This rank's message n (from 1).
  void post(uint64_t n, const uint64_t *words);
  // Rank r's message n into words: true, or false when it has not posted it yet.
  bool read(int r, uint64_t n, uint64_t *words) const;

 private:
  struct Slot;
  static size_t segment_bytes(int nranks);  // the segment of nranks ranks' slots
  Slot *slot(int r, uint64_t n) const;
  ShmSegment seg_;
  int rank_ = 0;
};

}  // namespace coll_gpu

#endif
