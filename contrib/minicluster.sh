#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# A mini-cluster on this machine: hosts that are each a set of Linux namespaces (UTS with its own host
# name; network with its own address on a bridge of the cluster's own; IPC and mount with a private
# /dev/shm and /sys), so that Open MPI, coll/gpu and UCX see separate hosts without any testing switch.
# mpirun runs here and starts its daemons in the hosts through contrib/minicluster-agent.sh, its rsh agent.
# Traffic stays on the cluster's bridge: one /24 of 10.254.0.0/16 that no route of this machine uses, no
# default route in the hosts, no NAT. Links are made through rtnetlink (contrib/minicluster-net.c, compiled
# at start), so no iproute2 is needed. As root.
#
# usage: sh contrib/minicluster.sh start NAME HOSTS [GPUS-PER-HOST [mps] [cpus]]
#          hosts NAME0 .. NAME<HOSTS-1> (NAME: 1-8 letters or digits); with GPUS-PER-HOST, host i sees GPUs
#          i*G .. i*G+G-1 (modulo the GPUs present: hosts share GPUs where they outnumber them) through
#          CUDA_VISIBLE_DEVICES; with mps, each host runs an MPS daemon of its own (contrib/mps.sh), so
#          that the ranks of a host that share a GPU run on it at once; with cpus, each host's processes
#          run on a share of its own of the CPUs this one may use (consecutive, in equal parts; a CPU each,
#          taking turns, where hosts outnumber CPUs), as the processes of real hosts do not compete for CPUs
#        sh contrib/minicluster.sh mpirun NAME SLOTS-PER-HOST [MPIRUN-ARGS...]
#          mpirun over every host of the cluster with SLOTS-PER-HOST slots each ("1,2,3" gives each host its
#          own), the agent, and Open MPI's tcp confined to the bridge
#        sh contrib/minicluster.sh exec NAME HOST COMMAND...    a command inside a host
#        sh contrib/minicluster.sh kill NAME HOST               SIGKILL every process of a host
#        sh contrib/minicluster.sh ids NAME                     each host's network namespace, as
#                                                               /proc/PID/ns/net reads it ("net:[INODE]")
#        sh contrib/minicluster.sh addr NAME HOST               the host's address on the bridge
#        sh contrib/minicluster.sh stop NAME                    tear it all down (processes, links,
#                                                               namespaces, the state directory)
#        sh contrib/minicluster.sh check NAME                   exit 0 when nothing of NAME is left
# State: /run/coll-gpu-minicluster/NAME (COLL_GPU_MINICLUSTER_DIR overrides /run/coll-gpu-minicluster).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
base=${COLL_GPU_MINICLUSTER_DIR:-/run/coll-gpu-minicluster}
cmd=${1:-}
name=${2:-}
case "$name" in
"" | *[!a-z0-9]* | ?????????*)
  echo "usage: minicluster.sh start|mpirun|exec|kill|ids|addr|stop|check NAME ... (NAME: 1-8 lowercase letters or digits)" >&2
  exit 2
  ;;
esac
dir=$base/$name
net() { "$dir/minicluster-net" "$@"; }
hosts() { cat "$dir/hosts"; }

# The namespace inode of a host's network namespace file, "net:[INODE]" as /proc/PID/ns/net reads.
ns_id() { echo "net:[$(stat -L -c %i "$dir/$1.net")]"; }

# Every process in host $1's network namespace.
host_pids() {
  id=$(ns_id "$1")
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$id" ] && echo "${p#/proc/}"
  done
  return 0
}

# SIGKILL to every process of host $1.
kill_host() {
  for p in $(host_pids "$1"); do kill -9 "$p" 2>/dev/null || true; done
}

# A free /24 of 10.254.0.0/16: no route of this machine but a default one may overlap it.
free_subnet() {
  routes=$(awk 'NR > 1 && $8 != "00000000" { print $2 ":" $8 }' /proc/net/route)
  for x in $(seq 1 254); do
    # 10.254.x.0/24 as /proc/net/route writes addresses and masks (little-endian hex)
    want=$((0x$(printf '%02X%02X%02X%02X' 0 "$x" 254 10)))
    clash=0
    for r in $routes; do
      d=$((0x${r%%:*})) m=$((0x${r##*:}))
      # two prefixes overlap when they agree on the shorter one's bits
      [ $(((d ^ want) & m & 0x00FFFFFF)) -eq 0 ] && clash=1
    done
    [ $clash = 0 ] && { echo "10.254.$x"; return 0; }
  done
  echo "minicluster: no free /24 in 10.254.0.0/16" >&2
  return 1
}

stop() {
  [ -d "$dir" ] || return 0
  for h in $(hosts 2>/dev/null); do
    if [ -d "$dir/$h.mps" ] && [ -e "$dir/$h.net" ]; then
      COLL_GPU_MINICLUSTER=$dir sh "$top/contrib/minicluster-agent.sh" "$h" sh "$top/contrib/mps.sh" stop "$dir/$h.mps" || true
    fi
    if [ -e "$dir/$h.net" ]; then kill_host "$h"; fi
  done
  i=0
  for h in $(hosts 2>/dev/null); do
    [ -e "/sys/class/net/${name}v$i" ] && net del "${name}v$i" || true
    for k in net uts ipc mnt; do umount "$dir/$h.$k" 2>/dev/null || true; done
    i=$((i + 1))
  done
  [ -e "/sys/class/net/${name}br" ] && net del "${name}br" || true
  umount "$dir" 2>/dev/null || true
  rm -rf "$dir"
  rmdir "$base" 2>/dev/null || true # the last cluster gone
}

# The CPUs this process may use, one a line.
cpus_allowed() {
  sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' '\n' |
    while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done
}

start() {
  nhosts=$1 gpus=$2 mps="" cpus=""
  shift 2
  for w in "$@"; do
    case "$w" in
    "") ;;
    mps) mps=mps ;;
    cpus) cpus=cpus ;;
    *) echo "minicluster: '$w': mps, cpus or nothing after GPUS-PER-HOST" >&2; exit 2 ;;
    esac
  done
  [ "$(id -u)" = 0 ] || { echo "minicluster: needs root" >&2; exit 1; }
  [ -d "$dir" ] && { echo "minicluster: $name exists ($dir): stop it first" >&2; exit 1; }
  mkdir -p "$dir"
  trap 'stop' EXIT
  trap 'exit 1' INT TERM HUP
  mount --bind "$dir" "$dir"
  mount --make-private "$dir"
  ${CC:-cc} -O2 -Wall -o "$dir/minicluster-net" "$top/contrib/minicluster-net.c"
  subnet=$(free_subnet)
  echo "$subnet" >"$dir/subnet"
  : >"$dir/hosts"
  net bridge "${name}br" "$subnet.1/24"
  allowed=$(cpus_allowed)
  all=$(echo "$allowed" | wc -l)
  ngpu=0
  if [ "$gpus" -gt 0 ]; then ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
  i=0
  while [ $i -lt "$nhosts" ]; do
    h=$name$i
    echo "$h" >>"$dir/hosts"
    for k in net uts ipc mnt; do : >"$dir/$h.$k"; done
    unshare --net="$dir/$h.net" --uts="$dir/$h.uts" --ipc="$dir/$h.ipc" --mount="$dir/$h.mnt" \
      --propagation private sh -c "hostname $h && mount -t tmpfs -o mode=1777 tmpfs /dev/shm &&
        mount -t sysfs sysfs /sys"
    net veth "${name}v$i" "${name}br" "$dir/$h.net" "$subnet.$((10 + i))/24"
    : >"$dir/$h.env"
    if [ -n "$cpus" ]; then
      if [ "$all" -ge "$nhosts" ]; then
        echo "$allowed" | sed -n "$((i * all / nhosts + 1)),$(((i + 1) * all / nhosts))p" | paste -sd, >"$dir/$h.cpus"
      else
        echo "$allowed" | sed -n "$((i % all + 1))p" >"$dir/$h.cpus"
      fi
    fi
    if [ "$ngpu" -gt 0 ]; then
      list="" g=0
      while [ $g -lt "$gpus" ]; do
        list="$list${list:+,}$(((i * gpus + g) % ngpu))"
        g=$((g + 1))
      done
      echo "CUDA_VISIBLE_DEVICES=$list; export CUDA_VISIBLE_DEVICES" >"$dir/$h.env"
    fi
    if [ -n "$mps" ]; then
      mkdir "$dir/$h.mps"
      mps_env=$(COLL_GPU_MINICLUSTER=$dir sh "$top/contrib/minicluster-agent.sh" "$h" \
        sh "$top/contrib/mps.sh" start "$dir/$h.mps")
      echo "$mps_env" >>"$dir/$h.env"
    fi
    i=$((i + 1))
  done
  trap - EXIT INT TERM HUP
  echo "minicluster $name: $(hosts | tr '\n' ' ')on $subnet.0/24 (bridge ${name}br)${mps:+, an MPS daemon each}${cpus:+, CPUs of their own}"
}

case "$cmd" in
start)
  shift 2
  hosts_wanted=${1:?HOSTS}
  shift
  gpus_wanted=${1:-0}
  [ $# -gt 0 ] && shift
  start "$hosts_wanted" "$gpus_wanted" "$@"
  ;;
stop) stop ;;
mpirun)
  slots=${3:?SLOTS-PER-HOST}
  shift 3
  subnet=$(cat "$dir/subnet")
  list="" i=0
  for h in $(hosts); do
    s=$(echo "$slots" | cut -d, -f$((i + 1)))
    [ -n "$s" ] || s=$(echo "$slots" | cut -d, -f1)
    list="$list${list:+,}$h:$s"
    i=$((i + 1))
  done
  COLL_GPU_MINICLUSTER=$dir exec ${MPIRUN:-mpirun} --host "$list" --mca plm rsh \
    --mca plm_rsh_agent "$top/contrib/minicluster-agent.sh" \
    --mca oob_tcp_if_include "$subnet.0/24" --mca btl_tcp_if_include "$subnet.0/24" "$@"
  ;;
exec)
  h=${3:?HOST}
  shift 3
  COLL_GPU_MINICLUSTER=$dir exec sh "$top/contrib/minicluster-agent.sh" "$h" "$@"
  ;;
kill) kill_host "${3:?HOST}" ;;
ids) for h in $(hosts); do ns_id "$h"; done ;;
addr)
  i=${3#"$name"}
  grep -qx "$name$i" "$dir/hosts" || { echo "minicluster $name: no host ${3:-}" >&2; exit 2; }
  echo "$(cat "$dir/subnet").$((10 + i))"
  ;;
check)
  left=""
  [ -e "$dir" ] && left="$left $dir"
  for l in /sys/class/net/"$name"br /sys/class/net/"$name"v[0-9]*; do [ -e "$l" ] && left="$left ${l##*/}"; done
  grep -q " $dir" /proc/mounts && left="$left mounts"
  [ -z "$left" ] || { echo "minicluster $name left:$left" >&2; exit 1; }
  ;;
*)
  echo "usage: minicluster.sh start|mpirun|exec|kill|ids|stop|check NAME ..." >&2
  exit 2
  ;;
esac
