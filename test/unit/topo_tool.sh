#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# coll_gpu_topo on the fixtures: rings printed as "Channel NN/MM : g0 ... gn-1", GPUs named by rank
# (else index), the dump read back to the same output, a malformed file refused with its line, a FIFO
# refused at once, and a dump over a symbolic link that replaces the link instead of writing through it;
# --help and --version of the installed tools (status 0, without MPI).
set -u
data=${srcdir:-.}/test/data
tool=./coll_gpu_topo
fail=0
check() { # what, command output, pattern
  if printf '%s\n' "$2" | grep -Eq "$3"; then echo "ok: $1"; else echo "FAIL: $1"; printf '%s\n' "$2"; fail=1; fi
}
out=$($tool --xml "$data/nvswitch8_h200.xml")
check "NVSwitch ring" "$out" '^Channel 00/01 : 0 1 2 3 4 5 6 7$'
check "NVSwitch tree: the ring's chain" "$out" '^Tree 00/02 : 1/-1/-1->0->-1 2/-1/-1->1->0 .* -1/-1/-1->7->6$'
out=$($tool --xml "$data/pcie4_nvbridge.xml")
check "bridged pairs named by rank" "$out" '^Channel 00/02 : 0 2 3 1$'
out=$($tool --xml "$data/twonode_a.xml" --xml "$data/twonode_b.xml")
check "two nodes: GPU 5 on node 1 uses the NIC of its switch" "$out" '^GPU 5 \(node 1, 0000:12:00.0\): NIC mlx5_0 via PIX$'
check "two nodes: a ring over both" "$out" '^Channel 00/0[0-9] : 0 1 2 3 4 5 6 7$'
tmp=${TMPDIR:-/tmp}/coll_gpu_topo.$$
$tool --xml "$data/dgx1_v100.xml" --dump "$tmp.xml" >"$tmp.a"
$tool --xml "$tmp.xml" | sed "s|^$tmp.xml:|$data/dgx1_v100.xml:|" >"$tmp.b"
if cmp -s "$tmp.a" "$tmp.b"; then echo "ok: dump read back"; else echo "FAIL: dump read back differs"; fail=1; fi
printf '<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0" class="0x030200">\n  </cpu>\n</system>\n' >"$tmp.bad"
out=$($tool --xml "$tmp.bad" 2>&1)
status=$?
check "malformed file: status 1 and its line" "$status $out" "^1 coll_gpu_topo: $tmp.bad:4: </cpu> closes <pci> of line 3"
$tool --bogus >/dev/null 2>&1
[ $? -eq 2 ] && echo "ok: an unknown option is a usage error" || { echo "FAIL: unknown option"; fail=1; }
out=$($tool --help 2>/dev/null)
check "--help: usage on standard output, status 0" "$? $out" '^0 usage: coll_gpu_topo '
out=$($tool --version)
check "--version: status 0" "$? $out" "^0 coll_gpu_topo \(coll/gpu\) [0-9]+\.[0-9]+\.[0-9]+$"
for bench in test/perf/coll_gpu_allreduce_bench_host test/perf/coll_gpu_allreduce_bench; do
  out=$(./$bench --help 2>/dev/null)
  check "$bench --help, without MPI: status 0" "$? $out" "^0 usage: "
  out=$(./$bench --version 2>/dev/null)
  check "$bench --version, without MPI: status 0" "$? $out" " \(coll/gpu\) [0-9]+\.[0-9]+\.[0-9]+$"
done
# without --xml: this machine, probed; its dump is NCCL-format XML that reads back to the same report
$tool --dump "$tmp.probe" >"$tmp.a" 2>"$tmp.err"
status=$?
out=$(cat "$tmp.probe")
check "probe dump: a <system> with a <cpu>" "$out" '^  <cpu numaid="[0-9]+"'
if [ $status -eq 0 ]; then
  $tool --xml "$tmp.probe" >"$tmp.b" 2>&1
  sed -i "1s/.*//" "$tmp.a" "$tmp.b" # the first line names the source
  if cmp -s "$tmp.a" "$tmp.b"; then echo "ok: probe dump read back"; else echo "FAIL: probe dump read back"; fail=1; fi
else # a machine without GPUs: the probe says so and fails
  [ $status -eq 1 ] && echo "ok: probe without GPUs: status 1" || { echo "FAIL: probe status $status"; fail=1; }
  check "probe without GPUs: says so" "$(cat "$tmp.err")" 'this machine: no GPU'
fi
# a FIFO is no topology file: refused at once, never waited on (timeout 10: a wait fails the check)
mkfifo "$tmp.fifo"
out=$(timeout 10 $tool --xml "$tmp.fifo" 2>&1)
status=$?
check "a FIFO is refused at once" "$status $out" "^1 coll_gpu_topo: $tmp.fifo: not a regular file"
# a dump over a symbolic link replaces the link, and the file it pointed to keeps its bytes
echo "precious" >"$tmp.target"
ln -s "$tmp.target" "$tmp.link"
$tool --xml "$data/dgx1_v100.xml" --dump "$tmp.link" >/dev/null
if [ "$(cat "$tmp.target")" = precious ] && [ -f "$tmp.link" ] && [ ! -L "$tmp.link" ] && grep -q '<system' "$tmp.link"; then
  echo "ok: a dump replaces a symbolic link, never writes through it"
else
  echo "FAIL: the dump wrote through the symbolic link"
  fail=1
fi
rm -f "$tmp.xml" "$tmp.a" "$tmp.b" "$tmp.bad" "$tmp.probe" "$tmp.err" "$tmp.fifo" "$tmp.target" "$tmp.link"
exit $fail
