#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# contrib/ratio-bands.sh on a made-up benchmark output: each collective's lowest and highest ratio per
# size band, the size of the highest, sizes between bands (128 KiB, 32 MiB) and lines without NCCL left out.
set -u
tmp=${TMPDIR:-/tmp}/ratio_bands.$$
cat >"$tmp.in" <<'OUT'
== bcast on device buffers through coll/gpu, 2 ranks
# Size(B)         Avg lat(us)  algbw(GB/s)  busbw(GB/s)    check   NCCL lat(us)   NCCL busbw  ours/NCCL
8                       12.88         0.00         0.00        -          21.41         0.00       0.60
65536                   13.31         4.92         4.92        -          19.67         3.33       0.68
131072                  99.00         9.04         9.04        -          20.35         6.44       4.90
262144                  16.25        16.14        16.14        -          21.57        12.15       0.75
16777216                83.09       201.92       201.92        -          73.80       227.35       1.13
33554432               152.01       220.74       220.74        -         120.28       278.97       9.99
67108864               251.34       267.01       267.01        -         215.37       311.60       1.17
== alltoall, 2 ranks
8                       13.75         0.00         0.00        -
268435456             1607.88       333.90       166.95        -         933.66       287.51       1.72
134217728              778.30       344.90       172.45        -         492.59       272.47       1.58
OUT
want='collective       sizes                lowest    highest highest at (B)
bcast            8 B-64 KiB             0.60       0.68          65536
bcast            256 KiB-16 MiB         0.75       1.13       16777216
bcast            >= 64 MiB              1.17       1.17       67108864
alltoall         >= 64 MiB              1.58       1.72      268435456'
got=$(bash "${srcdir:-.}/contrib/ratio-bands.sh" "$tmp.in")
rm -f "$tmp.in"
if [ "$got" = "$want" ]; then
  echo "ok: ratio bands"
  exit 0
fi
echo "FAIL: ratio bands"
printf 'got:\n%s\nwant:\n%s\n' "$got" "$want"
exit 1
