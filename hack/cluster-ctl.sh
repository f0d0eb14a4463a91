#!/usr/bin/env bash
# Stops, starts or restarts one component of the running local cluster, for fault tests:
#   hack/cluster-ctl.sh stop|start|restart|status COMPONENT
# COMPONENT is one of cluster-up.sh's: containerd etcd kube-apiserver kube-controller-manager
# kube-scheduler kubelet kube-proxy. `start` runs exactly the command line cluster-up.sh started
# the component with (recorded in $MTO_STATE/cmdlines; for a cluster started before that record
# existed, `stop` saves the running process's own command line first), in a session of its own,
# appends to the same log and records the new PID in $MTO_STATE/pids, so cluster-down.sh and
# check-clean.sh work as after cluster-up. `start` and `restart` wait until the component is
# healthy again.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
export PATH="$MTO_BIN:$PATH"
D=$MTO_STATE
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

usage() {
  echo "usage: $0 stop|start|restart|status COMPONENT (one of: ${COMPONENTS[*]})" >&2
  exit 2
}
[ $# -eq 2 ] || usage
action=$1 name=$2
printf '%s\n' "${COMPONENTS[@]}" | grep -qx -- "$name" || usage
[ -d "$D/pids" ] || { echo "no cluster state in $D: run make cluster-up" >&2; exit 1; }
mkdir -p "$D/cmdlines"
pidfile=$D/pids/$name.pid
record=$D/cmdlines/$name

# The recorded PID, if it still runs the component (the same check cluster-down.sh makes).
running_pid() {
  local pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name" &&
    echo "$pid"
}

healthy() {
  case $name in
    containerd) test -S "$D/containerd/containerd.sock" ;;
    etcd) curl -sf http://127.0.0.1:2379/health ;;
    kube-apiserver) kubectl --kubeconfig "$D/kubeconfig" get --raw /readyz ;;
    kubelet) curl -sf http://127.0.0.1:10248/healthz ;;
    kube-controller-manager) curl -skf https://127.0.0.1:10257/healthz ;;
    kube-scheduler) curl -skf https://127.0.0.1:10259/healthz ;;
    kube-proxy) curl -sf http://127.0.0.1:10256/healthz ;;
  esac
}

do_stop() {
  local pid
  pid=$(running_pid) || { echo "$name is not running"; rm -f "$pidfile"; return 0; }
  # Keep the command line for `start` (clusters started before cluster-up recorded it).
  [ -s "$record" ] || cat "/proc/$pid/cmdline" >"$record"
  kill -TERM "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$name ($pid) ignored SIGTERM for 10 s: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
  echo "$name stopped (was $pid)"
}

do_start() {
  local pid argv=()
  if pid=$(running_pid); then echo "$name already runs as $pid"; return 0; fi
  [ -s "$record" ] || { echo "no recorded command line for $name in $record" >&2; exit 1; }
  mapfile -d '' argv <"$record"
  echo "==== started again by cluster-ctl.sh at $(date -u +%FT%TZ)" >>"$D/logs/$name.log"
  # A session of its own: the component outlives the (test) process that restarted it.
  setsid nohup "${argv[@]}" >>"$D/logs/$name.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pidfile"
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || { echo "$name exited at once; see $D/logs/$name.log" >&2; exit 1; }
    healthy >/dev/null 2>&1 && { echo "$name started ($pid) and healthy"; return 0; }
    sleep 0.2
  done
  echo "$name ($pid) not healthy after 120 s; see $D/logs/$name.log" >&2
  exit 1
}

case $action in
  stop) do_stop ;;
  start) do_start ;;
  restart) do_stop; do_start ;;
  status)
    if pid=$(running_pid); then echo "$name runs as $pid"; else echo "$name is not running"; exit 1; fi ;;
  *) usage ;;
esac
