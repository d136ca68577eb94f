#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# The rsh agent of the mini-cluster (contrib/minicluster.sh): Open MPI runs "AGENT HOST COMMAND..." as it
# would run ssh; this runs COMMAND with a shell inside HOST's namespaces (network, UTS, IPC, mount), with
# the host's environment (its CUDA_VISIBLE_DEVICES) and, where the cluster gave the host CPUs of its own,
# on those (taskset). COLL_GPU_MINICLUSTER names the cluster's state directory (minicluster.sh mpirun and exec
# set it).
host=$1
shift
dir=${COLL_GPU_MINICLUSTER:?COLL_GPU_MINICLUSTER is not set: run mpirun through contrib/minicluster.sh}
[ -e "$dir/$host.net" ] || { echo "minicluster-agent: no host $host in $dir" >&2; exit 255; }
pin=""
[ -s "$dir/$host.cpus" ] && pin="taskset -c $(cat "$dir/$host.cpus")"
$pin nsenter --net="$dir/$host.net" --uts="$dir/$host.uts" --ipc="$dir/$host.ipc" --mount="$dir/$host.mnt" \
  -- sh -c ". '$dir/$host.env'; $*"
rc=$?
# Killed with its host (minicluster.sh kill): ssh to a host that died would notice only later, so Open
# MPI's report comes from its own links to the daemon, naming the host; an agent that ended at once made
# it report a daemon that failed to start instead, naming nothing.
[ $rc -gt 128 ] && sleep 2
exit $rc
