#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# coll/gpu on separate hosts with GPUs: the mini-cluster of contrib/minicluster.sh, 2 hosts of 1 rank (2 and
# 1 at the end), each host its own GPU (CUDA_VISIBLE_DEVICES; on a machine of one GPU both share it):
#  - device buffers at the defaults (the path agreed between the hosts) and with coll_gpu_uniform_buffers: on
#    the GPUs, every ring hop between the hosts over NET (the verbose line says so), no buffer staged (-G, with
#    coll_gpu_net_min_bytes 0: small calls would stage), every result right; memory kinds mixed across hosts
#    (small calls staged, as at the defaults), right; and after an allreduce on device memory has made the
#    communicator's engine (its own: the first over its processes), mixed memory kinds join the GPU path
#    through the engine's memory, right, no reduction staged, also where only the blocking reductions take the
#    GPU path below coll_gpu_net_min_bytes (coll_gpu_net_blocking_min_bytes);
#  - 20 duplicates of MPI_COMM_WORLD, an allreduce on each: the later ones share the first's engine of its
#    own (the verbose lines say so, and that its blocking calls agree from then on), right, in at most 1.25x
#    the device memory of one; 4 duplicates' nonblocking calls in each rank's own order with blocking calls on
#    MPI_COMM_WORLD between them (2 hosts of 1, and of 2 with 4 GPUs), right;
#  - a rank killed inside the GPU path: the survivor gets an error, found by the network proxy;
#  - the same two (every collective, a rank killed) with the proxy over its own sockets (coll_gpu_proxy_net);
#  - 2 + 1 ranks at the defaults: nonblocking and persistent calls on the GPUs across the hosts;
#  - with 4 GPUs, 2 hosts of 2 and 4 hosts of 1 at the defaults: every collective on the GPUs, right, and
#    memory kinds mixed across the hosts after the engine is made (at the defaults, where blocking bcasts and
#    reduces from 8 KiB join the GPU path and other calls below 32 KiB stage, and with every call joining it);
#  - 4 hosts of 4 ranks (16), a GPU each (modulo the GPUs present), under an MPS daemon per host, at the
#    defaults: every collective on the GPUs, right (skipped without MPS).
# Skipped without a GPU, and where namespaces cannot be made.
set -u
name=mcg
. "${srcdir:-.}/test/cluster/common.sh"
if ! ./test/gpu/gpu_probe >/dev/null 2>&1; then
  echo "SKIP: no CUDA device here"
  exit 77
fi
start_cluster 2 1

out=$(run 1 2 --mca coll_gpu_uniform_buffers 1 --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_verbose info \
  --mca coll_gpu_verbose_subsys INIT ./test/gpu/test_gpu_colls -m device -G)
check "uniform buffers: on the GPUs, across the hosts over NET" "$out" 2 "comm MPI_COMM_WORLD: 2 nodes[^;]*; 2 of each ring's 2 hops over NET"
check "uniform buffers: every result right, nothing staged" "$out" 1 '^test_colls: 2 ranks, device memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 1 2 --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT \
  ./test/gpu/test_gpu_colls -m device -G)
check "defaults: on the GPUs, across the hosts over NET" "$out" 2 "comm MPI_COMM_WORLD: 2 nodes[^;]*; 2 of each ring's 2 hops over NET"
check "defaults: every result right, nothing staged" "$out" 1 '^test_colls: 2 ranks, device memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 1 2 ./test/gpu/test_gpu_colls -m mixed)
check "defaults: memory kinds mixed across the hosts, right" "$out" 1 '^test_colls: 2 ranks, mixed memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 1 2 --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT \
  ./test/gpu/test_gpu_colls -m mixed -W -G)
check "an engine of its own: blocking calls without an agreement" "$out" 2 "comm MPI_COMM_WORLD: GPU resources of its own"
check "an engine of its own: memory kinds mixed across the hosts join the GPU path, right, nothing staged" "$out" 1 \
  '^test_colls: 2 ranks, mixed memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 1 2 --mca coll_gpu_net_min_bytes 1m --mca coll_gpu_net_blocking_min_bytes allreduce:0,reduce:0,reduce_scatter:0 \
  ./test/gpu/test_gpu_colls -m mixed -W -G)
check "an engine of its own, per collective: blocking reductions on the GPUs at every size, the rest staged, right" \
  "$out" 1 '^test_colls: 2 ranks, mixed memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 1 2 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT \
  ./test/perf/coll_gpu_allreduce_bench -d cuda -m 1048576 -M 1048576 -D 20)
check "20 duplicates: the later 19 share the first's engine of its own" "$out" 38 \
  "comm MPI COMMUNICATOR [0-9]+ DUP FROM 0: shares the GPU resources of comm MPI COMMUNICATOR [0-9]+ DUP FROM 0"
check "20 duplicates: from the second on, the first's blocking calls agree too" "$out" 2 \
  "GPU resources shared with comm [^:]*from now on: its blocking calls agree on their path too"
check "20 duplicates: every result right" "$out" 1 '; every result right$'
check "20 duplicates: at most 1.25x the device memory of one" "$out" 1 '^all 20 against one: (0\.9[5-9]|1\.([01][0-9]|2[0-5]))x$'
out=$(run 1 2 --mca coll_gpu_net_min_bytes 0 ./test/gpu/test_gpu_nonblocking -m device -i 10 -c 4)
check "duplicates: nonblocking calls in each rank's own order, blocking ones between them on another, right" "$out" 1 \
  '^test_nonblocking: 2 ranks, device memory, 10 rounds, [0-9]+ checks: 0 failed$'
out=$(run 1 2 --enable-recovery --mca coll_gpu_timeout 2 --mca coll_gpu_uniform_buffers 1 \
  ./test/gpu/test_gpu_late -m device -k -c 1000000)
check "a rank killed on the GPU path: the survivor's error" "$out" 1 '^survivor rank 0: error after [0-9.]+ s$'
out=$(run 1 2 --mca coll_gpu_proxy_net sockets --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_verbose info \
  --mca coll_gpu_verbose_subsys INIT,PROXY ./test/gpu/test_gpu_colls -m device -G)
check "sockets: on the GPUs, across the hosts over the proxy's sockets" "$out" 2 "proxy of rank [01]: [0-9]+ threads? over sockets"
check "sockets: every result right, nothing staged" "$out" 1 '^test_colls: 2 ranks, device memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 1 2 --enable-recovery --mca coll_gpu_timeout 2 --mca coll_gpu_uniform_buffers 1 --mca coll_gpu_proxy_net sockets \
  ./test/gpu/test_gpu_late -m device -k -c 1000000)
check "sockets: a rank killed on the GPU path: the survivor's error" "$out" 1 '^survivor rank 0: error after [0-9.]+ s$'
out=$(run 2,1 3 --mca coll_gpu_net_min_bytes 0 ./test/gpu/test_gpu_nonblocking -m device -G -i 10 -p 20)
check "2 + 1 ranks, defaults: nonblocking and persistent calls across the hosts" "$out" 1 \
  '^test_nonblocking: 3 ranks, device memory, 10 rounds, [0-9]+ checks: 0 failed$'
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 4 ]; then
  for shape in "2 2 2,2" "4 1 1,1,1,1"; do
    set -- $shape
    mc stop $name >/dev/null
    mc start $name "$1" "$2" >/dev/null
    out=$(run "$3" 4 --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT \
      ./test/gpu/test_gpu_colls -m device -G)
    check "$1 hosts x $2, defaults: on the GPUs, across the hosts over NET" "$out" 4 "comm MPI_COMM_WORLD: $1 nodes[^;]*; $1 of each ring's 4 hops over NET"
    check "$1 hosts x $2, defaults: every result right, nothing staged" "$out" 1 '^test_colls: 4 ranks, device memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
    out=$(run "$3" 4 ./test/gpu/test_gpu_colls -m mixed -W)
    check "$1 hosts x $2, defaults: memory kinds mixed across the hosts, right" "$out" 1 '^test_colls: 4 ranks, mixed memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
    out=$(run "$3" 4 --mca coll_gpu_net_min_bytes 0 ./test/gpu/test_gpu_colls -m mixed -W -G)
    check "$1 hosts x $2, an engine of its own: memory kinds mixed join the GPU path, right, nothing staged" "$out" 1 \
      '^test_colls: 4 ranks, mixed memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
    out=$(run "$3" 4 --mca coll_gpu_net_min_bytes 0 ./test/gpu/test_gpu_nonblocking -m device -i 10 -c 4)
    check "$1 hosts x $2, duplicates: nonblocking calls in each rank's order, blocking ones between, right" "$out" 1 \
      '^test_nonblocking: 4 ranks, device memory, 10 rounds, [0-9]+ checks: 0 failed$'
  done
fi
if sh "$top/contrib/mps.sh" have; then
  mc stop $name >/dev/null
  if mc start $name 4 1 mps; then
    out=$(run 4 16 --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT \
      ./test/gpu/test_gpu_colls -m device -G)
    check "4 hosts x 4 ranks under MPS, defaults: on the GPUs, across the hosts over NET" "$out" 16 \
      "comm MPI_COMM_WORLD: 4 nodes[^;]*; 4 of each ring's 16 hops over NET"
    check "4 hosts x 4 ranks under MPS, defaults: every result right, nothing staged" "$out" 1 \
      '^test_colls: 16 ranks, device memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
  else
    bad "4 hosts x 4 ranks under MPS: the mini-cluster did not start with its MPS daemons"
  fi
else
  echo "skip: 4 hosts x 4 ranks under MPS (no nvidia-cuda-mps-control here)"
fi
exit $fail
