#!/usr/bin/env bash
# Builds the operator, front end and bridge images from the repository's Dockerfile with buildah
# (an OCI builder; `docker build` takes the same arguments), on the base images
# hack/base-images.sh makes locally. Tags them $REGISTRY/<name>:<version> in buildah's storage
# under $MTO_CACHE. The cargo caches of the Dockerfile's `RUN --mount=type=cache` live there too
# ($MTO_CACHE/buildah/tmp/buildah-cache-0), so a second build only recompiles what changed.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/release-env.sh"
cd "$REPO_ROOT"
VERSION=$(sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/mcp-task-operator/Chart.yaml)
"$HACK/base-images.sh" >/dev/null
# This machine's trust store, read-only into every RUN step: where TLS to crates.io goes through
# a proxy with its own CA, cargo in the build stage trusts what the host trusts. The images do
# not keep it.
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
ca=()
[ -f "$CA_BUNDLE" ] && ca=(--volume "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro")
for target in operator frontend bridge; do
  case $target in
    operator) name=mcp-task-operator ;; frontend) name=mcp-task-frontend ;; bridge) name=mcp-bridge ;;
  esac
  t0=$(date +%s)
  # --network host: cargo fetches crates from crates.io in the build stage. --layers keeps the
  # build stage, which the three targets share; --force-rm leaves no container behind a failed build.
  buildah build --quiet --layers --force-rm --network host --pull=false "${ca[@]}" --target "$target" \
    -t "$REGISTRY/$name:$VERSION" . >/dev/null
  echo "built $REGISTRY/$name:$VERSION in $(($(date +%s) - t0)) s"
done
