#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Runs one MPI test case under mpirun with the component from this build tree. Cases of programs
# under test/gpu/ need a CUDA device and report SKIP without one.
# A case file holds one line: NP PROGRAM [ARGS...] [-- MCA-NAME VALUE ...]
# and then, optionally, lines that change how the run is judged (lines starting with # are comments):
#   flag MPIRUN-OPTION     passed to mpirun (e.g. --enable-recovery: a killed rank does not end the job)
#   status any             mpirun's exit status does not count (a case that kills a rank on purpose)
#   expect N REGEX         exactly N lines of the output match REGEX (grep -E); N+: at least N
#   select priority        no coll list: coll/gpu is selected by its priority, as a user gets it
#   select stock           without coll/gpu (--mca coll ^gpu): the case must pass on stock Open MPI too
#   param NAME = VALUE     a line of the MCA parameter file the run reads (instead of the user's and the
#                          system's: mca_base_param_files)
#   mps                    the ranks run under an MPS daemon of the case's own (contrib/mps.sh), so that
#                          ranks sharing a GPU run at once; skipped where there is none
# usage: run_mpi.sh CASE-FILE   (the test harness passes it; builddir is the current directory)
set -e
case_file=$1
body=$(grep -v '^#' "$case_file")
read -r np prog rest <<EOF
$(printf '%s\n' "$body" | head -n 1)
EOF
args=""
mca=""
seen_sep=0
for w in $rest; do
  if [ "$w" = "--" ]; then seen_sep=1; continue; fi
  if [ $seen_sep = 1 ]; then mca="$mca $w"; else args="$args $w"; fi
done
mca_flags=""
set -- $mca
while [ $# -ge 2 ]; do mca_flags="$mca_flags --mca $1 $2"; shift 2; done
flags=$(sed -n 's/^flag //p' "$case_file")
coll="--mca coll gpu,tuned,libnbc,basic,self,inter"
case $(sed -n 's/^select //p' "$case_file") in
priority) coll="" ;;
stock) coll="--mca coll ^gpu" ;;
esac
case "$case_file $prog" in
*test/gpu/*)
  # GPU cases (a case under test/gpu/, or a program there) are skipped (exit 77), never passed, on a machine
  # without a usable GPU
  if ! ./test/gpu/gpu_probe; then
    echo "SKIP: no CUDA device here"
    exit 77
  fi
  ;;
esac
top=$(cd "$(dirname "$0")/../.." && pwd)
pfile="" mpsdir=""
cleanup() {
  [ -z "$mpsdir" ] || { sh "$top/contrib/mps.sh" stop "$mpsdir"; rm -rf "$mpsdir"; }
  [ -z "$pfile" ] || rm -f "$pfile"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
if grep -q '^mps$' "$case_file"; then
  if ! sh "$top/contrib/mps.sh" have; then
    echo "SKIP: no MPS control daemon (nvidia-cuda-mps-control) here"
    exit 77
  fi
  mpsdir=$(mktemp -d /tmp/coll-gpu-mps.XXXXXX)
  mps_env=$(sh "$top/contrib/mps.sh" start "$mpsdir") || { echo "FAIL: the MPS daemon did not start"; exit 1; }
  eval "$mps_env"
  echo "under MPS: $CUDA_MPS_PIPE_DIRECTORY"
fi
params=""
if grep -q '^param ' "$case_file"; then
  pfile=$(mktemp)
  sed -n 's/^param //p' "$case_file" >"$pfile"
  params="--mca mca_base_param_files $pfile"
fi
sysdir=$(${OMPI_INFO:-ompi_info} --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() {
  # shellcheck disable=SC2086
  timeout 600 ${MPIRUN:-mpirun} -np "$np" --oversubscribe --bind-to none $flags \
    --mca mca_base_component_path "$PWD/.libs:$sysdir" \
    $coll --mca btl self,vader $params $mca_flags \
    "./$prog" $args
}
if [ "$(printf '%s\n' "$body" | sed -n '2,$p' | grep -c .)" = 0 ]; then
  run
  exit $?
fi
log=$(mktemp)
# Runs the case and judges its output: 0 when it passed.
judge() {
  rc=0
  run >"$log" 2>&1 || rc=$?
  cat "$log"
  if grep -q '^status any$' "$case_file" && [ "$rc" != 124 ]; then rc=0; fi
  while read -r word n regex; do
    [ "$word" = expect ] || continue
    got=$(grep -Ec "$regex" "$log" || true)
    if { [ "${n%+}" = "$n" ] && [ "$got" != "$n" ]; } || { [ "${n%+}" != "$n" ] && [ "$got" -lt "${n%+}" ]; }; then
      echo "FAIL: $got line(s) match '$regex', expected $n"
      rc=1
    fi
  done <"$case_file"
  return $rc
}
rc=0
judge || rc=$?
# Open MPI 4.1 sometimes loses a help message on its way to mpirun (its own error, open-mpi/ompi#8356:
# "ORTE_ERROR_LOG: Data unpack would read past end of buffer" or "Out of resource" "in file
# .../orte/util/show_help.c"): up to seven more runs then (on a loaded 2-core machine four in a row lost it,
# and with both cores busy about every second run does)
tries=1
while [ $rc != 0 ] && [ $tries -lt 8 ] && grep -q 'ORTE_ERROR_LOG: .* in file .*show_help\.c' "$log"; do
  echo "== Open MPI lost a help message on its way to mpirun (not coll/gpu's doing): once more"
  tries=$((tries + 1))
  rc=0
  judge || rc=$?
done
rm -f "$log"
exit $rc
