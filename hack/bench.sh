#!/usr/bin/env bash
# `make bench`: release builds of the front end, the operator, the Rust tool, the minimal Rust
# MCP server, the bridge (image localhost/mcp-bridge:bench) and the harness;
# the local cluster (started here only when it is not running, and then stopped afterwards);
# the busybox image the trivial tool runs; then mto-bench, whose results table is printed and
# written to $CARGO_TARGET_DIR/bench/results.md (MTO_BENCH_OUT). Settings: bench/src/config.rs.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
cd "$REPO_ROOT"
export PATH=$MTO_BIN:$PATH KUBECONFIG=$MTO_STATE/kubeconfig
TARGET=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release
started=$(date +%s)

cargo build --release --locked --bin mto-bench --bin rust-tool --bin rust-mcp-server \
  --bin mcp-task-operator --bin mcp-task-frontend

if kubectl get --raw /readyz >/dev/null 2>&1; then
  echo "bench: using the running local cluster"
else
  echo "bench: starting the local cluster (stopped again afterwards)"
  "$HACK/cluster-up.sh"
  trap '"$HACK/cluster-down.sh"' EXIT
fi
# The trivial tool runs the stock busybox; the Rust tool image is packaged by the harness.
examples/build-images.sh wrap-cli
# The bridge and warm sections (issues 16, 38): the bridge image the operator copies into server
# pods and warm pods (the harness imports the example images, mcp-server-time among them, itself).
case ",${MTO_BENCH_SECTIONS:-bridge}," in
*,bridge,* | *,warm,*) IMAGE_TAG=bench "$HACK/build-images.sh" ;;
esac

MTO_FRONTEND_BIN=$TARGET/mcp-task-frontend \
MTO_OPERATOR_BIN=$TARGET/mcp-task-operator \
MTO_RUST_TOOL_BIN=$TARGET/rust-tool \
MTO_RUST_MCP_SERVER_BIN=$TARGET/rust-mcp-server \
MTO_BRIDGE_IMAGE=localhost/mcp-bridge:bench \
MTO_BENCH_OUT=${MTO_BENCH_OUT:-${CARGO_TARGET_DIR:-$REPO_ROOT/target}/bench/results.md} \
  "$TARGET/mto-bench"
echo "bench: done in $(($(date +%s) - started)) s"
