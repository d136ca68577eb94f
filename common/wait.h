/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Waiting for peers: late is not dead, and waiting burns no core an oversubscribed rank needs.
 *
 * A wait polls its condition and calls coll_gpu_wait_pause after every poll that failed. The pause
 * spins (nothing) for the first spin_ns, then yields the CPU (sched_yield) until YIELD_NS have passed,
 * then sleeps in steps growing from 1 us to at most 50 us. No clock is read in the first 64 polls, so a
 * condition that is met at once costs nothing. Every 100 ms the pause tells the caller to check whether
 * the peers it waits for still exist; once, after timeout_ns, it tells the caller to report the wait
 * (the watchdog), and the wait goes on. No MPI here: from 10 us after the first polls, the pause
 * calls the caller's progress hook, if any, every 10 us, so that a rank waiting here still moves its other
 * communication (the glue passes opal_progress: a peer may wait in MPI_Wait for this rank's part of a
 * nonblocking call before it reaches the call this rank waits in). The hook must not wait itself.
 */
#ifndef COLL_GPU_WAIT_H
#define COLL_GPU_WAIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint64_t spin_ns;       /* spinning before the first yield (coll_gpu_spin_us; 0 when oversubscribed) */
  uint64_t timeout_ns;    /* when the watchdog reports the wait (coll_gpu_timeout) */
  void (*progress)(void); /* called every 10 us from 10 us into a wait; NULL: none */
} coll_gpu_wait_config_t;

typedef struct {
  const coll_gpu_wait_config_t *cfg;
  uint64_t start; /* first clock read, after 64 polls; 0 before */
  uint64_t next_check;
  uint64_t next_progress;
  uint64_t sleep_ns;
  unsigned polls;
  int reported;
} coll_gpu_wait_t;

/* What coll_gpu_wait_pause asks of the caller (bits). */
enum { COLL_GPU_WAIT_CHECK = 1 /* check the peers now */, COLL_GPU_WAIT_REPORT = 2 /* report the wait, once */ };

void coll_gpu_wait_init(coll_gpu_wait_t *w, const coll_gpu_wait_config_t *cfg);
/* One pause between two polls; returns COLL_GPU_WAIT_* bits, usually 0. */
int coll_gpu_wait_pause(coll_gpu_wait_t *w);
/* Seconds since the wait's first clock read (0 before it). */
double coll_gpu_wait_seconds(const coll_gpu_wait_t *w);

/* Whether process pid can be checked from here (same PID namespace): kill(pid, 0) finds it. */
int coll_gpu_pid_visible(int32_t pid);
/* Whether a process that was visible is gone: no longer there, or ended and not yet reaped (a zombie). */
int coll_gpu_pid_gone(int32_t pid);

uint64_t coll_gpu_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
