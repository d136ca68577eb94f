#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Summarizes benchmark output (coll_gpu_allreduce_bench runs, each after a "== COLL ..." line, as
# contrib/device-run.sh writes them) into the ratio ours/NCCL per collective and size band: 8 B - 64 KiB,
# 256 KiB - 16 MiB, 64 MiB and above; each band's lowest and highest ratio, and the size of the highest.
# usage: bash contrib/ratio-bands.sh BENCH-OUTPUT
set -eu
awk '
  /^== / { coll = $2; sub(",", "", coll); next }
  /^[0-9]/ && NF >= 8 {
    size = $1 + 0; r = $NF + 0
    band = size <= 65536 ? 1 : (size >= 262144 && size <= 16777216) ? 2 : size >= 67108864 ? 3 : 0
    if (band == 0) next
    k = coll SUBSEP band
    if (!(k in hi)) { order[++n] = k; lo[k] = r; hi[k] = r; at[k] = size }
    if (r < lo[k]) lo[k] = r
    if (r > hi[k]) { hi[k] = r; at[k] = size }
  }
  END {
    split("8 B-64 KiB,256 KiB-16 MiB,>= 64 MiB", name, ",")
    printf "%-16s %-16s %10s %10s %14s\n", "collective", "sizes", "lowest", "highest", "highest at (B)"
    for (i = 1; i <= n; ++i) {
      split(order[i], kb, SUBSEP)
      printf "%-16s %-16s %10.2f %10.2f %14d\n", kb[1], name[kb[2]], lo[order[i]], hi[order[i]], at[order[i]]
    }
  }' "$1"
