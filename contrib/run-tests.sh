#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Runs every test (unit tests, MPI tests under mpirun, GPU tests where a GPU is) from a fresh build
# in build/, and ends with one line: N passed, N failed, N skipped.
# Run from the repository root after the dependencies are installed (contrib/install-deps.sh).
set -e
cd "$(dirname "$0")/.."
[ -x configure ] || ./autogen.sh
mkdir -p build
cd build
[ -f Makefile ] || ../configure
make -j"$(nproc)"
rc=0
make -j1 check || rc=$?
log=test-suite.log
pass=$(sed -n 's/^# PASS: *//p' $log)
fail=$(sed -n 's/^# FAIL: *//p' $log)
xpass=$(sed -n 's/^# XPASS: *//p' $log)
error=$(sed -n 's/^# ERROR: *//p' $log)
skip=$(sed -n 's/^# SKIP: *//p' $log)
[ "$rc" -ne 0 ] && [ -n "$fail" ] && cat $log
echo "$pass passed, $((fail + xpass + error)) failed, $skip skipped"
exit $rc
