#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Before/after on a GPU machine: one benchmark binary through two builds of the component, in ABBA order
# (round 1 runs the baseline first, round 2 this build first, and so on), so that drift and going first
# hit both alike. Each run is `mpirun -np NP` of THIS_TREE's coll_gpu_allreduce_bench with BENCH_ARGS,
# loading the component from that build's libraries. Prints each run's lines, then per size the median latency
# of each build and the median, lowest and highest of the per-round ratios this/baseline.
# usage: bash contrib/ab-bench.sh BASE THIS_TREE [ROUNDS [NP]] -- BENCH_ARGS...
#   (THIS_TREE is a built source tree; BASE one too, or a folder holding a build's mca_coll_gpu.so and
#   coll_gpu_sentinel.so; default 8 rounds of 2 ranks; e.g. -- -d cuda -N -m 8 -M 268435456);
#   MPIRUN_ARGS: more mpirun options (e.g. --oversubscribe); BENCH: another benchmark binary of THIS_TREE
set -u
base=$1 this=$2
shift 2
rounds=8 np=2
[ $# -gt 0 ] && [ "$1" != -- ] && rounds=$1 && shift
[ $# -gt 0 ] && [ "$1" != -- ] && np=$1 && shift
[ "${1:-}" = -- ] && shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
libs() { if [ -d "$1/.libs" ]; then echo "$1/.libs"; else echo "$1"; fi; }
one() {  # tag tree round
  timeout 120 mpirun -np "$np" --bind-to none ${MPIRUN_ARGS:-} --mca mca_base_component_path "$(libs "$2"):$sysdir" \
    --mca coll gpu,tuned,libnbc,basic,self,inter "$this/${BENCH:-test/perf/coll_gpu_allreduce_bench}" "${@:4}" 2>&1 |
    awk -v tag="$1" -v r="$3" '/^ *[0-9]+ / { print tag, r, $1, $2; next } /rror|FAIL/ { print "#", tag, r, $0 }'
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="base this"; else order="this base"; fi
  for tag in $order; do
    if [ $tag = base ]; then one base "$base" "$r" "$@"; else one this "$this" "$r" "$@"; fi
  done
done | tee /dev/stderr | awk -v rounds="$rounds" '
  function median(a, n, i, j, t) {  # sorts a[1..n] in place
    for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  $1 == "base" || $1 == "this" { t[$1, $2, $3] = $4; if (!($3 in seen)) { seen[$3] = 1; sizes[++ns] = $3 } }
  END {
    printf "%-12s %12s %12s %10s %10s %10s\n", "# Size(B)", "base(us)", "this(us)", "ratio", "lowest", "highest"
    for (k = 1; k <= ns; ++k) {
      s = sizes[k]; nb = nt = nr = 0; delete b; delete h; delete q
      for (r = 1; r <= rounds; ++r) {
        if ((("base", r, s) in t)) b[++nb] = t["base", r, s]
        if ((("this", r, s) in t)) h[++nt] = t["this", r, s]
        if ((("base", r, s) in t) && (("this", r, s) in t)) q[++nr] = t["this", r, s] / t["base", r, s]
      }
      if (nr == 0) { printf "%-12s missing runs\n", s; continue }
      mq = median(q, nr)
      printf "%-12s %12.2f %12.2f %10.3f %10.3f %10.3f\n", s, median(b, nb), median(h, nt), mq, q[1], q[nr]
    }
  }'
