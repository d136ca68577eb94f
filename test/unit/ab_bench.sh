#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# contrib/ab-bench.sh with a stand-in benchmark under mpirun (one rank): it prints latencies that depend on
# which build's component folder mpirun was given (the baseline's is a folder of libraries, this build's a
# tree with .libs), so the summary's medians and ratios are known; the runs must come in ABBA order.
set -u
tmp=${TMPDIR:-/tmp}/ab_bench.$$
mkdir -p "$tmp/base" "$tmp/this/.libs"
cat >"$tmp/this/bench.sh" <<'BENCH'
#!/bin/sh
# the baseline: 10 us at 8 B, 20 at 16 B; this build: 12 and 18 in odd runs, 14 and 18 in even ones
case "$OMPI_MCA_mca_base_component_path" in
  */base:*) a=10.00 b=20.00 ;;
  *)
    n=$(cat "$(dirname "$0")/runs" 2>/dev/null || echo 0)
    echo $((n + 1)) >"$(dirname "$0")/runs"
    if [ $((n % 2)) = 0 ]; then a=12.00; else a=14.00; fi
    b=18.00
    ;;
esac
echo "# Size(B)        Avg lat(us)"
echo "8               $a 0 0 -"
echo "16              $b 0 0 -"
BENCH
chmod +x "$tmp/this/bench.sh"
want='# Size(B)        base(us)     this(us)      ratio     lowest    highest
8                   10.00        13.00      1.300      1.200      1.400
16                  20.00        18.00      0.900      0.900      0.900'
got=$(BENCH=bench.sh MPIRUN_ARGS=--oversubscribe bash "${srcdir:-.}/contrib/ab-bench.sh" "$tmp/base" "$tmp/this" 4 1 -- \
  -m 8 2>"$tmp/runs.txt")
order=$(awk '$3 == 8 { printf "%s%s ", $1, $2 }' "$tmp/runs.txt")
want_order='base1 this1 this2 base2 base3 this3 this4 base4 '
rm -rf "$tmp"
if [ "$got" = "$want" ] && [ "$order" = "$want_order" ]; then
  echo "ok: ab-bench summary and ABBA order"
  exit 0
fi
echo "FAIL: ab-bench"
printf 'got:\n%s\nwant:\n%s\norder: %s\nwant:  %s\n' "$got" "$want" "$order" "$want_order"
exit 1
