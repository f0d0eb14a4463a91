#!/usr/bin/env bash
# `make release-test`: the release as users install it, on the running local cluster.
#  1. the operator, front end and bridge images built from the Dockerfile with buildah
#     (hack/release-build.sh, on base images made from Debian packages by hack/base-images.sh);
#  2. pushed to the local registry (hack/registry.sh, $REGISTRY) and their digests kept;
#  3. the chart packaged (`helm package`) and pushed as an OCI artifact (`helm push`) to
#     oci://$REGISTRY/charts;
#  4. tests/tests/release.rs: `helm install oci://…` with every image pinned by digest, pods
#     pulling from the registry, `helm test`, a tools/call to completion, and a wrong digest
#     that keeps its pod from starting.
# Prints the time each step took.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/release-env.sh"
export PATH="$MTO_BIN:$PATH" KUBECONFIG=$MTO_STATE/kubeconfig
cd "$REPO_ROOT"
t0=$(date +%s)
step() { echo "release-test: $1 ($(($(date +%s) - t0)) s)"; }

"$HACK/registry.sh" start
"$HACK/release-build.sh"
step "images built"

VERSION=$(sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/mcp-task-operator/Chart.yaml)
CHART_VERSION=$(sed -n 's/^version: \(.*\)/\1/p' charts/mcp-task-operator/Chart.yaml)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for name in mcp-task-operator mcp-task-frontend mcp-bridge; do
  # Plain HTTP: the registry listens on loopback only.
  buildah push --quiet --tls-verify=false --digestfile "$out/$name.digest" \
    "$REGISTRY/$name:$VERSION" "docker://$REGISTRY/$name:$VERSION"
  echo "pushed $REGISTRY/$name:$VERSION@$(cat "$out/$name.digest")"
done
helm package charts/mcp-task-operator --destination "$out" >/dev/null
helm push "$out/mcp-task-operator-$CHART_VERSION.tgz" "oci://$REGISTRY/charts" --plain-http
step "images and chart pushed"

export MTO_RELEASE_REGISTRY=$REGISTRY MTO_RELEASE_CHART_VERSION=$CHART_VERSION
MTO_RELEASE_OPERATOR_DIGEST=$(cat "$out/mcp-task-operator.digest")
MTO_RELEASE_FRONTEND_DIGEST=$(cat "$out/mcp-task-frontend.digest")
MTO_RELEASE_BRIDGE_DIGEST=$(cat "$out/mcp-bridge.digest")
export MTO_RELEASE_OPERATOR_DIGEST MTO_RELEASE_FRONTEND_DIGEST MTO_RELEASE_BRIDGE_DIGEST
cargo test -p mcp-task-operator-tests --locked --test release -- --ignored --test-threads=2
step "release tests passed"
