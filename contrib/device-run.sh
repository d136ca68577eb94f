#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# On a GPU machine: build coll/gpu from the `make dist` tarball against the Open MPI installed there,
# run the whole test suite (the GPU cases run there), the benchmark of each collective on device buffers
# through the component beside NCCL, and the allreduce benchmark without it (stock Open MPI). Logs go to $OUT
# (default /tmp/coll-gpu-out).
# Expects under .carry/: coll-gpu-*.tar.gz, the libgtest-dev .deb (machines without GoogleTest) and the
# libucx-dev .deb (machines with UCX's runtime but not its headers; without it the build has no network proxy);
# optionally a baseline: .carry/base/coll-gpu-*.tar.gz (an earlier commit's `make dist`), built after the
# first while the tests run (its libraries are then saved under $OUT/base_bin), or .carry/base_bin, such
# saved libraries, which skip that build. contrib/ab-bench.sh then runs this build's allreduce benchmark
# through both components in ABBA order, BASE_ROUNDS rounds (default 16), 8 B to BENCH_MAX_MB, for a
# before/after per size.
# usage: bash contrib/device-run.sh [NP-LIST]   (ranks for the benchmark, default "2 <GPUs>")
# environment: TESTS_SET=gpu runs only the unit, topology and GPU cases, TESTS_SET=none no test (the
# build stays in /tmp/coll-gpu-build for a next command while the machine is held); BENCH_MAX_MB (default 512) bounds the
# benchmark's largest message; BENCH_COLLS (default "allreduce bcast allgather alltoall reduce reduce_scatter")
# the collectives it runs, none for no benchmark; BENCH_ARGS more benchmark options (one GPU: "-N", since NCCL
# takes a GPU per rank); BENCH_MPIRUN more mpirun options for the benchmark (the SHM transport beside NCCL's:
# "--mca coll_gpu_node_transport shm -x NCCL_P2P_DISABLE=1");
# TESTS_FIRST, test cases run (and reported) before the benchmark. The benchmark runs NCCL beside coll/gpu
# on the same buffers; contrib/ratio-bands.sh then sums up ours/NCCL per collective and size band.
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
base="" base_built=""
if [ -f "$top"/.carry/base_bin/mca_coll_gpu.so ]; then
  base_built="$top/.carry/base_bin"
elif ls "$top"/.carry/base/coll-gpu-*.tar.gz >/dev/null 2>&1; then
  mkdir -p "$work/base" && tar xzf "$top"/.carry/base/coll-gpu-*.tar.gz -C "$work/base"
  base=$(ls -d "$work"/base/coll-gpu-*)
fi
echo "== configure and build"
start=$(date +%s)
# the network proxy needs UCX's headers: carry libucx-dev's .deb where the machine has only UCX's runtime
ucx=--without-ucx
pkg-config --exists ucx 2>/dev/null && ucx=--with-ucx
if ! ./configure $ucx >"$out/configure.log" 2>&1; then tail -30 "$out/configure.log"; exit 1; fi
configured=$(date +%s)
if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then tail -40 "$out/build.log"; exit 1; fi
echo "configured in $((configured - start)) s, built (make -j$(nproc)) in $(($(date +%s) - configured)) s"
# the test programs now, alone on the machine: built inside `make check` they would share it with the
# baseline's build and eat the time of the tests that come first
built=$(date +%s)
if ! make -j"$(nproc)" check TESTS= >"$out/build-tests.log" 2>&1; then tail -40 "$out/build-tests.log"; exit 1; fi
echo "test programs built in $(($(date +%s) - built)) s"
if [ -n "$base" ]; then
  echo "== baseline: building in the background"
  # configured like this build, and built whole: a build of the two libraries alone missed the CUDA headers
  (cd "$base" && ./configure $ucx >"$out/base-configure.log" 2>&1 &&
    make -j"$(nproc)" >"$out/base-build.log" 2>&1) &
  base_pid=$!
fi
if [ -n "${TESTS_FIRST:-}" ]; then
  echo "== tests first: $TESTS_FIRST"
  make -j1 check TESTS="$TESTS_FIRST" >"$out/check-first.log" 2>&1
  grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' "$out/check-first.log"
  grep -A30 '^FAIL:' test-suite.log | head -40
fi
sysdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
path="--mca mca_base_component_path $PWD/.libs:$sysdir"
if [ -n "$base" ]; then
  if ! wait $base_pid; then tail -20 "$out/base-build.log"; exit 1; fi
  mkdir -p "$out/base_bin" && cp -L "$base"/.libs/mca_coll_gpu.so "$base"/.libs/coll_gpu_sentinel.so "$out/base_bin/"
  base_built=$base
fi
if [ -n "$base_built" ]; then
  echo "== allreduce, 2 ranks: the baseline's component and this one in ABBA order, ${BASE_ROUNDS:-16} rounds"
  bash "$top/contrib/ab-bench.sh" "$base_built" "$PWD" "${BASE_ROUNDS:-16}" 2 -- -d cuda -N -m 8 \
    -M $((${BENCH_MAX_MB:-512} << 20)) 2>"$out/before_after_runs.txt" | tee "$out/before_after.txt"
fi
[ "${BENCH_COLLS:-}" = none ] && set -- ""
for np in $(echo ${1-2 $ngpu} | tr " " "\n" | sort -nu); do
  for coll in ${BENCH_COLLS:-allreduce bcast allgather alltoall reduce reduce_scatter}; do
    echo "== $coll on device buffers through coll/gpu, $np ranks"
    timeout 150 mpirun -np "$np" --bind-to none $path --mca coll gpu,tuned,libnbc,basic,self,inter ${BENCH_MPIRUN:-} \
      test/perf/coll_gpu_allreduce_bench -C "$coll" -d cuda -c -M $((${BENCH_MAX_MB:-512} << 20)) ${BENCH_ARGS:-} 2>&1
  done | tee "$out/bench_np$np.txt"
  echo "== ours/NCCL per collective, $np ranks: lowest-highest ratio per size band"
  bash "$top/contrib/ratio-bands.sh" "$out/bench_np$np.txt" | tee "$out/bands_np$np.txt"
done
[ "${TESTS_SET:-all}" = none ] && exit 0
echo "== tests (${TESTS_SET:-all})"
if [ "${TESTS_SET:-all}" = gpu ]; then
  make -j1 check TESTS="test/unit/unit_tests test/unit/topo_tool.sh test/cluster/minicluster_gpu.sh $(ls test/mpi/rings_*.mpi test/gpu/*.gpu | tr '\n' ' ')" \
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
