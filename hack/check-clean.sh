#!/usr/bin/env bash
# Fails, saying what is left, unless the local cluster left nothing behind: no state dir, no
# process bound to it (kwok, the fake nodes' kubelet, and the registry included; also anything
# still listening on kwok's or the registry's port), no mounts or network namespaces under it, no pod cgroups, no bridge, no FORWARD
# rules of ours, no kube-proxy chains.
set -uo pipefail
. "$(dirname "$0")/versions.sh"
D=$MTO_STATE
left=()
[ -e "$D" ] && left+=("state dir $D")
# kwok serves its fake kubelet on loopback; a process still listening there is one left behind.
KWOK_PORT=${KWOK_PORT:-10247}
ss -Hltnp "sport = :$KWOK_PORT" 2>/dev/null | grep -q . && left+=("a listener on port $KWOK_PORT (kwok?)")
# The registry (hack/registry.sh) on its loopback port.
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
ss -Hltn "sport = :${REGISTRY_ADDR##*:}" 2>/dev/null | grep -qF "$REGISTRY_ADDR" &&
  left+=("a listener on $REGISTRY_ADDR (the registry?)")
for p in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
  case "$cmd" in
    *"$D/"*) left+=("process ${p#/proc/}: ${cmd:0:120}") ;;
  esac
done
awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/mounts | while read -r m; do echo "mount $m"; done >/tmp/mto-left.$$
while read -r l; do left+=("$l"); done </tmp/mto-left.$$
rm -f /tmp/mto-left.$$
for dir in /sys/fs/cgroup/*/kubepods; do [ -d "$dir" ] && left+=("cgroup $dir"); done
ip link show "$BRIDGE" >/dev/null 2>&1 && left+=("bridge $BRIDGE")
ip -o link show type veth 2>/dev/null | grep -q "master $BRIDGE" && left+=("veths on $BRIDGE")
iptables -S FORWARD 2>/dev/null | grep -q -- "--comment $IPT_COMMENT" && left+=("iptables FORWARD rules")
for ipt in iptables ip6tables; do
  for t in filter nat mangle; do
    "$ipt" -t "$t" -S 2>/dev/null | grep -q -- '-N KUBE-' && left+=("$ipt KUBE-* chains in $t")
  done
done
if [ ${#left[@]} -gt 0 ]; then
  printf 'left behind: %s\n' "${left[@]}" >&2
  exit 1
fi
echo "clean: nothing of the local cluster is left"
