/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A POSIX shared memory segment that the ranks of a host map, named after the process that makes it (C++ only): the
 * node's mailbox (engine/mailbox.h) and the SHM transport's scratch (engine/transport.h) are such segments.
 *
 * The maker creates it O_EXCL, mode 0600, and unlinks it once every rank that maps it has done so, so that nothing
 * is left on the host however the job ends after that. One whose maker ended before unlinking it (a rank killed
 * inside the engine's creation) is unlinked by the next sweep of its kind, which a maker runs before it makes one.
 */
#ifndef COLL_GPU_SHM_SEGMENT_H
#define COLL_GPU_SHM_SEGMENT_H

#include <stddef.h>

#include "common/status.h"

namespace coll_gpu {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment() { reset(); }
  ShmSegment(const ShmSegment &) = delete;
  ShmSegment &operator=(const ShmSegment &) = delete;

  // A new segment of `bytes` zero bytes under `name` (unique on the host), its pages allocated (a /dev/shm without
  // room for them fails here), mapped here; what: the segment, for messages ("the node's mailbox").
  coll_gpu_status_t make(const char *name, size_t bytes, const char *what, char *why, size_t len);
  // The segment under `name`, which must be `bytes` long, mapped here.
  coll_gpu_status_t open(const char *name, size_t bytes, const char *what, char *why, size_t len);
  static void unlink(const char *name);
  // The name of the k-th segment of `kind` (a word: "mbox", "scratch") that process pid makes.
  static void name_for(const char *kind, int pid, unsigned k, char *name, size_t len);
  // Unlinks the segments of `kind` named by name_for that this user's processes made and that outlived them (their
  // process ended before unlinking them); returns how many. (A process of another pid namespace that shares /dev/shm
  // looks ended: a segment of its own it has not unlinked yet goes, and its maker's peers then cannot open it.)
  static int sweep(const char *kind);
  void reset();
  void *base() const { return base_; }

 private:
  coll_gpu_status_t map(int fd, size_t bytes, const char *what, char *why, size_t len);
  void *base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace coll_gpu

#endif
