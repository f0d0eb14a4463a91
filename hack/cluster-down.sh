#!/usr/bin/env bash
# Stops the local cluster and removes everything it made: the processes it recorded (by PID,
# never by name), the containers its kubelet started (by their cgroups and by the containerd
# shims bound to our socket), mounts and network namespaces under $MTO_STATE, the pods' cgroups,
# kube-proxy's iptables chains, our FORWARD rules, the bridge, and the kernel settings the
# kubelet changed. Idempotent, and works after every component was killed with SIGKILL.
set -uo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
D=$MTO_STATE

# kill_pidfile NAME: TERM, then KILL after 10 s; only if the PID still runs the binary we started.
kill_pidfile() {
  local f=$D/pids/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$1"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}
# kwok (fake nodes, hack/kwok.sh) first: it talks to the API server. The registry
# (hack/registry.sh) is recorded like a component; its storage goes with $D.
for c in registry kwok kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
  kill_pidfile "$c"
done
# The inotify limit kwok raised while it ran (hack/kwok.sh), put back.
if [ -f "$D/kwok-inotify.orig" ]; then
  cat "$D/kwok-inotify.orig" >/proc/sys/fs/inotify/max_user_instances 2>/dev/null || true
  rm -f "$D/kwok-inotify.orig"
fi

# Pod processes: every process in the kubelet's kubepods cgroups is a container of ours.
kubepods_dirs() { find /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods -maxdepth 0 -type d 2>/dev/null; }
for _ in $(seq 20); do
  pids=$(for dir in $(kubepods_dirs); do find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u)
  [ -z "$pids" ] && break
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  sleep 0.2
done
# containerd shims outlive containerd; ours are the ones bound to our socket.
SOCK=$D/containerd/containerd.sock
for p in /proc/[0-9]*; do
  if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "-address $SOCK "; then
    kill -KILL "${p#/proc/}" 2>/dev/null
  fi
done
kill_pidfile containerd

# Mounts under the state dir (overlays, netns, volumes, shm), deepest first.
for _ in 1 2 3; do
  mounts=$(awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
  [ -z "$mounts" ] && break
  for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done

# Empty pod cgroups, depth first.
for dir in $(kubepods_dirs); do
  find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# Networking: the KUBE-* chains of kube-proxy and the kubelet, our FORWARD rules, the bridge
# (its veths went with the netns).
[ -x "$MTO_BIN/kube-proxy" ] && "$MTO_BIN/kube-proxy" --cleanup >/dev/null 2>&1
for ipt in iptables ip6tables; do
  for t in filter nat mangle; do
    # Rules in built-in chains that jump to a KUBE-* chain, then the chains themselves.
    "$ipt" -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' | grep -vE '^-A KUBE-' |
      while read -r rule; do eval "$ipt -t $t ${rule/-A/-D}" 2>/dev/null; done
    chains=$("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}')
    for c in $chains; do "$ipt" -t "$t" -F "$c" 2>/dev/null; done
    for c in $chains; do "$ipt" -t "$t" -X "$c" 2>/dev/null; done
  done
done
for rule in "-s $POD_CIDR ! -d $POD_CIDR" "-d $POD_CIDR ! -s $POD_CIDR"; do
  # shellcheck disable=SC2086
  while iptables -D FORWARD $rule -m comment --comment "$IPT_COMMENT" -j DROP 2>/dev/null; do :; done
done
ip link del "$BRIDGE" 2>/dev/null

# Kernel settings the kubelet changed.
if [ -f "$D/sysctl.orig" ]; then
  paste -d= <(printf 'vm.overcommit_memory\nkernel.panic\nkernel.panic_on_oops\n') "$D/sysctl.orig" |
    while read -r kv; do sysctl -qw "$kv" >/dev/null; done
fi

# Keep the last logs for a post-mortem; everything else goes.
if [ -d "$D/logs" ]; then
  rm -rf "$MTO_CACHE/last-cluster-logs"
  mkdir -p "$MTO_CACHE"
  mv "$D/logs" "$MTO_CACHE/last-cluster-logs"
fi
rm -rf "$D" 2>/dev/null || { sleep 1; rm -rf "$D"; }
[ -e "$D" ] && { echo "cluster-down: could not remove $D" >&2; exit 1; }
echo "cluster down"
