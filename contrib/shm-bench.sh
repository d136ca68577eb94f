#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# On a GPU machine, after `TESTS_SET=none BENCH_COLLS=none bash contrib/device-run.sh` (its build stays in
# /tmp/coll-gpu-build; BUILD names another such folder): each collective over the SHM node transport
# (coll_gpu_node_transport shm) beside the staged path (the scratch refused, what a node without CUDA peer access
# ran before SHM) or IPC, at each rank count; with ALGOS, each algorithm forced in turn (the figures of
# engine/tune.cc's kShm). Where the ranks outnumber the GPUs
# they share them under an MPS daemon of this script's own. -N: no NCCL beside (it takes a GPU per rank); the SHM
# transport against NCCL's needs a GPU per rank (docs/testing.md). One line per run: SIZE TIME(us) pairs; the
# benchmark's whole output goes to $OUT/shm-bench.txt.
# usage: bash contrib/shm-bench.sh [NP-LIST]   (default "2 4")
# environment: COLLS (default every collective the benchmark has but the ones with counts), TRANSPORTS (default
# "shm staged"; ipc too), ALGOS (e.g. "oneshot twoshot ring"; default none: the tuning's choice; a collective
# skips those it has not), BENCH_MAX (bytes, default 4194304)
set -u
out=${OUT:-/tmp/coll-gpu-out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
top=$PWD
build=${BUILD:-/tmp/coll-gpu-build}
cd "$build"/coll-gpu-* || { echo "no build in $build: run contrib/device-run.sh first"; exit 1; }
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
path="--mca mca_base_component_path $PWD/.libs:$sysdir"
ngpu=$(nvidia-smi -L | grep -c '^GPU')
nps=${1:-2 4}
mpsdir=""
for np in $nps; do [ "$np" -gt "$ngpu" ] && mpsdir=/tmp/coll-gpu-shm-bench-mps; done
if [ -n "$mpsdir" ]; then
  rm -rf "$mpsdir" && mkdir -p "$mpsdir"
  mps_env=$(sh "$top/contrib/mps.sh" start "$mpsdir") || { echo "the MPS daemon did not start"; exit 1; }
  eval "$mps_env"
  trap 'sh "$top/contrib/mps.sh" stop "$mpsdir"' EXIT
fi
run() { # np collective transport algorithm
  local a
  if [ "$3" = staged ]; then a="--mca coll_gpu_scratch_max_bytes 1048576"; else a="--mca coll_gpu_node_transport $3"; fi
  [ "$4" = auto ] || a="$a --mca coll_gpu_$2_algorithm $4"
  echo "== np $1, $2, $3, $4" >>"$out/shm-bench.txt"
  echo -n "np$1 $2 $3 $4: "
  timeout 120 mpirun -np "$1" --oversubscribe --bind-to none $path --mca coll gpu,tuned,libnbc,basic,self,inter \
    --mca btl self,vader $a ./test/perf/coll_gpu_allreduce_bench -C "$2" -d cuda -c -N -m 8 -M "${BENCH_MAX:-4194304}" \
    2>&1 | tee -a "$out/shm-bench.txt" | grep -vE '^#|^$' | awk '{printf "%s %s;", $1, $2}'
  echo
}
for np in $nps; do
  for c in ${COLLS:-allreduce bcast allgather alltoall reduce reduce_scatter}; do
    for t in ${TRANSPORTS:-shm staged}; do
      if [ -z "${ALGOS:-}" ] || [ "$t" != shm ]; then
        run "$np" "$c" "$t" auto
        continue
      fi
      for algo in $ALGOS; do
        [ "$algo" = twoshot ] && [ "$c" != allreduce ] && continue
        run "$np" "$c" "$t" "$algo"
      done
    done
  done
done
