#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Across nodes on one GPU machine. First the network proxy alone (test/perf/coll_gpu_proxy_bench, no GPU:
# what it moves each way over tcp and over UCX's choice, with a thread per channel). Then each rank its own
# virtual node (coll_gpu_virtual_nodes 1), so that every ring hop goes through the network proxy, with NCCL
# beside it on the same buffers in the same run, forced onto the matching transport:
#   tcp:    the proxy over UCX's tcp (COLL_GPU_UCX_TLS=tcp) against NCCL's socket transport, NCCL given
#           a host of its own per rank (NCCL_HOSTID), which leaves it nothing but its network transport;
#   ucx:    the proxy over UCX's own choice (shared memory on one host) against NCCL through host memory
#           (NCCL_P2P_DISABLE=1);
#   staged: today's fallback for a communicator across nodes (the collective's algorithm set to staged) at
#           64 MiB, the figure the NET path must beat.
# With more ranks than GPUs the ranks share them (for a machine with fewer GPUs than ranks; the timings are
# of a shared GPU): NCCL refuses two ranks on one GPU of one host, so the ucx run goes without it (the
# staged run always does). MPS=1 runs the ranks under an MPS server of their own (started here, stopped at the end), so that
# their kernels run side by side rather than in turns.
# Prints each run under a header naming the transport and collective.
# usage: bash contrib/net-bench.sh BUILT-TREE [NP [COLLS [MAX_BYTES]]]
#   (default 2 ranks, "allreduce bcast allgather", 128 MiB); MPIRUN_ARGS: more mpirun options
set -u
tree=$1 np=${2:-2} colls=${3:-allreduce bcast allgather} max=${4:-134217728}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
shared=""
if [ "$np" -gt "$ngpu" ]; then
  shared=-N
  echo "# $np ranks on $ngpu GPU(s): ranks share a GPU; NCCL runs only with a host per rank (tcp)"
fi
if [ "${MPS:-0}" = 1 ]; then
  mps=$(mktemp -d /tmp/coll-gpu-mps.XXXXXX)
  mps_env=$(sh "$(dirname "$0")/mps.sh" start "$mps") || exit 1
  eval "$mps_env"
  echo "# under an MPS server"
  trap 'sh "$(dirname "$0")/mps.sh" stop "$mps"; rm -rf "$mps"' EXIT
fi
run() {  # transport coll min max bench-option mpirun-args...
  echo "== $2, $np ranks, $1"
  timeout 300 mpirun -np "$np" --bind-to none ${MPIRUN_ARGS:-} --mca mca_base_component_path "$tree/.libs:$sysdir" \
    --mca coll gpu,tuned,libnbc,basic,self,inter --mca coll_gpu_virtual_nodes 1 "${@:6}" \
    sh -c '[ -n "${HOST_PER_RANK:-}" ] && export NCCL_HOSTID=$HOST_PER_RANK$OMPI_COMM_WORLD_RANK; exec "$0" "$@"' \
    "$tree/test/perf/coll_gpu_allreduce_bench" -C "$2" -d cuda -c -m "$3" -M "$4" $5 2>&1
}
echo "== the proxy alone: tcp, as two hosts"
COLL_GPU_UCX_TLS=tcp timeout 120 "$tree/test/perf/coll_gpu_proxy_bench" -H -T 8 -c 8 -s 524288 2>&1
echo "== the proxy alone: UCX's choice"
timeout 120 "$tree/test/perf/coll_gpu_proxy_bench" -T 8 -c 8 -s 524288 2>&1
for coll in $colls; do
  run tcp "$coll" 8 "$max" "" -x COLL_GPU_UCX_TLS=tcp -x HOST_PER_RANK=vnode
  run ucx "$coll" 8 "$max" "$shared" -x NCCL_P2P_DISABLE=1
  run staged "$coll" 67108864 67108864 -N --mca "coll_gpu_${coll}_algorithm" staged
done
