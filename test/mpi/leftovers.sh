#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Nothing outlives a job: runs of a dup/allreduce/free loop in which the last rank kills itself (SIGKILL)
# at a random point, with mpirun alive, with and without coll_gpu_force_staging (processes that post to
# the path agreement, and processes that skip it); then no coll/gpu file may be left in /dev/shm, nor in
# the job's session directory. Run from the build tree (make check).
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sysdir=$(${OMPI_INFO:-ompi_info} --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
tmp=$(mktemp -d)
fail=0
runs=0
for staging in 1 0 1 0 1 0; do
  ls /dev/shm >"$tmp/before"
  ${MPIRUN:-mpirun} -np 3 --oversubscribe --bind-to none --mca mca_base_component_path "$PWD/.libs:$sysdir" \
    --mca btl self,vader --mca coll_gpu_force_staging $staging \
    ./test/mpi/test_nowait -k 40 >"$tmp/log" 2>&1 &
  pid=$!
  wait $pid
  rc=$?
  runs=$((runs + 1))
  if [ $rc = 0 ] || ! grep -q "exited on signal 9" "$tmp/log"; then
    echo "FAIL: run $runs: the job did not end with the killed rank (exit $rc)"
    cat "$tmp/log"
    fail=1
  fi
  ls /dev/shm >"$tmp/after"
  new=$(comm -13 "$tmp/before" "$tmp/after" | grep coll_gpu || true)
  if [ -n "$new" ]; then
    echo "FAIL: run $runs left in /dev/shm: $new"
    fail=1
  fi
  left=$(find /tmp/ompi.* -path "*/pid.$pid/*" -name 'coll_gpu*' 2>/dev/null || true)
  if [ -n "$left" ]; then
    echo "FAIL: run $runs left the agreement table: $left"
    fail=1
  fi
done
rm -rf "$tmp"
echo "leftovers: $runs jobs with a rank killed, $([ $fail = 0 ] && echo nothing left behind || echo FAILED)"
exit $fail
