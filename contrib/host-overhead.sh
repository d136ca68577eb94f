#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Host-buffer overhead of coll/gpu: 8-byte MPI_Allreduce on host buffers, 2 ranks, in a process that
# never loads CUDA. One run times two communicators in alternation, one created with coll/gpu and one
# without it (coll_gpu_enable switched off through MPI_T in between), so that drift and core placement
# hit both alike (separate runs on a small VM differ by 2x from one run to the next).
# usage: sh contrib/host-overhead.sh [BENCH] [ROUNDS] [ITERS]   (BENCH: a coll_gpu_allreduce_bench_host)
set -e
bench=${1:-build/test/perf/coll_gpu_allreduce_bench_host}
rounds=${2:-101}
iters=${3:-100000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
path=""
if [ -f build/.libs/mca_coll_gpu.so ]; then
  sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
  path="--mca mca_base_component_path $PWD/build/.libs:$sysdir"
fi
# shellcheck disable=SC2086
exec mpirun -np 2 --bind-to core $path --mca coll gpu,tuned,libnbc,basic,self,inter \
  "$bench" -m 8 -O "$rounds" -i "$iters"
