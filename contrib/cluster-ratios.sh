#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Sums up contrib/cluster-bench.sh output against NCCL at its best: per collective and size, coll/gpu's
# time (the mean over the runs that had NCCL beside it, "defaults" and "defaults-nccl4") against the
# lowest NCCL time of those runs; then per collective the ratio at 8 B, the lowest and highest from 1 KiB
# to 64 MiB, and the sizes there above TARGET (default 0.7), as the bar reads.
# usage: bash contrib/cluster-ratios.sh CLUSTER-BENCH-OUTPUT [TARGET]
set -eu
awk -v target="${2:-0.7}" '
  /^== / { split($0, f, ","); coll = f[1]; sub("^== ", "", coll); next }
  /^[0-9]/ && NF >= 8 {
    k = coll SUBSEP $1
    if (!(k in n)) { sizes[coll] = sizes[coll] " " $1; if (!(coll in seen)) { seen[coll] = 1; order[++ncoll] = coll } }
    sum[k] += $2; n[k]++
    if (!(k in best) || $6 < best[k]) best[k] = $6
  }
  END {
    printf "%-16s %12s %10s %12s %8s\n", "collective", "size (B)", "ours (us)", "NCCL best", "ratio"
    for (c = 1; c <= ncoll; ++c) {
      coll = order[c]
      m = split(sizes[coll], s, " ")
      lo = ""; hi = ""; at8 = "-"; over = ""
      for (i = 1; i <= m; ++i) {
        k = coll SUBSEP s[i]
        r = (sum[k] / n[k]) / best[k]
        printf "%-16s %12d %10.2f %12.2f %8.2f\n", coll, s[i], sum[k] / n[k], best[k], r
        if (s[i] == 8) at8 = sprintf("%.2f", r)
        if (s[i] + 0 < 1024 || s[i] + 0 > 67108864) continue
        if (lo == "" || r < lo) lo = r
        if (hi == "" || r > hi) hi = r
        if (r > target) over = over " " s[i]
      }
      summary[c] = sprintf("%s: 8 B %s; 1 KiB-64 MiB %.2f-%.2f; above %s at:%s", coll, at8, lo, hi, target,
                           over == "" ? " none" : over)
    }
    for (c = 1; c <= ncoll; ++c) print summary[c]
  }' "$1"
