#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# coll/gpu on separate hosts: the mini-cluster of contrib/minicluster.sh (each host its own namespaces,
# host name, address and /dev/shm), as root, without GPUs:
#  - 2 hosts x 2 ranks: every collective on host buffers, straight and with odd ranks staging (-F), right;
#    every rank counts the communicator's ranks on other hosts, from its own host; the path agreement between
#    the hosts (test_agree -N 2: each host's posts reach the other's ranks as messages);
#  - the engine's network set-up between the hosts (test_net -H): proxies connect over the cluster's
#    addresses, UCX's choice and tcp, and only the hops between hosts get connections; again with hosts
#    that have CPUs of their own (minicluster.sh start ... cpus), whose processes run on those only;
#  - 4 hosts of 1, 2, 3 and 1 ranks: the collectives staged (coll_gpu_force_staging) right;
#  - 4 hosts of 3 ranks (12: more than COLL_GPU_MAX_DIRECT): the path agreement between the hosts;
#  - a host killed mid-call (SIGKILL to all its processes): mpirun ends within 60 s and names it (or
#    reports a rank of another host that SIGPIPE killed, writing to it: Open MPI's race, told apart);
#  - teardown: no namespace, link, mount, process or state left, and nothing new in this machine's /dev/shm.
# Skipped where namespaces cannot be made (not root, or a container that forbids them).
set -u
name=mcx
. "${srcdir:-.}/test/cluster/common.sh"
shm_before=$(ls /dev/shm | sort)
start_cluster 2

out=$(run 2 4 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT ./test/mpi/test_colls)
check "2 hosts x 2: the collectives on host buffers" "$out" 1 '^test_colls: 4 ranks, host memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
check "2 hosts x 2: host ${name}0 sees 2 of MPI_COMM_WORLD's ranks on other hosts" "$out" 2 \
  "^\\[${name}0:[0-9]+\\] coll:gpu \\[[0-3]\\] INFO INIT comm MPI_COMM_WORLD: 2 of its 4 ranks on other hosts: the path"
check "2 hosts x 2: host ${name}1 too" "$out" 2 \
  "^\\[${name}1:[0-9]+\\] coll:gpu \\[[0-3]\\] INFO INIT comm MPI_COMM_WORLD: 2 of its 4 ranks on other hosts: the path"
out=$(run 2 4 ./test/mpi/test_colls -F)
check "2 hosts x 2: odd ranks staging, even ranks not" "$out" 1 '^test_colls: 4 ranks, host memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 2 4 ./test/mpi/test_agree -N 2)
check "2 hosts x 2: the path agreement between the hosts" "$out" 1 '^test_agree: 4 ranks, 0 failed$'
if [ -x ./test/mpi/test_net ]; then
  out=$(run 2 4 ./test/mpi/test_net -H)
  check "2 hosts x 2: the network proxies connect between the hosts" "$out" 1 '^test_net: 4 ranks, seed [0-9]+: passed \(0 failures\)$'
fi

# hosts with CPUs of their own (start ... cpus): each host's processes run on its share only, and the
# proxies (placed within the ranks' CPUs) still move their steps
mc stop $name >/dev/null
mc start $name 2 0 cpus >/dev/null
allowed() { mc exec $name "$1" sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; }
cpus0=$(allowed ${name}0) cpus1=$(allowed ${name}1)
mine=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
if [ -n "$cpus0" ] && [ -n "$cpus1" ] && [ "$cpus0" != "$mine" ] && [ "$cpus0" != "$cpus1" ]; then
  ok "hosts with CPUs of their own: ${name}0 on $cpus0, ${name}1 on $cpus1 (of $mine)"
elif [ "$(nproc)" -lt 2 ] && [ "$cpus0" = "$cpus1" ] && [ -n "$cpus0" ]; then
  ok "hosts with CPUs of their own: one CPU here, both on $cpus0"
else
  bad "hosts with CPUs of their own: ${name}0 on '$cpus0', ${name}1 on '$cpus1' (of $mine)"
fi
if [ -x ./test/mpi/test_net ]; then
  out=$(run 2 4 ./test/mpi/test_net -H)
  check "2 hosts x 2 on CPUs of their own: the network proxies move their steps" "$out" 1 \
    '^test_net: 4 ranks, seed [0-9]+: passed \(0 failures\)$'
fi

mc stop $name >/dev/null
mc start $name 4 >/dev/null
out=$(run 1,2,3,1 7 --mca coll_gpu_force_staging 1 ./test/mpi/test_colls)
check "4 hosts of 1, 2, 3 and 1 ranks: the collectives staged" "$out" 1 '^test_colls: 7 ranks, host memory, seed [0-9]+: [0-9]+ checks, 0 failed$'
out=$(run 3 12 --mca coll_gpu_verbose info --mca coll_gpu_verbose_subsys INIT ./test/mpi/test_agree -N 3)
check "4 hosts x 3 (more ranks than COLL_GPU_MAX_DIRECT): the path agreement between the hosts" "$out" 1 \
  '^test_agree: 12 ranks, 0 failed$'
check "4 hosts x 3: each rank sees 9 of MPI_COMM_WORLD's ranks on other hosts" "$out" 12 \
  "INFO INIT comm MPI_COMM_WORLD: 9 of its 12 ranks on other hosts: the path"

# a host dies mid-call: every process of host 1 is killed while the ranks run allreduces, once the job
# runs (its header printed after MPI_Init, then 3 s): killed while the daemons were still settling (5 s
# after mpirun on a slow machine), Open MPI's report said only that a daemon had not started
run 1,2,3,1 7 ./test/perf/coll_gpu_allreduce_bench_host -m 1048576 -M 1048576 -i 1000000 >"$build/minicluster-kill.log" &
job=$!
for i in $(seq 120); do
  grep -q '^# Size' "$build/minicluster-kill.log" 2>/dev/null && break
  sleep 0.5
done
sleep 3
start=$(date +%s)
mc kill $name ${name}1
wait $job
status=$?
took=$(($(date +%s) - start))
out=$(cat "$build/minicluster-kill.log")
[ "$status" != 0 ] && [ "$status" != 124 ] && [ "$took" -lt 60 ] && ok "a killed host ends the job in ${took} s (status $status)" ||
  bad "a killed host: status $status after $took s"
# by name (Open MPI's report of a daemon it lost, contrib/minicluster-agent.sh, or a rank's of a peer that
# disconnected), or by address (a peer failing to connect to it). Open MPI's tcp BTL sends with writev,
# and its ranks keep SIGPIPE's default action: a rank of another host that writes to the killed host's
# socket after its reset dies of SIGPIPE. Where Open MPI hears of that first, its report names that rank,
# exited on signal 13, the job's status is 141 (its exit code), and nothing names the killed host. That
# report is Open MPI's own, with or without this component; it is told apart, not counted as naming.
addr=$(mc addr $name ${name}1)
if printf '%s\n' "$out" | grep -q "${name}1\|$addr:"; then
  ok "a killed host is named"
elif [ "$status" = 141 ] && printf '%s\n' "$out" | grep -q "exited on signal 13 (Broken pipe)"; then
  ok "a killed host: Open MPI reported first a rank of another host that SIGPIPE killed, writing to it"
else
  bad "a killed host is not named ($addr)"
  echo "$out" | tail -n 30
fi

# teardown
ids=" $(mc ids $name | tr '\n' ' ')"
mc stop $name
trap - EXIT
if mc check $name; then ok "nothing of the cluster is left"; else bad "the cluster left something"; fi
left=""
for p in /proc/[0-9]*; do
  id=$(readlink "$p/ns/net" 2>/dev/null) || continue
  case "$ids " in *" $id "*) left="$left ${p#/proc/}" ;; esac
done
[ -z "$left" ] && ok "no process of the hosts is left" || bad "processes of the hosts left:$left"
shm_after=$(ls /dev/shm | sort)
[ "$shm_before" = "$shm_after" ] && ok "nothing new in /dev/shm" || bad "/dev/shm changed: $(echo "$shm_after" | tr '\n' ' ')"
exit $fail
