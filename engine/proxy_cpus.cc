/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The network proxy's CPUs and threads (engine/proxy_cpus.h).
 */
#include "engine/proxy_cpus.h"

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
