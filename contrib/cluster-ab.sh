#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Compares two builds in contrib/cluster-bench.sh output: its "this" runs (this tree's component) against
# its "tree:DIR" runs (another build's), per collective and size the median time of each and their ratio,
# then per collective the lowest and highest ratio. Alternate the two in RUNS ("this tree:DIR this
# tree:DIR ...") so that both meet the cluster in the same states; between runs of one build on the GPU
# machine small sizes moved by up to 20%.
# usage: bash contrib/cluster-ab.sh CLUSTER-BENCH-OUTPUT
set -eu
awk '
  function median(list,    v, m, i, j, t) {
    m = split(list, v, " ")
    for (i = 2; i <= m; ++i)
      for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
  }
  /^== / {
    split($0, f, ","); coll = f[1]; sub("^== ", "", coll)
    label = f[3]; sub("^ *", "", label)
    side = label == "this" ? "this" : label ~ /^tree:/ ? "base" : ""
    if (side != "" && !(coll in seen)) { seen[coll] = 1; order[++ncoll] = coll }
    next
  }
  /^[0-9]/ && side != "" {
    k = coll SUBSEP $1
    if (!(k in known)) { known[k] = 1; sizes[coll] = sizes[coll] " " $1 }
    t[side, k] = t[side, k] " " $2; n[side, k]++
  }
  END {
    printf "%-16s %12s %10s %10s %10s\n", "collective", "size (B)", "this (us)", "base (us)", "this/base"
    for (c = 1; c <= ncoll; ++c) {
      coll = order[c]; m = split(sizes[coll], s, " "); lo = ""; hi = ""; runs = ""
      for (i = 1; i <= m; ++i) {
        k = coll SUBSEP s[i]
        if (!(("this", k) in n) || !(("base", k) in n)) continue
        a = median(t["this", k]); b = median(t["base", k]); r = a / b
        printf "%-16s %12d %10.2f %10.2f %10.2f\n", coll, s[i], a, b, r
        if (lo == "" || r < lo) lo = r
        if (hi == "" || r > hi) hi = r
        runs = n["this", k] " and " n["base", k]
      }
      if (lo != "") summary[c] = sprintf("%s: this/base %.2f-%.2f (medians of %s runs)", coll, lo, hi, runs)
      else summary[c] = coll ": no size with both builds"
    }
    for (c = 1; c <= ncoll; ++c) print summary[c]
  }' "$1"
