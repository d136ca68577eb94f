#!/bin/bash
# On a GPU machine: build coll/gpu from the `make dist` tarball against the Open MPI installed there,
# run the whole test suite (the GPU cases run there), the allreduce benchmark on device buffers
# through the component, and the same benchmark without it (stock Open MPI). Logs go to $OUT
# (default /tmp/coll-gpu-out).
# Expects under .carry/: coll-gpu-*.tar.gz and the libgtest-dev .deb (machines without GoogleTest).
# usage: bash contrib/device-run.sh [NP-LIST]   (ranks for the benchmark, default "2 <GPUs>")
# environment: TESTS_SET=gpu runs only the unit, topology and GPU cases; BENCH_MAX_MB (default 512) bounds the
# benchmark's largest message. The benchmark runs NCCL beside coll/gpu on the same buffers.
set -u
out=${OUT:-/tmp/coll-gpu-out}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
for deb in .carry/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" /; done
top=$PWD
work=/tmp/coll-gpu-build
rm -rf "$work" && mkdir -p "$work" && tar xzf "$top"/.carry/coll-gpu-*.tar.gz -C "$work" && cd "$work"/coll-gpu-*
nvidia-smi -L | tee "$out/gpus.txt"
ngpu=$(nvidia-smi -L | grep -c '^GPU')
echo "== configure and build"
if ! ./configure --without-ucx >"$out/configure.log" 2>&1; then tail -30 "$out/configure.log"; exit 1; fi
if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
path="--mca mca_base_component_path $PWD/.libs:$sysdir"
for np in $(echo ${1:-2 $ngpu} | tr " " "\n" | sort -nu); do
  echo "== allreduce on device buffers through coll/gpu, $np ranks"
  timeout 150 mpirun -np "$np" --bind-to none $path --mca coll gpu,tuned,libnbc,basic,self,inter \
    test/perf/coll_gpu_allreduce_bench -d cuda -c -M $((${BENCH_MAX_MB:-512} << 20)) 2>&1 | tee "$out/bench_np$np.txt"
done
echo "== tests (${TESTS_SET:-all})"
if [ "${TESTS_SET:-all}" = gpu ]; then
  make -j1 check TESTS="test/unit/unit_tests test/unit/topo_tool.sh $(ls test/mpi/rings_*.mpi test/gpu/*.gpu | tr '\n' ' ')" \
    >"$out/check.log" 2>&1
else
  make -j1 check >"$out/check.log" 2>&1
fi
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' "$out/check.log"
grep -h 'checks,\|returned after' test/gpu/*.log test/mpi/*.log 2>/dev/null
cp test-suite.log "$out/" 2>/dev/null
grep -A30 '^FAIL:' test-suite.log | head -60
echo "== the same on stock Open MPI (no coll/gpu), 2 ranks, 8 bytes"
timeout 60 mpirun -np 2 --bind-to none --mca coll tuned,libnbc,basic,self,inter \
  test/perf/coll_gpu_allreduce_bench -d cuda -m 8 -M 8 -i 10 >"$out/stock.txt" 2>&1
echo "stock Open MPI exit status: $? ($(grep -m1 -o 'Segmentation fault\|signal [0-9]*' "$out/stock.txt" || echo 'no signal'))"
