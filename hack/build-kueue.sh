#!/usr/bin/env bash
# Builds Kueue (sigs.k8s.io/kueue, `cmd/kueue`: the controller manager with its webhook server)
# from the Go module proxy at $KUEUE_VERSION into $KUEUE_DIR
# (~/.cache/mcp-task-operator/kueue-<version>/), and renders its manifests (CRDs, RBAC, webhook
# configurations) from the same module source's config/components with `kubectl kustomize`
# into $KUEUE_DIR/components.yaml. Prints $KUEUE_DIR. Nothing already there is rebuilt; nothing
# here is committed. hack/kueue-up.sh runs it in the cluster.
set -euo pipefail
. "$(dirname "$0")/versions.sh"
. "$(dirname "$0")/gomod.sh"

done_marker=$KUEUE_DIR/.built
reuse_or_lock "$done_marker" "$KUEUE_DIR"
echo "building kueue $KUEUE_VERSION into $KUEUE_DIR" >&2
SRC=$(module_src sigs.k8s.io/kueue "$KUEUE_VERSION")
build_in "$SRC" ./cmd/kueue "$KUEUE_DIR/kueue"
# The manifests of the default install (config/default without its namespace-wide patches is
# config/components), rendered from the read-only source.
kubectl kustomize "$SRC/config/default" >"$KUEUE_DIR/default.yaml"
touch "$done_marker"
echo "$KUEUE_DIR"
