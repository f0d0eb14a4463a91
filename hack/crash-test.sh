#!/usr/bin/env bash
# Proves cluster-down cleans up after a crash: with the cluster up and pods running, SIGKILL
# every recorded component, run cluster-down, check nothing is left, then start the cluster
# again and check that it works.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
export PATH="$MTO_BIN:$PATH"
"$HACK/cluster-up.sh"
KC=$MTO_STATE/kubeconfig
# A pod that keeps running, so there are live containers, mounts and a netns to clean up.
kubectl --kubeconfig "$KC" run crash-probe --image=localhost/busybox:1.35 --image-pull-policy=Never \
  --restart=Never --command -- sleep 3600 >/dev/null
kubectl --kubeconfig "$KC" wait --for=condition=Ready pod/crash-probe --timeout=120s >/dev/null
# Fake nodes too, when kwok is built (`make kwok-bin`): recorded with the components, it must
# be cleaned up like them.
[ ! -x "$KWOK_BIN" ] || "$HACK/kwok.sh" start 1
for f in "$MTO_STATE"/pids/*.pid; do kill -KILL "$(cat "$f")" 2>/dev/null || true; done
echo "killed every component with SIGKILL"
"$HACK/cluster-down.sh"
"$HACK/check-clean.sh"
"$HACK/cluster-up.sh"
kubectl --kubeconfig "$KC" get nodes
"$HACK/cluster-down.sh"
"$HACK/check-clean.sh"
