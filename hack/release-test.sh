#!/usr/bin/env bash
# `make release-test`: the release as users install it, on a fresh local cluster.
#  1. README's "On an existing cluster" block, run as it stands but for REGISTRY (the local
#     registry, hack/registry.sh): buildah builds the operator, front end and bridge images from
#     the Dockerfile (on base images hack/base-images.sh makes from Debian packages) and pushes
#     them, helm packages the chart and pushes it as an OCI artifact, installs it as `mto` in
#     `mcp-system` with every image pinned by digest, and a caller ServiceAccount is made;
#  2. tests/tests/release.rs: the pods run the pushed digests, `helm test mto -n mcp-system`
#     passes, and the caller's tools/call through the Service completes in a real Job;
#  3. that release uninstalled, releases of the same pushed chart and images in test
#     namespaces: a wrong digest keeps its pod from starting (release.rs), and the end-to-end
#     suite (tests/tests/e2e_stack.rs: the conformance suite, the TypeScript and Python
#     clients, the restock report, two replicas in the chart's default auth) passes on them.
# The registry serves TLS from the cluster's CA: buildah and helm trust it through SSL_CERT_FILE
# (hack/release-env.sh), as users' tools trust their registry; no insecure or plain-HTTP flag.
# README's release owns the CRDs, so the cluster must not have them from elsewhere: `make test`
# gives this a cluster of its own (`make cluster-down cluster-up release-test`). Prints the time
# each step took.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/release-env.sh"
export PATH="$MTO_BIN:$PATH" KUBECONFIG=$MTO_STATE/kubeconfig
cd "$REPO_ROOT"
t0=$(date +%s)
step() { echo "release-test: $1 ($(($(date +%s) - t0)) s)"; }
RELEASE=mto NS=mcp-system

# README's release must be the CRDs' owner: refuse a cluster where something else applied them.
for crd in mcptasks mcptools mcpservers; do
  owner=$(kubectl get crd "$crd.mcptasks.io" --ignore-not-found \
    -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}/{.metadata.annotations.meta\.helm\.sh/release-namespace}')
  if [ -n "$owner" ] && [ "$owner" != "$RELEASE/$NS" ]; then
    echo "release-test installs the chart as README says (release $RELEASE in $NS, which owns the CRDs)," >&2
    echo "but this cluster's CRD $crd.mcptasks.io belongs to '$owner' (make up, or the tests applied it):" >&2
    echo "run it on a fresh cluster: make cluster-down cluster-up release-test" >&2
    exit 1
  fi
done
if helm status "$RELEASE" -n "$NS" >/dev/null 2>&1; then
  echo "release $RELEASE already exists in $NS (make up?): run on a fresh cluster: make cluster-down cluster-up release-test" >&2
  exit 1
fi

"$HACK/registry.sh" start
trust_registry
"$HACK/base-images.sh" >/dev/null
# The chart's default test pod image, under its own name: the local stand-in is busybox + curl.
ctr --address "$MTO_STATE/containerd/containerd.sock" -n k8s.io images tag --force \
  localhost/toolbox:v1 docker.io/curlimages/curl:8.11.1 >/dev/null

# README's block: between the marker line and the end of the ```sh fence after it.
block=$(awk '/^<!-- make release-test runs the next block/ { m = 1; next }
             m && /^```sh$/ { f = 1; next }
             f && /^```$/ { exit }
             f' README.md)
# Its first line, without a pipe into `head` (under pipefail an early `head` exit can fail the
# writer with SIGPIPE, status 141).
first=${block%%$'\n'*}
case $first in REGISTRY=*) ;; *) echo "README's release block must start with REGISTRY=, not: $first" >&2; exit 1 ;; esac
# What the block writes into the working tree (digest files, the packaged chart).
cleanup() {
  rm -f mcp-task-operator.digest mcp-task-frontend.digest mcp-bridge.digest mcp-task-operator-*.tgz
  helm uninstall "$RELEASE" -n "$NS" --ignore-not-found --wait >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null 2>&1 || true
}
trap cleanup EXIT
{ echo "REGISTRY=$REGISTRY"; printf '%s\n' "$block" | tail -n +2; } >"$MTO_STATE/release-block.sh"
# `make test` builds the same images in the background first (hack/prebuild.sh): wait for it.
exec 8>"$BUILDAH_DIR/.images.lock"
flock 8
echo "release-test: README's block with REGISTRY=$REGISTRY"
bash -euo pipefail "$MTO_STATE/release-block.sh" >"$MTO_STATE/logs/release-block.log" 2>&1 || {
  tail -n 60 "$MTO_STATE/logs/release-block.log" >&2
  echo "README's release block failed (whole log: $MTO_STATE/logs/release-block.log)" >&2
  exit 1
}
step "README's block built, pushed and installed the release"

VERSION=$(sed -n 's/^version: \(.*\)/\1/p' charts/mcp-task-operator/Chart.yaml)
export MTO_RELEASE_REGISTRY=$REGISTRY MTO_RELEASE_CHART_VERSION=$VERSION
MTO_RELEASE_OPERATOR_DIGEST=$(cat mcp-task-operator.digest)
MTO_RELEASE_FRONTEND_DIGEST=$(cat mcp-task-frontend.digest)
MTO_RELEASE_BRIDGE_DIGEST=$(cat mcp-bridge.digest)
export MTO_RELEASE_OPERATOR_DIGEST MTO_RELEASE_FRONTEND_DIGEST MTO_RELEASE_BRIDGE_DIGEST
for name in mcp-task-operator mcp-task-frontend mcp-bridge; do
  echo "pushed $REGISTRY/$name@$(cat "$name.digest")"
done
cargo test -p mcp-task-operator-tests --locked --test release -- --ignored --exact \
  the_readme_install_runs_the_pushed_digests_passes_helm_test_and_completes_a_tool_call
step "README's release runs the pushed digests, passes helm test and completes a tool call"

# Its operator watches every namespace: gone before releases of the test namespaces start.
cleanup
cargo test -p mcp-task-operator-tests --locked --test release -- --ignored --exact \
  a_digest_the_registry_does_not_have_keeps_the_pod_from_starting
# The end-to-end suite on the release: its tools' images (imported into the node) and clients.
examples/build-images.sh restock-report conformance >/dev/null
MTO_CLIENTS=$("$HACK/clients.sh") cargo test -p mcp-task-operator-tests --locked --test e2e_stack
step "a wrong digest never starts; the end-to-end suite passed on the release"
