/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Waits that yield and sleep (common/wait.h).
 */
#include "common/wait.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

namespace {
constexpr unsigned kFirstPolls = 64;         // polls before the first clock read
constexpr uint64_t kYieldNs = 1000000ULL;    // then yielding until 1 ms has passed
constexpr uint64_t kSleepMaxNs = 50000ULL;   // sleeps grow to 50 us: a late peer is seen at most that late
constexpr uint64_t kCheckNs = 100000000ULL;  // peers checked every 100 ms: kill(pid, 0) is one system call each
constexpr uint64_t kProgressNs = 10000ULL;   // the progress hook every 10 us
}  // namespace

uint64_t coll_gpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void coll_gpu_wait_init(coll_gpu_wait_t *w, const coll_gpu_wait_config_t *cfg) {
  w->cfg = cfg;
  w->start = 0;
  w->next_check = 0;
  w->next_progress = 0;
  w->sleep_ns = 1000;
  w->polls = 0;
  w->reported = 0;
}

int coll_gpu_wait_pause(coll_gpu_wait_t *w) {
  if (++w->polls < kFirstPolls) return 0;
  const uint64_t t = coll_gpu_now_ns();
  if (w->start == 0) {
    w->start = t;
    w->next_check = t + kCheckNs;
    w->next_progress = t + kProgressNs;  // none in a call that ends in a few microseconds
  }
  const uint64_t waited = t - w->start;
  if (w->cfg->progress != nullptr && t >= w->next_progress) {
    w->next_progress = t + kProgressNs;
    w->cfg->progress();
  }
  if (waited >= kYieldNs) {
    struct timespec ts = {0, (long)w->sleep_ns};
    nanosleep(&ts, nullptr);
    if (w->sleep_ns < kSleepMaxNs) w->sleep_ns *= 2;
    if (w->sleep_ns > kSleepMaxNs) w->sleep_ns = kSleepMaxNs;
  } else if (waited >= w->cfg->spin_ns) {
    sched_yield();
  }
  int what = 0;
  if (t >= w->next_check) {
    w->next_check = t + kCheckNs;
    what |= COLL_GPU_WAIT_CHECK;
  }
  if (!w->reported && waited >= w->cfg->timeout_ns) {
    w->reported = 1;
    what |= COLL_GPU_WAIT_REPORT;
  }
  return what;
}

double coll_gpu_wait_seconds(const coll_gpu_wait_t *w) {
  return w->start == 0 ? 0.0 : (double)(coll_gpu_now_ns() - w->start) / 1e9;
}

int coll_gpu_pid_visible(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

int coll_gpu_pid_gone(int32_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // a process that has ended but was not reaped yet (a zombie) still takes signals: its state says
  char path[64], stat[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == nullptr) return 0;
  const size_t n = fread(stat, 1, sizeof(stat) - 1, f);
  fclose(f);
  stat[n] = '\0';
  const char *paren = strrchr(stat, ')');  // the command name before it may hold anything
  return paren != nullptr && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}
