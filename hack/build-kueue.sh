#!/usr/bin/env bash
# Builds Kueue (sigs.k8s.io/kueue, `cmd/kueue`: the controller manager with its webhook server)
# from the Go module proxy at $KUEUE_VERSION into $KUEUE_DIR
# (~/.cache/mcp-task-operator/kueue-<version>/), and renders its manifests (CRDs, RBAC, webhook
# configurations) from the same module source's config/components with `kubectl kustomize`
# into $KUEUE_DIR/components.yaml. Prints $KUEUE_DIR. Nothing already there is rebuilt; nothing
# here is committed. hack/kueue-up.sh runs it in the cluster.
set -euo pipefail
. "$(dirname "$0")/versions.sh"

done_marker=$KUEUE_DIR/.built
if [ -f "$done_marker" ]; then
  echo "$KUEUE_DIR"
  exit 0
fi
mkdir -p "$KUEUE_DIR"
# Two callers at once must not build into each other's files.
exec 9>"$KUEUE_DIR/.lock"
flock 9
if [ -f "$done_marker" ]; then
  echo "$KUEUE_DIR"
  exit 0
fi
echo "building kueue $KUEUE_VERSION into $KUEUE_DIR" >&2
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local
SRC=$(go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$SRC" ] || { echo "go mod download gave no source for sigs.k8s.io/kueue@$KUEUE_VERSION" >&2; exit 1; }
# Built in the module cache's read-only copy: `go build` writes only the output file.
(cd "$SRC" && go build -p 2 -trimpath -ldflags "-s -w" -o "$KUEUE_DIR/kueue.tmp" ./cmd/kueue) >&2
mv "$KUEUE_DIR/kueue.tmp" "$KUEUE_DIR/kueue"
# The manifests of the default install (config/default without its namespace-wide patches is
# config/components), rendered from the read-only source.
kubectl kustomize "$SRC/config/default" >"$KUEUE_DIR/default.yaml"
touch "$done_marker"
echo "$KUEUE_DIR"
