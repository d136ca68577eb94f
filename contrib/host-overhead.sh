#!/bin/sh
# Host-buffer overhead of coll/gpu: 8-byte MPI_Allreduce on host buffers, 2 ranks, in a process that
# never loads CUDA, with the component (coll gpu,tuned,...) and without it (coll tuned,...).
# Runs alternate ROUNDS times (default 9) so drift hits both; prints each median and the ratio.
# usage: sh contrib/host-overhead.sh [BENCH] [ROUNDS]   (BENCH: an allreduce_bench_host binary)
set -e
bench=${1:-build/test/perf/coll_gpu_allreduce_bench_host}
rounds=${2:-9}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
path=""
if [ -f build/.libs/mca_coll_gpu.so ]; then
  sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
  path="--mca mca_base_component_path $PWD/build/.libs:$sysdir"
fi
run() { # $1: coll list; prints the latency in us
  # shellcheck disable=SC2086
  mpirun -np 2 --bind-to core $path --mca coll "$1" "$bench" -m 8 -M 8 -i 200000 | awk '$1 == 8 { print $2 }'
}
with=""
without=""
i=0
while [ $i -lt "$rounds" ]; do
  with="$with $(run gpu,tuned,libnbc,basic,self,inter)"
  without="$without $(run tuned,libnbc,basic,self,inter)"
  i=$((i + 1))
done
median() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mw=$(median $with)
mo=$(median $without)
echo "with coll/gpu:    $with  -> median $mw us"
echo "without coll/gpu: $without  -> median $mo us"
awk -v a="$mw" -v b="$mo" 'BEGIN { printf "ratio with/without: %.3f\n", a / b }'
