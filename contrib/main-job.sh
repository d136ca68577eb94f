#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# The main job, after installation: MPI_Allreduce on CUDA device buffers through coll/gpu, one rank
# per GPU, validated, beside NCCL where it is installed. Without a GPU it says so and runs the host-side
# checks: the component is listed by ompi_info, and an allreduce on host buffers (through coll/gpu's
# staging path and straight) is validated. BINDIR: where the benchmarks are (default /usr/bin).
set -e
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bindir=${BINDIR:-/usr/bin}
ompi_info | grep "MCA coll: gpu" || { echo "coll/gpu is not installed where Open MPI looks"; exit 1; }
ompi_info --param coll gpu --level 3 | grep coll_gpu_version
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
stack="--mca coll gpu,tuned,libnbc,basic,self,inter"
if [ "$ngpu" -gt 0 ]; then
  np=$ngpu
  [ "$np" -lt 2 ] && np=2
  echo "== $ngpu GPU(s): MPI_Allreduce on device buffers through coll/gpu, $np ranks"
  NCCL_NVLS_ENABLE=0 mpirun -np "$np" --oversubscribe --bind-to none $stack \
    "$bindir/coll_gpu_allreduce_bench" -d cuda -c -M $((64 << 20))
else
  echo "== No GPU found: running the host-side checks"
  echo "-- allreduce on host buffers through coll/gpu's staging path (coll_gpu_force_staging), validated"
  mpirun -np 2 --oversubscribe $stack --mca coll_gpu_force_staging 1 "$bindir/coll_gpu_allreduce_bench_host" -c -M $((1 << 20)) -i 50
  echo "-- allreduce on host buffers, straight to the previous component, validated"
  mpirun -np 2 --oversubscribe $stack "$bindir/coll_gpu_allreduce_bench_host" -c -M $((1 << 20)) -i 200
fi
