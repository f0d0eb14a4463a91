#!/usr/bin/env bash
# Builds the operator and front end in release mode and packages each into a registry-free OCI
# image (the binary plus the shared libraries it links, running as uid 65532), imported into the
# local cluster when it runs: localhost/mcp-task-operator:dev, localhost/mcp-task-frontend:dev and
# localhost/mcp-bridge:dev.
# Real users build the same binaries with the Dockerfile.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
TAG=${IMAGE_TAG:-dev}
# PROFILE=debug packages the debug build of hack/build-debug.sh, which the tiers run anyway.
PROFILE=${PROFILE:-release}
cd "$REPO_ROOT"
if [ "$PROFILE" = release ]; then
  cargo build --release --locked --bin mcp-task-operator --bin mcp-task-frontend
else
  "$HACK/build-debug.sh"
fi
TARGET=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/$PROFILE
for bin in mcp-task-operator mcp-task-frontend; do
  "$HACK/images.sh" build "localhost/$bin:$TAG" --binary "$TARGET/$bin:/usr/local/bin/$bin" \
    --strip --entrypoint "/usr/local/bin/$bin" --user 65532:65532
done
# The bridge that runs McpServer images (bridge/): one static binary, so that it runs in any
# server image; always an optimised build (2 MiB), whatever PROFILE says.
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked -p mcp-bridge \
  --target x86_64-unknown-linux-gnu
"$HACK/images.sh" build "localhost/mcp-bridge:$TAG" \
  --copy "${CARGO_TARGET_DIR:-$REPO_ROOT/target}/x86_64-unknown-linux-gnu/release/mcp-bridge:/mcp-bridge" \
  --entrypoint /mcp-bridge --user 65532:65532
