#!/usr/bin/env bash
# `make up`: the whole product on the local cluster, then a demo. Idempotent.
# Starts the cluster (and its registry), builds our images and the example tool images, pushes
# them to the registry (hack/registry-push.sh) and pins every one by digest: installs the
# CRDs and the Helm chart (namespace-scoped, static bearer token whose user `demo` is bound to
# the chart's caller role, front end on a NodePort of the bridge address), registers the
# example tools and one real MCP server (mcp-server-time, with a warm pool), waits for them to
# be Ready, and runs the restock report through the front end with the Python MCP SDK, printing
# each status it sees, then one warm call of time_convert_time.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
export PATH="$MTO_BIN:$PATH" KUBECONFIG=$MTO_STATE/kubeconfig
NS=${MTO_NAMESPACE:-mcp-system}
RELEASE=mcp-task-operator
NODE_PORT=30080
URL=http://$NODE_IP:$NODE_PORT/mcp
cd "$REPO_ROOT"

"$HACK/cluster-up.sh"
"$HACK/build-images.sh"
examples/build-images.sh
CLIENTS=$("$HACK/clients.sh")
# Our images and the example tools', pushed to the cluster's registry and pinned by digest: the
# pods pull them as on a real cluster (a new build is a new digest, so a new rollout).
"$HACK/registry.sh" start
pinned() { "$HACK/registry-push.sh" "$1" | cut -d' ' -f2; }
OPERATOR_IMAGE=$(pinned localhost/mcp-task-operator:dev)
FRONTEND_IMAGE=$(pinned localhost/mcp-task-frontend:dev)
BRIDGE_IMAGE=$(pinned localhost/mcp-bridge:dev)

kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null

# One demo caller with a random bearer token, kept with the cluster's state.
TOKEN_FILE=$MTO_STATE/demo-token
[ -s "$TOKEN_FILE" ] || head -c 20 /dev/urandom | base32 | tr -d '=' | tr 'A-Z' 'a-z' >"$TOKEN_FILE"
TOKEN=$(cat "$TOKEN_FILE")
kubectl -n "$NS" create secret generic mcp-demo-tokens --from-literal=tokens.csv="$TOKEN,demo" \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null

# The release owns the CRDs (crds.install, the default) and upgrades them on every run;
# --take-ownership adopts CRDs that something else applied first (an integration test run, say).
helm upgrade --install "$RELEASE" charts/mcp-task-operator --namespace "$NS" --wait --timeout 5m \
  --take-ownership \
  --set rbac.scope=namespace \
  --set operator.image.repository="${OPERATOR_IMAGE%@*}" --set operator.image.digest="${OPERATOR_IMAGE#*@}" \
  --set frontend.image.repository="${FRONTEND_IMAGE%@*}" --set frontend.image.digest="${FRONTEND_IMAGE#*@}" \
  --set operator.bridgeImage.repository="${BRIDGE_IMAGE%@*}" \
  --set operator.bridgeImage.digest="${BRIDGE_IMAGE#*@}" \
  --set frontend.auth.mode=static --set frontend.auth.static.existingSecret=mcp-demo-tokens \
  --set 'frontend.authorization.callers[0].kind=User' \
  --set 'frontend.authorization.callers[0].name=demo' \
  --set frontend.service.type=NodePort --set frontend.service.nodePort=$NODE_PORT \
  --set "frontend.config.allowedHosts={$NODE_IP}"
kubectl -n "$NS" rollout status deployment --timeout=5m >/dev/null

# The example tools with their images pinned to the pushed digests.
"$HACK/registry-push.sh" --rewrite examples/restock-report/mcptool.yaml \
  examples/conformance/mcptools.yaml examples/wrap-cli/mcptool.yaml examples/mcp-servers/time.yaml |
  kubectl apply -n "$NS" -f - >/dev/null
# A real MCP server (mcp-server-time from PyPI): the operator lists its tools in a Job first.
# Its quick tools get a warm pool (a started, initialized server waits for each call) and
# answer as plain results.
kubectl patch mcpserver time -n "$NS" --type merge \
  -p '{"spec":{"warmPool":{"minReady":1,"maxReady":2},"immediateResultMs":10000}}' >/dev/null
kubectl wait -n "$NS" --for=condition=Ready mcpserver --all --timeout=180s
kubectl wait -n "$NS" --for=condition=Ready mcptool --all --timeout=120s
# Until a warm pod waits (its server initialized: the pod is Ready), three minutes at most.
ready='{.items[*].status.conditions[?(@.type=="Ready")].status}'
for _ in $(seq 180); do
  kubectl get pod -n "$NS" -l mcptasks.io/warm-pool -o jsonpath="$ready" | grep -q True && break
  sleep 1
done

echo
echo "== demo: restock_report through $URL =="
"$CLIENTS/py/bin/python" examples/clients/restock_report.py "$URL" --token "$TOKEN" --delay-ms 100
echo
echo "== demo: time_convert_time on a warm pod (mcp-server-time started before the call) =="
start=$(date +%s%N)
"$CLIENTS/py/bin/python" examples/clients/restock_report.py "$URL" --token "$TOKEN" \
  --tool time_convert_time \
  --arguments '{"source_timezone":"Europe/Paris","time":"14:30","target_timezone":"Asia/Tokyo"}'
echo "(answered in $(( ($(date +%s%N) - start) / 1000000 )) ms, Python client start-up included)"

cat <<MSG

mcp-task-operator is running in namespace $NS.
  MCP endpoint:  $URL   (Authorization: Bearer \$(cat $TOKEN_FILE))
  export KUBECONFIG=$KUBECONFIG PATH=$MTO_BIN:\$PATH
  kubectl get mcp -n $NS                       # servers, tools and tasks
  kubectl describe mcptask -n $NS <task-id>    # the task's story in Events
  kubectl logs -n $NS job/\$(kubectl get mcptask -n $NS <task-id> -o jsonpath='{.status.jobName}')
                                               # the tool's output (a warm pod's Job has its own name)
  make cluster-down                            # stop everything
MSG
