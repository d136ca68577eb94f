#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# contrib/cluster-ratios.sh on a made-up contrib/cluster-bench.sh output: ours as the mean of the runs beside
# NCCL, NCCL's best of them, a run without NCCL (-N) left out, and per collective the ratio at 8 B, the range
# from 1 KiB to 64 MiB (2 MiB counted, 128 MiB not) and the sizes above the target.
set -u
tmp=${TMPDIR:-/tmp}/cluster_ratios.$$
cat >"$tmp.in" <<'OUT'
minicluster mcb: mcb0 mcb1 on 10.254.1.0/24 (bridge mcbbr)
== bcast, 2 hosts x 1 GPU(s), defaults
# Size(B)         Avg lat(us)  algbw(GB/s)  busbw(GB/s)    check   NCCL lat(us)   NCCL busbw  ours/NCCL
8                       10.00         0.00         0.00       ok          20.00         0.00       0.50
1024                    30.00         0.04         0.04       ok          40.00         0.02       0.75
2097152                300.00         6.37         6.37       ok         200.00         4.26       1.50
134217728            90000.00         7.72         7.72       ok       10000.00         7.29       9.00
== bcast, 2 hosts x 1 GPU(s), defaults-nccl4
8                       14.00         0.00         0.00       ok          16.00         0.00       0.88
1024                    10.00         0.04         0.04       ok          50.00         0.02       0.20
2097152                100.00         6.37         6.37       ok         400.00         4.26       0.25
134217728            90000.00         7.72         7.72       ok       10000.00         7.29       9.00
== bcast, 2 hosts x 1 GPU(s), gpu
8                        1.00         0.00         0.00       ok
1024                     1.00         0.04         0.04       ok
OUT
cat >"$tmp.want" <<'OUT'
collective           size (B)  ours (us)    NCCL best    ratio
bcast                       8      12.00        16.00     0.75
bcast                    1024      20.00        40.00     0.50
bcast                 2097152     200.00       200.00     1.00
bcast               134217728   90000.00     10000.00     9.00
bcast: 8 B 0.75; 1 KiB-64 MiB 0.50-1.00; above 0.7 at: 2097152
OUT
bash "${srcdir:-.}/contrib/cluster-ratios.sh" "$tmp.in" >"$tmp.got"
# what differs from the expected lines, if anything (diff's exit status is the test's)
diff "$tmp.want" "$tmp.got" && echo "ok: cluster-ratios"
rc=$?
rm -f "$tmp.in" "$tmp.want" "$tmp.got"
exit $rc
