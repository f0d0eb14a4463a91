#!/usr/bin/env bash
# Starts a real single-node Kubernetes on this machine: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd + runc, kubelet and kube-proxy.
# Control-plane ports listen on loopback; the API server and kubelet also on the project's own
# bridge ($BRIDGE, $NODE_IP), which is the pods' only network. Every PID is recorded under
# $MTO_STATE/pids (and its command line under cmdlines/, which `hack/cluster-ctl.sh` restarts it
# with); `hack/cluster-down.sh` stops exactly those. Idempotent: a healthy cluster is
# left as it is, a half-dead one is torn down and started again.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
export PATH="$MTO_BIN:$PATH"
D=$MTO_STATE
KUBECONFIG_OUT=$D/kubeconfig
t0=$(date +%s.%N)

alive() { local f=$D/pids/$1.pid; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
all_alive() { for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done; }

if [ -d "$D/pids" ]; then
  if all_alive && kubectl --kubeconfig "$KUBECONFIG_OUT" get --raw /readyz >/dev/null 2>&1; then
    # The registry is not a component the cluster needs: restarted alone when it died.
    "$HACK/registry.sh" start
    echo "cluster already up; KUBECONFIG=$KUBECONFIG_OUT"
    exit 0
  fi
  echo "a previous cluster is partly running or crashed: cleaning it up first"
  "$HACK/cluster-down.sh"
fi

# Near a full disk the kubelet evicts pods and deletes every image no container uses (evictionHard
# in kubelet-config.yaml); images imported here cannot be pulled again. Refuse while there is room
# to say why.
MIN_FREE_GB=${MTO_MIN_FREE_GB:-10}
mkdir -p "$D"
free_gb=$(df -BG --output=avail "$D" | tail -n 1 | tr -dc 0-9)
if [ "$free_gb" -lt "$MIN_FREE_GB" ]; then
  echo "cluster-up: only ${free_gb} GB free on the disk holding $D; at least $MIN_FREE_GB GB" \
    "(MTO_MIN_FREE_GB) are needed. hack/prune-cache.sh frees superseded build artifacts." >&2
  exit 1
fi

"$HACK/deps.sh"
"$HACK/build-k8s.sh"
BASE_IMAGES=$("$HACK/images.sh" base)

mkdir -p "$D"/{pids,cmdlines,logs,etcd,kubelet/root,pod-logs,containerd/cni-conf,containerd/ipam}
P=$D/pki
K=$D/kubeconfigs
start() { # start NAME CMD...: run in the background, log to logs/NAME.log, record the PID
  local name=$1; shift
  # The exact command line, NUL-separated: `hack/cluster-ctl.sh` restarts the component with it.
  printf '%s\0' "$@" >"$D/cmdlines/$name"
  nohup "$@" >"$D/logs/$name.log" 2>&1 &
  echo $! >"$D/pids/$name.pid"
}
wait_until() { # wait_until SECONDS WHAT CMD...
  local limit=$1 what=$2; shift 2
  for _ in $(seq $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "timed out after ${limit}s waiting for $what; logs in $D/logs" >&2
  return 1
}

# Kernel settings the kubelet and kube-proxy may change; cluster-down puts them back.
sysctl -n vm.overcommit_memory kernel.panic kernel.panic_on_oops >"$D/sysctl.orig"

# 1. The bridge and the rules that keep pod traffic on it: nothing is forwarded off the bridge.
ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
ip addr replace "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
for rule in "-s $POD_CIDR ! -d $POD_CIDR" "-d $POD_CIDR ! -s $POD_CIDR"; do
  # shellcheck disable=SC2086
  iptables -C FORWARD $rule -m comment --comment "$IPT_COMMENT" -j DROP 2>/dev/null ||
    iptables -I FORWARD $rule -m comment --comment "$IPT_COMMENT" -j DROP
done

# 2. PKI and kubeconfigs (certificates embedded, so the files stand alone).
"$HACK/pki.sh" "$P"
mkdir -p "$K"
kubeconfig() { # kubeconfig USER SERVER OUT
  cat >"$3" <<KC
apiVersion: v1
kind: Config
clusters:
- name: mcp-task-operator-local
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$P/$1.crt")
    client-key-data: $(base64 -w0 "$P/$1.key")
contexts:
- name: mcp-task-operator-local
  context: {cluster: mcp-task-operator-local, user: $1}
current-context: mcp-task-operator-local
KC
  chmod 600 "$3"
}
API=https://$NODE_IP:6443
for u in admin kcm scheduler kubelet kube-proxy; do kubeconfig "$u" "$API" "$K/$u.kubeconfig"; done
cp "$K/admin.kubeconfig" "$KUBECONFIG_OUT"

# 3. containerd: private root, state and socket; CNI bridge; netns kept under our state dir.
C=$D/containerd
containerd config default | sed \
  -e "s#^root = .*#root = \"$C/root\"#" \
  -e "s#^state = .*#state = \"$C/state\"#" \
  -e "s#address = \"/run/containerd/containerd.sock\"#address = \"$C/containerd.sock\"#" \
  -e "s#bin_dir = \"/opt/cni/bin\"#bin_dir = \"/usr/lib/cni\"#" \
  -e "s#conf_dir = \"/etc/cni/net.d\"#conf_dir = \"$C/cni-conf\"#" \
  -e "s#sandbox_image = .*#sandbox_image = \"registry.k8s.io/pause:3.10\"#" \
  -e "s#path = \"/opt/containerd\"#path = \"$C/opt\"#" \
  -e "s#netns_mounts_under_state_dir = false#netns_mounts_under_state_dir = true#" \
  -e "s#restrict_oom_score_adj = false#restrict_oom_score_adj = true#" \
  -e "/\[plugins.\"io.containerd.grpc.v1.cri\".registry\]/,/config_path/ s#config_path = \"\"#config_path = \"$C/certs.d\"#" \
  >"$C/config.toml"
grep -q "config_path = \"$C/certs.d\"" "$C/config.toml" ||
  { echo "containerd's default config has no CRI registry config_path to set" >&2; exit 1; }
# The local registry (hack/registry.sh) serves TLS from the cluster's CA; containerd trusts that
# CA for it alone (https://github.com/containerd/containerd/blob/main/docs/hosts.md).
mkdir -p "$C/certs.d/$REGISTRY"
cat >"$C/certs.d/$REGISTRY/hosts.toml" <<TOML
server = "https://$REGISTRY"
[host."https://$REGISTRY"]
  capabilities = ["pull", "resolve"]
  ca = "$P/ca.crt"
TOML
# NB: restrict_oom_score_adj because root lacks CAP_SYS_RESOURCE here (negative oom_score_adj fails).
cat >"$C/cni-conf/10-mto.conflist" <<CNI
{
  "cniVersion": "0.4.0",
  "name": "mcp-task-operator",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$C/ipam",
              "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
              "routes": [{"dst": "$SERVICE_CIDR", "gw": "$NODE_IP"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI
start containerd containerd --config "$C/config.toml"
wait_until 20 containerd test -S "$C/containerd.sock"
for img in "$BASE_IMAGES"/*.tar; do
  ctr --address "$C/containerd.sock" -n k8s.io images import "$img" >/dev/null
done

# 4. etcd
start etcd "$MTO_BIN/etcd" --name mto --data-dir "$D/etcd" --unsafe-no-fsync \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster mto=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381
wait_until 30 etcd curl -sf http://127.0.0.1:2379/health

# 5. kube-apiserver, on the bridge address: the `kubernetes` Service's endpoint must be an
# address pods reach, and loopback is refused there.
start kube-apiserver "$MTO_BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
  --bind-address="$NODE_IP" --secure-port=6443 --advertise-address="$NODE_IP" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --api-audiences=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction --allow-privileged=true \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$P/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --profiling=false
wait_until 90 kube-apiserver kubectl --kubeconfig "$KUBECONFIG_OUT" get --raw /readyz

# 6. controller manager and scheduler. Their client rate limits are raised from Kubernetes'
# defaults (20 and 50 requests per second), as clusters that run thousands of Jobs raise them:
# at 20 the Job controller alone needs about 17 min to create and record 5,000 Jobs' pods
# (`make scale`, docs/BENCHMARKS.md), for the bare-Job baseline as for the tasks.
start kube-controller-manager "$MTO_BIN/kube-controller-manager" --kubeconfig="$K/kcm.kubeconfig" \
  --authentication-kubeconfig="$K/kcm.kubeconfig" --authorization-kubeconfig="$K/kcm.kubeconfig" \
  --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --kube-api-qps=200 --kube-api-burst=400 \
  --controllers='*' --profiling=false
start kube-scheduler "$MTO_BIN/kube-scheduler" --kubeconfig="$K/scheduler.kubeconfig" \
  --authentication-kubeconfig="$K/scheduler.kubeconfig" \
  --authorization-kubeconfig="$K/scheduler.kubeconfig" \
  --kube-api-qps=200 --kube-api-burst=400 \
  --bind-address=127.0.0.1 --leader-elect=false --profiling=false

# 7. kubelet
echo "nameserver 127.0.0.1" >"$D/kubelet/resolv.conf"
sed -e "s#@STATE@#$D#g" -e "s#@NODE_IP@#$NODE_IP#g" "$HACK/kubelet-config.yaml" >"$D/kubelet/config.yaml"
start kubelet "$MTO_BIN/kubelet" --config="$D/kubelet/config.yaml" --kubeconfig="$K/kubelet.kubeconfig" \
  --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --root-dir="$D/kubelet/root" --v=1

# 8. kube-proxy: gives pods the `kubernetes` Service (10.96.0.1:443 -> $NODE_IP:6443).
cat >"$D/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $K/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
mode: iptables
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0}
KP
# NB: maxPerCore 0 leaves the conntrack table size alone; localhostNodePorts false avoids
# route_localnet. Both keep kube-proxy from changing this machine's kernel settings.
start kube-proxy "$MTO_BIN/kube-proxy" --config="$D/kube-proxy.yaml"

node_ready() {
  kubectl --kubeconfig "$KUBECONFIG_OUT" get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}
wait_until 120 "node $NODE_NAME Ready" node_ready
# 9. The image and chart registry on loopback (hack/registry.sh), TLS from the cluster's CA;
# containerd pulls localhost:PORT trusting that CA (step 3).
"$HACK/registry.sh" start
wait_until 60 "default ServiceAccount" kubectl --kubeconfig "$KUBECONFIG_OUT" get serviceaccount default
elapsed=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
echo "cluster up in ${elapsed}s: node $NODE_NAME Ready; KUBECONFIG=$KUBECONFIG_OUT"
