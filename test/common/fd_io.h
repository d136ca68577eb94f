/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Whole reads and writes on a file descriptor (a socketpair between a test's forked processes), and
 * the acquire/release loads and stores of the FIFO counters a host thread shares with the network proxy.
 */
#ifndef COLL_GPU_TEST_FD_IO_H
#define COLL_GPU_TEST_FD_IO_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

static inline bool write_all(int fd, const void *buf, size_t n) {
  for (size_t at = 0; at < n;) {
    const ssize_t k = write(fd, (const char *)buf + at, n - at);
    if (k <= 0) return false;
    at += (size_t)k;
  }
  return true;
}

static inline bool read_all(int fd, void *buf, size_t n) {
  for (size_t at = 0; at < n;) {
    const ssize_t k = read(fd, (char *)buf + at, n - at);
    if (k <= 0) return false;
    at += (size_t)k;
  }
  return true;
}

static inline uint64_t load_acquire(volatile uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void store_release(volatile uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

#endif
