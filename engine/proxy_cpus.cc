/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The network proxy's CPUs and threads (engine/proxy_cpus.h).
 */
#include "engine/proxy_cpus.h"

#include <string.h>

int coll_gpu_proxy_near(const int *gpu, int ngpu, const int *nic, int nnic, int *out, int *by_gpu, int *by_nic) {
  int n = 0;
  for (int i = 0, j = 0; i < ngpu && j < nnic;) {  // both lists increase: one walk
    if (gpu[i] < nic[j]) {
      ++i;
    } else if (nic[j] < gpu[i]) {
      ++j;
    } else {
      out[n++] = gpu[i++];
      ++j;
    }
  }
  *by_nic = nnic > 0;
  *by_gpu = ngpu > 0 && (n > 0 || nnic == 0);
  if (n > 0) return n;
  const int *all = nnic > 0 ? nic : gpu;
  n = nnic > 0 ? nnic : ngpu;
  for (int i = 0; i < n; ++i) out[i] = all[i];
  return n;
}

int coll_gpu_ucx_devices_take(const char *devices, const char *name) {
  if (devices == nullptr || devices[0] == '\0' || strcmp(devices, "all") == 0) return 1;
  const size_t n = strlen(name);
  for (const char *p = devices; *p != '\0';) {
    const size_t len = strcspn(p, ",");
    if (len >= n && strncmp(p, name, n) == 0 && (len == n || p[n] == ':')) return 1;
    p += len + (p[len] == ',' ? 1 : 0);
  }
  return 0;
}

int coll_gpu_proxy_cpus(const int *near, int nnear, const int *mine, int nmine, int *out, int *share_of) {
  const bool bound = nmine > 0 && nmine <= 2;
  int n = 0;
  for (int i = 0, j = 0; i < nnear; ++i) {  // both lists increase: one walk
    while (j < nmine && mine[j] < near[i]) ++j;
    const bool its = j < nmine && mine[j] == near[i];
    if (its != bound || nmine == 0) out[n++] = near[i];  // bound: near but its own; else near and its own
  }
  if (n == 0) {  // bound around the GPU: all of near; kept off the GPU's CPUs: all of its own
    const int *all = bound ? near : mine;
    n = bound ? nnear : nmine;
    for (int i = 0; i < n; ++i) out[i] = all[i];
  }
  *share_of = bound ? nnear : n;
  return n;
}

int coll_gpu_proxy_auto_threads(int ncpus, int ranks, int most) {
  const int share = ncpus / (ranks > 1 ? ranks : 1);
  const int t = share - 1 < most ? share - 1 : most;
  return t > 1 ? t : 1;
}
