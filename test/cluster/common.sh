# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Sourced by the mini-cluster tests: helpers, and the cluster $name started with start_cluster (skips the
# test where namespaces cannot be made) and torn down at exit.
top=$(cd "${srcdir:-.}" && pwd)
build=$PWD
fail=0
mc() { sh "$top/contrib/minicluster.sh" "$@"; }
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
check() { # what, output, count, pattern: exactly count lines of output match
  got=$(printf '%s\n' "$2" | grep -Ec "$4")
  if [ "$got" = "$3" ]; then ok "$1"; else bad "$1 ($got lines match '$4', expected $3)"; printf '%s\n' "$2" | tail -n 30; fi
}
start_cluster() { # HOSTS [GPUS-PER-HOST]
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the mini-cluster needs root"
    exit 77
  fi
  mc stop $name 2>/dev/null # what an interrupted run left
  if ! out=$(mc start $name "$@" 2>&1); then
    mc stop $name >/dev/null 2>&1
    if printf '%s' "$out" | grep -qi "permission\|not permitted\|unshare failed"; then
      echo "SKIP: no namespaces here: $out"
      exit 77
    fi
    echo "FAIL: the mini-cluster did not start: $out"
    exit 1
  fi
  trap 'mc stop $name' EXIT
  trap 'exit 1' INT TERM HUP # the EXIT trap then tears the cluster down too
  echo "$out"
}
sysdir=$(${OMPI_INFO:-ompi_info} --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
run() { # SLOTS NP PROGRAM [ARGS...]: under the cluster's mpirun, with this build's component
  slots=$1 np=$2
  shift 2
  timeout 300 sh "$top/contrib/minicluster.sh" mpirun $name "$slots" -np "$np" --oversubscribe --bind-to none \
    --mca mca_base_component_path "$build/.libs:$sysdir" --mca coll gpu,tuned,libnbc,basic,self,inter \
    --mca btl self,vader,tcp "$@" 2>&1
}
