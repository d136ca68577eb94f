#!/bin/bash
# Across nodes on one GPU machine. First the network proxy alone (test/perf/coll_gpu_proxy_bench, no GPU:
# what it moves each way over tcp and over UCX's choice, with a thread per channel). Then each rank its own
# virtual node (coll_gpu_virtual_nodes 1), so that every ring hop goes through the network proxy, with NCCL
# beside it on the same buffers in the same run, forced onto the matching transport:
#   tcp:    the proxy over UCX's tcp (COLL_GPU_UCX_TLS=tcp) against NCCL's socket transport
#           (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1);
#   ucx:    the proxy over UCX's own choice (shared memory on one host) against NCCL through host memory
#           (NCCL_P2P_DISABLE=1);
#   staged: today's fallback for a communicator across nodes (the collective's algorithm set to staged),
#           the figure the NET path must beat.
# One rank per GPU. Prints each run under a header naming the transport and collective.
# usage: bash contrib/net-bench.sh BUILT-TREE [NP [COLLS [MAX_BYTES]]]
#   (default 2 ranks, "allreduce bcast allgather", 256 MiB); MPIRUN_ARGS: more mpirun options
set -u
tree=$1 np=${2:-2} colls=${3:-allreduce bcast allgather} max=${4:-268435456}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
run() {  # transport coll mpirun-args...
  echo "== $2, $np ranks, $1"
  timeout 300 mpirun -np "$np" --bind-to none ${MPIRUN_ARGS:-} --mca mca_base_component_path "$tree/.libs:$sysdir" \
    --mca coll gpu,tuned,libnbc,basic,self,inter --mca coll_gpu_virtual_nodes 1 "${@:3}" \
    "$tree/test/perf/coll_gpu_allreduce_bench" -C "$2" -d cuda -c -M "$max" 2>&1
}
echo "== the proxy alone: tcp, as two hosts"
COLL_GPU_UCX_TLS=tcp timeout 120 "$tree/test/perf/coll_gpu_proxy_bench" -H -T 8 -c 8 -s 524288 2>&1
echo "== the proxy alone: UCX's choice"
timeout 120 "$tree/test/perf/coll_gpu_proxy_bench" -T 8 -c 8 -s 524288 2>&1
for coll in $colls; do
  run tcp "$coll" -x COLL_GPU_UCX_TLS=tcp -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1
  run ucx "$coll" -x NCCL_P2P_DISABLE=1
  run staged "$coll" --mca "coll_gpu_${coll}_algorithm" staged -x NCCL_P2P_DISABLE=1
done
