#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# contrib/cluster-ab.sh on a made-up contrib/cluster-bench.sh output: per collective and size the median of
# the "this" runs against the median of the "tree:" runs (odd and even counts), the runs beside NCCL and
# others left out, a size only one build ran left out, and per collective the lowest and highest ratio.
set -u
tmp=${TMPDIR:-/tmp}/cluster_ab.$$
cat >"$tmp.in" <<'OUT'
minicluster mcb: mcb0 mcb1 on 10.254.1.0/24 (bridge mcbbr)
== bcast, 2 hosts x 2 GPU(s), defaults-nccl4
# Size(B)         Avg lat(us)  algbw(GB/s)  busbw(GB/s)    check   NCCL lat(us)   NCCL busbw  ours/NCCL
65536                  500.00         0.00         0.00       ok          20.00         0.00      25.00
== bcast, 2 hosts x 2 GPU(s), this
65536                   60.00         1.00         1.00       ok
1048576                100.00         1.00         1.00       ok
== bcast, 2 hosts x 2 GPU(s), tree:/tmp/base
65536                   80.00         1.00         1.00       ok
1048576                200.00         1.00         1.00       ok
4194304                900.00         1.00         1.00       ok
== bcast, 2 hosts x 2 GPU(s), this
65536                   70.00         1.00         1.00       ok
1048576                 90.00         1.00         1.00       ok
== bcast, 2 hosts x 2 GPU(s), tree:/tmp/base
65536                   40.00         1.00         1.00       ok
1048576                 50.00         1.00         1.00       ok
== bcast, 2 hosts x 2 GPU(s), this
65536                  100.00         1.00         1.00       ok
1048576                300.00         1.00         1.00       ok
== reduce, 2 hosts x 2 GPU(s), gpu
65536                    1.00         1.00         1.00       ok
== reduce, 2 hosts x 2 GPU(s), this
65536                   30.00         1.00         1.00       ok
== reduce, 2 hosts x 2 GPU(s), tree:/tmp/base
65536                   20.00         1.00         1.00       ok
OUT
cat >"$tmp.want" <<'OUT'
collective           size (B)  this (us)  base (us)  this/base
bcast                   65536      70.00      60.00       1.17
bcast                 1048576     100.00     125.00       0.80
reduce                  65536      30.00      20.00       1.50
bcast: this/base 0.80-1.17 (medians of 3 and 2 runs)
reduce: this/base 1.50-1.50 (medians of 1 and 1 runs)
OUT
bash "${srcdir:-.}/contrib/cluster-ab.sh" "$tmp.in" >"$tmp.got"
# what differs from the expected lines, if anything (diff's exit status is the test's)
diff "$tmp.want" "$tmp.got" && echo "ok: cluster-ab"
rc=$?
rm -f "$tmp.in" "$tmp.want" "$tmp.got"
exit $rc
