/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A host's shared memory segments (engine/shm_segment.h).
 */
#include "engine/shm_segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace coll_gpu {

coll_gpu_status_t ShmSegment::map(int fd, size_t bytes, const char *what, char *why, size_t len) {
  void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(why, len, "mapping %s: %s", what, strerror(err));
    return COLL_GPU_SYSTEM_ERROR;
  }
  base_ = m;
  bytes_ = bytes;
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t ShmSegment::make(const char *name, size_t bytes, const char *what, char *why, size_t len) {
  reset();
  const int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    snprintf(why, len, "making %s %s: %s", what, name, strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  // zero bytes, every page taken now: a /dev/shm too small fails here, not as a SIGBUS at a later store
  const int err = posix_fallocate(fd, 0, (off_t)bytes);
  if (err != 0) {
    snprintf(why, len, "sizing %s %s to %zu bytes: %s%s", what, name, bytes, strerror(err),
             err == ENOSPC ? " (/dev/shm is too small: enlarge it, a container's --shm-size for one)" : "");
    close(fd);
    shm_unlink(name);
    return COLL_GPU_SYSTEM_ERROR;
  }
  return map(fd, bytes, what, why, len);
}

coll_gpu_status_t ShmSegment::open(const char *name, size_t bytes, const char *what, char *why, size_t len) {
  reset();
  const int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) {
    snprintf(why, len, "opening %s %s: %s", what, name, strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != bytes) {
    snprintf(why, len, "%s %s is not %zu bytes long", what, name, bytes);
    close(fd);
    return COLL_GPU_SYSTEM_ERROR;
  }
  return map(fd, bytes, what, why, len);
}

void ShmSegment::unlink(const char *name) { shm_unlink(name); }

void ShmSegment::name_for(const char *kind, int pid, unsigned k, char *name, size_t len) {
  snprintf(name, len, "/coll_gpu_%s.%d.%u", kind, pid, k);
}

int ShmSegment::sweep(const char *kind) {
  DIR *dir = opendir("/dev/shm");  // where shm_open keeps its segments on Linux
  if (dir == nullptr) return 0;
  char prefix[32];
  const int plen = snprintf(prefix, sizeof(prefix), "coll_gpu_%s.", kind);
  int swept = 0;
  while (const dirent *d = readdir(dir)) {
    int pid = 0, end = 0;
    unsigned k = 0;
    if (strncmp(d->d_name, prefix, (size_t)plen) != 0 || sscanf(d->d_name + plen, "%d.%u%n", &pid, &k, &end) != 2 ||
        d->d_name[plen + end] != '\0' || pid <= 0)
      continue;
    struct stat st;
    if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid() || kill(pid, 0) == 0 ||
        errno != ESRCH)
      continue;  // another user's, or its process lives (or cannot be asked)
    char name[64];
    name_for(kind, pid, k, name, sizeof(name));
    if (shm_unlink(name) == 0) ++swept;
  }
  closedir(dir);
  return swept;
}

void ShmSegment::reset() {
  if (base_ != nullptr) munmap(base_, bytes_);
  base_ = nullptr;
  bytes_ = 0;
}

}  // namespace coll_gpu
