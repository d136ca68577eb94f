#!/bin/sh
# Runs one MPI test case under mpirun with the component from this build tree. Cases of programs
# under test/gpu/ need a CUDA device and report SKIP without one.
# A case file holds one line: NP PROGRAM [ARGS...] [-- MCA-NAME VALUE ...]
# usage: run_mpi.sh CASE-FILE   (the test harness passes it; builddir is the current directory)
set -e
case_file=$1
read -r np prog rest <"$case_file"
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
case "$prog" in
test/gpu/*)
  # GPU cases are skipped (exit 77), never passed, on a machine without a usable GPU
  if ! ./test/gpu/gpu_probe; then
    echo "SKIP: no CUDA device here"
    exit 77
  fi
  ;;
esac
sysdir=$(${OMPI_INFO:-ompi_info} --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086
exec timeout 600 ${MPIRUN:-mpirun} -np "$np" --oversubscribe --bind-to none \
  --mca mca_base_component_path "$PWD/.libs:$sysdir" \
  --mca coll gpu,tuned,libnbc,basic,self,inter --mca btl self,vader $mca_flags \
  "./$prog" $args
