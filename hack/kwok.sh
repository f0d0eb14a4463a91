#!/usr/bin/env bash
# Fake nodes beside the real one, on the running local cluster, simulated by KWOK:
#   hack/kwok.sh start [N]     start kwok (idempotent) and make sure fake nodes kwok-node-1..N
#                              (default 2) exist and are Ready
#   hack/kwok.sh stop          delete every fake node and its pods, stop kwok (idempotent)
#   hack/kwok.sh status        say whether kwok runs and list the fake nodes
#   hack/kwok.sh add NODE [TYPE]  one more fake node, labelled type=TYPE (default kwok), Ready
#   hack/kwok.sh remove NODE   delete one fake node and its pods
#   hack/kwok.sh lose NODE     the node's kubelet is gone: kwok stops its heartbeats and Lease
#   hack/kwok.sh restore NODE  kwok takes the node back (Ready again)
# Fake nodes are labelled mcptasks.io/kwok-node=true and type=kwok (or TYPE), and tainted
# kwok.x-k8s.io/node=fake:NoSchedule: only a pod that tolerates the taint (and selects the type)
# lands there. A test that loses a node adds one of its own with a TYPE of its own, so no other
# test's pod lands there. kwok acts as the kubelet of nodes labelled
# mcptasks.io/kwok-kubelet=running; `lose` removes that label. The process is recorded
# like the cluster's components ($MTO_STATE/pids/kwok.pid, log in $MTO_STATE/logs/kwok.log), so
# cluster-down.sh stops it. See docs/local-cluster.md, "Fake nodes (KWOK)".
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
export PATH="$MTO_BIN:$PATH"
D=$MTO_STATE
K=$D/kwok
KC=$D/kubeconfig
KWOK_PORT=${KWOK_PORT:-10247}
MANAGED_LABEL=mcptasks.io/kwok-kubelet
FAKE_LABEL=mcptasks.io/kwok-node
# Fake pods get loopback IPs: nothing can route to them, and EndpointSlices refuse loopback, so
# no Service ever sends traffic to a fake pod.
POD_CIDR_FAKE=127.1.0.0/16
MAX_NODES=200

usage() {
  echo "usage: $0 start [N (1..$MAX_NODES, default 2)] | stop | status | add NODE [TYPE] |" \
    "remove NODE | lose NODE | restore NODE" >&2
  exit 2
}
kc() { kubectl --kubeconfig "$KC" "$@"; }

# The recorded PID, if it still runs our kwok binary (the check cluster-down.sh makes).
running_pid() {
  local f=$D/pids/kwok.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- kwok &&
    echo "$pid"
}

need_cluster() {
  [ -d "$D/pids" ] && [ -f "$KC" ] || { echo "no local cluster in $D: run make cluster-up" >&2; exit 1; }
  kc get --raw /readyz >/dev/null 2>&1 || { echo "the local cluster's API server is not ready" >&2; exit 1; }
}

# A serving certificate the API server accepts for a kubelet at 127.0.0.1 (signed by the
# cluster CA, which it checks kubelets against: --kubelet-certificate-authority).
ensure_cert() {
  [ -s "$K/serving.crt" ] && return 0
  local P=$D/pki
  openssl req -newkey rsa:2048 -nodes -keyout "$K/serving.key" -out "$K/serving.csr" \
    -subj "/CN=kwok" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1" >"$K/serving.ext"
  openssl x509 -req -in "$K/serving.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -CAserial "$K/ca.srl" -out "$K/serving.crt" -days 3650 -extfile "$K/serving.ext" 2>/dev/null
  rm -f "$K/serving.csr" "$K/serving.ext"
  chmod 600 "$K/serving.key"
}

# How many pod stages (Running, exit, stop, delete: each one PATCH or DELETE) kwok plays at
# once, for all its fake nodes together. On a real cluster each node's kubelet writes its own
# pods' statuses, so 50 nodes are 50 writers; with kwok's default of 4 and the API server
# answering in a few hundred milliseconds, the 5,000-task level of make scale had 2,900 pods
# "running" at once long past their run, and its tasks took 818 s; with 50: 1,509 and 686 s
# (docs/BENCHMARKS.md, "make scale").
POD_PLAY_PARALLELISM=${KWOK_POD_PLAY_PARALLELISM:-50}

# kwok's config: its options, the stages, and one ClusterLogs whose scripts are
# hack/kwok/logs/*.log (default.log for any container, <name>.log for a container named <name>).
render_config() {
  local out=$1 f name
  mkdir -p "$K/logs"
  cp "$HACK"/kwok/logs/*.log "$K/logs/"
  {
    printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\n'
    printf 'options:\n  podPlayStageParallelism: %s\n---\n' "$POD_PLAY_PARALLELISM"
    cat "$HACK/kwok/stages.yaml"
    printf -- '---\napiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterLogs\n'
    printf 'metadata:\n  name: mcp-tool-output\nspec:\n  logs:\n'
    for f in "$K"/logs/*.log; do
      name=$(basename "$f" .log)
      if [ "$name" = default ]; then
        printf '  - logsFile: %s\n' "$f"
      else
        printf '  - containers: [%s]\n    logsFile: %s\n' "$name" "$f"
      fi
    done
  } >"$out"
}

# Each followed log of a fake pod holds one inotify instance in kwok (the kubelet's log reader,
# which kwok runs, watches the log file), and every fake node is this one process: past the
# kernel's per-user limit (fs.inotify.max_user_instances, 128 by default, shared with the real
# kubelet and containerd) a follow request fails and the operator reads the log again and again,
# where a real node (at most 110 pods) would keep the stream open. So the limit is raised to
# INOTIFY_INSTANCES while kwok runs, and the old value put back when it stops.
INOTIFY_INSTANCES=${KWOK_INOTIFY_INSTANCES:-16384}
INOTIFY_LIMIT=/proc/sys/fs/inotify/max_user_instances

raise_inotify_limit() {
  local current
  current=$(cat "$INOTIFY_LIMIT" 2>/dev/null) || return 0
  [ "$current" -lt "$INOTIFY_INSTANCES" ] || return 0
  [ -f "$D/kwok-inotify.orig" ] || echo "$current" >"$D/kwok-inotify.orig"
  if echo "$INOTIFY_INSTANCES" >"$INOTIFY_LIMIT" 2>/dev/null; then
    echo "kwok: fs.inotify.max_user_instances $current -> $INOTIFY_INSTANCES while it runs"
  else
    echo "kwok: cannot raise fs.inotify.max_user_instances ($current): followed logs of more" \
      "than about $((current - 16)) fake pods at once will be cut short" >&2
  fi
}

restore_inotify_limit() {
  [ -f "$D/kwok-inotify.orig" ] || return 0
  cat "$D/kwok-inotify.orig" >"$INOTIFY_LIMIT" 2>/dev/null || true
  rm -f "$D/kwok-inotify.orig"
}

start_process() {
  mkdir -p "$D/logs" "$K/tmp"
  raise_inotify_limit
  echo "==== started by kwok.sh at $(date -u +%FT%TZ)" >>"$D/logs/kwok.log"
  # A session of its own: kwok outlives the (test) process that started it. TMPDIR holds the
  # fake containers' rendered logs.
  TMPDIR="$K/tmp" setsid nohup "$KWOK_BIN" --config="$K/kwok.yaml" --kubeconfig="$KC" \
    --manage-nodes-with-label-selector="$MANAGED_LABEL=running" \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
    --tls-cert-file="$K/serving.crt" --tls-private-key-file="$K/serving.key" \
    --cidr="$POD_CIDR_FAKE" --node-lease-duration-seconds=40 --v=WARN \
    >>"$D/logs/kwok.log" 2>&1 </dev/null 9>&- &
  local pid=$!
  echo "$pid" >"$D/pids/kwok.pid"
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || { echo "kwok exited at once; see $D/logs/kwok.log" >&2; exit 1; }
    curl -skf "https://127.0.0.1:$KWOK_PORT/healthz" >/dev/null 2>&1 && { echo "kwok started ($pid)"; return 0; }
    sleep 0.2
  done
  echo "kwok ($pid) not healthy after 30 s; see $D/logs/kwok.log" >&2
  exit 1
}

stop_process() {
  local pid
  pid=$(running_pid) || { rm -f "$D/pids/kwok.pid"; restore_inotify_limit; return 0; }
  kill -TERM "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$D/pids/kwok.pid"
  restore_inotify_limit
  echo "kwok stopped (was $pid)"
}

node_yaml() { # node_yaml NAME [TYPE]
  cat <<N
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels:
    $FAKE_LABEL: "true"
    type: ${2:-kwok}
    $MANAGED_LABEL: running
    kubernetes.io/hostname: $1
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
spec:
  taints:
  - key: kwok.x-k8s.io/node
    value: fake
    effect: NoSchedule
N
}

fake_node() { # fake_node NAME: fails unless NAME is one of our fake nodes
  [ "$(kc get node "$1" -o "jsonpath={.metadata.labels.${FAKE_LABEL//./\\.}}" 2>/dev/null)" = true ] ||
    { echo "$1 is not a fake node (no label $FAKE_LABEL=true)" >&2; exit 1; }
}

valid_name() { # valid_name WHAT VALUE: a DNS label, as node names and label values must be
  [[ ${#2} -le 63 && $2 =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] ||
    { echo "$1 must be a DNS label (a-z, 0-9, '-', at most 63 characters), got '$2'" >&2; exit 2; }
}

remove_node() { # remove_node NAME: its pods forced out (a lost node's never finish), then it
  kc delete pods -A --field-selector "spec.nodeName=$1" --grace-period=0 --force \
    --wait=false >/dev/null 2>&1 || true
  kc delete node "$1" --ignore-not-found --wait=false >/dev/null
}

ensure_process() {
  local pid
  "$HACK/build-kwok.sh" >/dev/null
  mkdir -p "$K"
  ensure_cert
  render_config "$K/kwok.yaml.new"
  if pid=$(running_pid); then
    if cmp -s "$K/kwok.yaml.new" "$K/kwok.yaml" && [ "$(readlink "/proc/$pid/exe")" = "$KWOK_BIN" ]; then
      rm -f "$K/kwok.yaml.new"
    else
      echo "kwok's config or binary changed: restarting it"
      stop_process
      mv "$K/kwok.yaml.new" "$K/kwok.yaml"
      start_process
    fi
  else
    mv "$K/kwok.yaml.new" "$K/kwok.yaml"
    start_process
  fi
}

do_start() {
  local n=${1:-2} i
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le $MAX_NODES ] ||
    { echo "node count must be 1..$MAX_NODES, got '$n'" >&2; exit 2; }
  ensure_process
  for i in $(seq 1 "$n"); do node_yaml "kwok-node-$i"; echo "---"; done | kc apply -f - >/dev/null
  for i in $(seq 1 "$n"); do
    kc wait --for=condition=Ready "node/kwok-node-$i" --timeout=60s >/dev/null
  done
  echo "fake nodes kwok-node-1..$n Ready"
}

do_add() {
  valid_name NODE "$1"
  valid_name TYPE "${2:-kwok}"
  ensure_process
  node_yaml "$1" "${2:-kwok}" | kc apply -f - >/dev/null
  kc wait --for=condition=Ready "node/$1" --timeout=60s >/dev/null
  echo "fake node $1 (type=${2:-kwok}) Ready"
}

do_stop() {
  local nodes n
  if [ -f "$KC" ] && kc get --raw /readyz >/dev/null 2>&1; then
    nodes=$(kc get nodes -l "$FAKE_LABEL=true" -o name 2>/dev/null | sed 's#^node/##')
    for n in $nodes; do remove_node "$n"; done
    [ -n "$nodes" ] && echo "deleted fake nodes: $(echo $nodes)"
  fi
  stop_process
  rm -rf "$K/tmp"
}

do_status() {
  local pid rc=0
  if pid=$(running_pid); then echo "kwok runs as $pid"; else echo "kwok is not running"; rc=1; fi
  [ -f "$KC" ] && kc get nodes -l "$FAKE_LABEL=true" -L type -L "$MANAGED_LABEL" 2>/dev/null || true
  return $rc
}

[ $# -ge 1 ] || usage
case $1 in
  start) [ $# -le 2 ] || usage; need_cluster; exec 9>"$D/kwok.lock"; flock 9; do_start "${2:-2}" ;;
  stop) [ $# -eq 1 ] || usage; [ -d "$D" ] || exit 0; exec 9>"$D/kwok.lock"; flock 9; do_stop ;;
  status) [ $# -eq 1 ] || usage; do_status ;;
  add) [ $# -ge 2 ] && [ $# -le 3 ] || usage; need_cluster; exec 9>"$D/kwok.lock"; flock 9
    do_add "$2" "${3:-}" ;;
  remove) [ $# -eq 2 ] || usage; need_cluster; fake_node "$2"; remove_node "$2"; echo "$2 removed" ;;
  lose) [ $# -eq 2 ] || usage; need_cluster; fake_node "$2"; kc label node "$2" "$MANAGED_LABEL-" >/dev/null
    echo "$2 lost: no heartbeats or Lease renewals from now on" ;;
  restore) [ $# -eq 2 ] || usage; need_cluster; fake_node "$2"
    kc label node "$2" "$MANAGED_LABEL=running" --overwrite >/dev/null
    kc wait --for=condition=Ready "node/$2" --timeout=60s >/dev/null
    echo "$2 restored and Ready" ;;
  *) usage ;;
esac
