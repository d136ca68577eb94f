#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# coll/gpu across the hosts of a mini-cluster (contrib/minicluster.sh) on one GPU machine, beside NCCL on
# the same GPUs in the same run: HOSTS hosts of GPUS-PER-HOST GPUs, a rank per GPU, UCX and NCCL over tcp
# on the cluster's bridge, nothing bound (--bind-to none). For each collective five runs:
#   defaults:       coll/gpu at its defaults (the GPU path, NET hops between hosts: the first call agreed
#                   between the hosts, the blocking calls after it not, on the communicator's own engine)
#                   beside NCCL at its defaults;
#   defaults-nccl4: the same beside NCCL with NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4;
#   gpu:            coll_gpu_net_min_bytes=0 (the GPU path at every size, as the defaults take it), without
#                   NCCL;
#   uniform:        the same with coll_gpu_uniform_buffers=1 (no agreement even for the first call), without
#                   NCCL;
#   staged:         coll_gpu_force_staging=1 (every buffer through host memory), without NCCL;
#   sockets:        the defaults with coll_gpu_proxy_net=sockets (the proxy over its own sockets instead of
#                   UCX's tcp), without NCCL;
#   mca:NAME=VALUE[,NAME=VALUE...]: the defaults with those coll/gpu parameters, without NCCL (for example
#                   mca:coll_gpu_proxy_threads=8);
#   env:NAME=VALUE[,NAME=VALUE...]: the defaults with those environment variables in every rank, without
#                   NCCL;
#   this:           the defaults without NCCL;
#   tree:DIR:       the defaults with the component of another built tree DIR (an earlier commit's), without
#                   NCCL: "this tree:DIR this tree:DIR" alternates the two builds on one cluster, and
#                   contrib/cluster-ab.sh then compares them size by size.
# (The defaults stage below coll_gpu_net_min_bytes, and below coll_gpu_net_blocking_min_bytes' lower figures where
# a communicator has its own GPU resources.) Every run starts with one allreduce of 1 MiB on device memory (the
# benchmark's -E), as an application's first large call, so that the communicator has them from the first size
# on. RUNS picks some of them (default: the first five).
# MIN sets the first size (default 8 B).
# TRACE=1 records every run's step timestamps (COLL_GPU_STEP_TRACE, proxy/trace.h) and prints where its calls' time
# went (test/perf/coll_gpu_step_trace): give it one size (MIN = MAX_BYTES) and runs on the GPU path without NCCL
# (gpu, or mca:coll_gpu_net_min_bytes=0,...): a staged call leaves no events, and the few calls left (the first
# allreduce) would be all the summary has.
# CPUS=own gives each host CPUs of its own (contrib/minicluster.sh start ... cpus), as real hosts have:
# the ranks' threads, NCCL's and the proxies', then compete only within their host.
# usage: bash contrib/cluster-bench.sh BUILT-TREE [HOSTS [GPUS-PER-HOST [COLLS [MAX_BYTES]]]]
#   (default 2 hosts of 1 GPU, "allreduce allgather", 64 MiB); contrib/cluster-ratios.sh then sums its output
#   up against NCCL's best
set -u
tree=$(cd "$1" && pwd) hosts=${2:-2} gpus=${3:-1} colls=${4:-allreduce allgather} max=${5:-67108864}
top=$(cd "$(dirname "$0")/.." && pwd)
name=mcb
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
own=""
[ "${CPUS:-}" = own ] && own=cpus
sh "$top/contrib/minicluster.sh" start $name "$hosts" "$gpus" $own || exit 1
trap 'sh "$top/contrib/minicluster.sh" stop $name' EXIT
trap 'exit 1' INT TERM HUP
np=$((hosts * gpus))
libs=$tree/.libs
run() { # label coll bench-option mpirun-args...
  echo "== $2, $hosts hosts x $gpus GPU(s), $1"
  trace=""
  [ -n "${TRACE:-}" ] && trace=$(mktemp -d /tmp/coll_gpu_trace.XXXXXX)
  timeout 300 sh "$top/contrib/minicluster.sh" mpirun $name "$gpus" -np "$np" --bind-to none \
    --mca mca_base_component_path "$libs:$sysdir" --mca coll gpu,tuned,libnbc,basic,self,inter \
    --mca btl self,vader,tcp -x NCCL_NVLS_ENABLE -x NCCL_SOCKET_IFNAME=eth0 ${trace:+-x COLL_GPU_STEP_TRACE=$trace} \
    "${@:4}" "$tree/test/perf/coll_gpu_allreduce_bench" -C "$2" -d cuda -c -E -m "${MIN:-8}" -M "$max" $3 2>&1
  if [ -n "$trace" ]; then
    "$tree/test/perf/coll_gpu_step_trace" "$trace"
    rm -rf "$trace"
  fi
}
for coll in $colls; do
  for what in ${RUNS:-defaults defaults-nccl4 gpu uniform staged}; do
    case $what in
      defaults) run defaults "$coll" "" ;;
      defaults-nccl4) run defaults-nccl4 "$coll" "" -x NCCL_SOCKET_NTHREADS=4 -x NCCL_NSOCKS_PERTHREAD=4 ;;
      gpu) run gpu "$coll" -N --mca coll_gpu_net_min_bytes 0 ;;
      uniform) run uniform "$coll" -N --mca coll_gpu_net_min_bytes 0 --mca coll_gpu_uniform_buffers 1 ;;
      staged) run staged "$coll" -N --mca coll_gpu_force_staging 1 ;;
      sockets) run sockets "$coll" -N --mca coll_gpu_proxy_net sockets ;;
      this) run this "$coll" -N ;;
      tree:*)
        libs=$(cd "${what#tree:}" && pwd)/.libs
        run "$what" "$coll" -N
        libs=$tree/.libs
        ;;
      mca:* | env:*)
        set --
        for p in $(echo "${what#*:}" | tr , ' '); do
          case $what in
            mca:*) set -- "$@" --mca "${p%%=*}" "${p#*=}" ;;
            env:*) set -- "$@" -x "$p" ;;
          esac
        done
        run "$what" "$coll" -N "$@"
        ;;
      *) echo "cluster-bench: unknown run '$what'" >&2; exit 2 ;;
    esac
  done
done
