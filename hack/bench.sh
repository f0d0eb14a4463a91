#!/usr/bin/env bash
# `make bench`: release builds of the front end, the operator, the Rust tool and the harness;
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

cargo build --release --locked --bin mto-bench --bin rust-tool \
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

MTO_FRONTEND_BIN=$TARGET/mcp-task-frontend \
MTO_OPERATOR_BIN=$TARGET/mcp-task-operator \
MTO_RUST_TOOL_BIN=$TARGET/rust-tool \
MTO_BENCH_OUT=${MTO_BENCH_OUT:-${CARGO_TARGET_DIR:-$REPO_ROOT/target}/bench/results.md} \
  "$TARGET/mto-bench"
echo "bench: done in $(($(date +%s) - started)) s"
