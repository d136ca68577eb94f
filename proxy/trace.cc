/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Step timestamps (proxy/trace.h): one array per process, filled by every thread through an atomic index.
 */
#include "proxy/trace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

#include "common/wait.h"

namespace {

struct Event {
  uint64_t ns, step;
  int32_t rank, peer, conn;
  char kind;
};

// 0: not looked at the environment yet; 1: off; 2: recording
std::atomic<int> state{0};
std::atomic<uint32_t> used{0};
Event *events = nullptr;
char where[PATH_MAX];

// The first call: COLL_GPU_STEP_TRACE decides (one thread does; the others see off until it has).
void from_environment() {
  int expect = 0;
  if (!state.compare_exchange_strong(expect, 1)) return;
  const char *dir = getenv("COLL_GPU_STEP_TRACE");
  if (dir != nullptr && dir[0] != '\0') coll_gpu_trace_start(dir);
}

}  // namespace

extern "C" coll_gpu_status_t coll_gpu_trace_start(const char *dir) {
  if (events == nullptr) events = (Event *)calloc(COLL_GPU_TRACE_MAX_EVENTS, sizeof(Event));
  if (events == nullptr) return COLL_GPU_SYSTEM_ERROR;
  snprintf(where, sizeof(where), "%s", dir);
  used.store(0);
  state.store(2, std::memory_order_release);
  return COLL_GPU_SUCCESS;
}

extern "C" void coll_gpu_trace_stop(void) {
  state.store(1);
  used.store(0);
}

extern "C" void coll_gpu_trace(char kind, int rank, int peer, int conn, uint64_t step) {
  int s = state.load(std::memory_order_acquire);
  if (s == 0) {
    from_environment();
    s = state.load(std::memory_order_acquire);
  }
  if (s != 2) return;
  const uint32_t i = used.fetch_add(1, std::memory_order_relaxed);
  if (i < COLL_GPU_TRACE_MAX_EVENTS) events[i] = Event{coll_gpu_now_ns(), step, rank, peer, conn, kind};
}

extern "C" coll_gpu_status_t coll_gpu_trace_write(void) {
  if (state.load(std::memory_order_acquire) != 2) return COLL_GPU_SUCCESS;
  char path[PATH_MAX + 32];
  snprintf(path, sizeof(path), "%s/steps.%ld", where, (long)getpid());
  FILE *f = fopen(path, "w");
  if (f == nullptr) return COLL_GPU_SYSTEM_ERROR;
  uint32_t n = used.load();
  if (n > COLL_GPU_TRACE_MAX_EVENTS) n = COLL_GPU_TRACE_MAX_EVENTS;
  for (uint32_t i = 0; i < n; ++i) {
    const Event &e = events[i];
    if (e.kind == '\0') continue;  // still being recorded by a thread of another engine's proxy
    fprintf(f, "%c %d %d %d %llu %llu\n", e.kind, e.rank, e.peer, e.conn, (unsigned long long)e.step,
            (unsigned long long)e.ns);
  }
  return fclose(f) == 0 ? COLL_GPU_SUCCESS : COLL_GPU_SYSTEM_ERROR;
}
