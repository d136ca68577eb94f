#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# An MPS control daemon of its own (CUDA's Multi-Process Service): processes that share a GPU then run their
# kernels on it at the same time instead of taking turns, a time slice each. Its pipe and log directories
# lie under DIR, so it serves only the processes given its environment, beside any other daemon of the
# machine. It is started without CUDA_VISIBLE_DEVICES: its server sees every GPU, and each client picks
# its own with CUDA_VISIBLE_DEVICES as without MPS.
#
# usage: sh contrib/mps.sh start DIR   start it; prints the environment its clients need, as shell lines
#        sh contrib/mps.sh stop DIR    stop it and its server (quit, then SIGKILL after 10 s)
#        sh contrib/mps.sh have        exit 0 where the daemon can run (nvidia-cuda-mps-control found)
# Exit status 3: no nvidia-cuda-mps-control here; 1: it did not start.
set -eu
cmd=${1:-}
dir=${2:-}
ctl=$(command -v nvidia-cuda-mps-control 2>/dev/null || true)
if [ -z "$ctl" ]; then
  # beside nvidia-smi where that is not on PATH either
  smi=$(command -v nvidia-smi 2>/dev/null || true)
  [ -n "$smi" ] && [ -x "${smi%/*}/nvidia-cuda-mps-control" ] && ctl=${smi%/*}/nvidia-cuda-mps-control
fi
pipe=$dir/pipe
# The daemon's and its server's processes: those started with this pipe directory.
mps_pids() {
  for p in /proc/[0-9]*; do
    case "$(cat "$p/comm" 2>/dev/null)" in nvidia-cuda-mps*) ;; *) continue ;; esac
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$pipe" && echo "${p#/proc/}"
  done
  return 0
}
case "$cmd" in
have) [ -n "$ctl" ] || exit 3 ;;
start)
  [ -n "$dir" ] || { echo "usage: mps.sh start DIR" >&2; exit 2; }
  [ -n "$ctl" ] || { echo "mps: nvidia-cuda-mps-control not found" >&2; exit 3; }
  mkdir -p "$pipe" "$dir/log"
  env -u CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY="$pipe" CUDA_MPS_LOG_DIRECTORY="$dir/log" "$ctl" -d
  # the control endpoint is a socket (a FIFO before CUDA 13)
  i=0
  while ! [ -S "$pipe/control" ] && ! [ -p "$pipe/control" ]; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then
      echo "mps: the daemon did not open $pipe/control within 10 s" >&2
      cat "$dir/log/control.log" >&2 2>/dev/null || true
      exit 1
    fi
    sleep 0.1
  done
  echo "CUDA_MPS_PIPE_DIRECTORY=$pipe; CUDA_MPS_LOG_DIRECTORY=$dir/log; export CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY"
  ;;
stop)
  [ -n "$dir" ] || { echo "usage: mps.sh stop DIR" >&2; exit 2; }
  if [ -n "$ctl" ] && { [ -S "$pipe/control" ] || [ -p "$pipe/control" ]; }; then
    echo quit | CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 "$ctl" >/dev/null 2>&1 || true
  fi
  i=0
  while [ -n "$(mps_pids)" ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  for p in $(mps_pids); do kill -9 "$p" 2>/dev/null || true; done
  ;;
*)
  echo "usage: mps.sh start|stop DIR | mps.sh have" >&2
  exit 2
  ;;
esac
