#!/usr/bin/env bash
# `make scale`: thousands of tasks at once on KWOK fake nodes, each level beside the same number
# of bare Jobs of the same pod (bench/src/sections/fleet.rs; method in docs/BENCHMARKS.md,
# "make scale"). Release builds of the front end, the operator and the harness; the local cluster
# (started here when it is not running, and stopped again afterwards); kwok with
# SCALE_NODES (50) fake nodes (stopped afterwards when this script started it). Settings:
# MTO_BENCH_FLEET (1000,5000), SCALE_NODES (50), MTO_BENCH_FLEET_LONG (pods of 600 s instead of
# 60 s; `make scale-long` sets it).
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
cd "$REPO_ROOT"
export PATH=$MTO_BIN:$PATH KUBECONFIG=$MTO_STATE/kubeconfig
TARGET=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release
started=$(date +%s)

cargo build --release --locked --bin mto-bench --bin mcp-task-operator --bin mcp-task-frontend

cleanup=()
finish() { for step in "${cleanup[@]}"; do $step || true; done; }
trap finish EXIT
if kubectl get --raw /readyz >/dev/null 2>&1; then
  echo "scale: using the running local cluster"
else
  echo "scale: starting the local cluster (stopped again afterwards)"
  "$HACK/cluster-up.sh"
  cleanup=("$HACK/cluster-down.sh" "${cleanup[@]}")
fi
if ! "$HACK/kwok.sh" status 2>/dev/null | grep -q "kwok runs"; then
  cleanup=("$HACK/kwok.sh stop" "${cleanup[@]}")
fi
"$HACK/kwok.sh" start "${SCALE_NODES:-50}"

MTO_BENCH_SECTIONS=fleet \
MTO_FRONTEND_BIN=$TARGET/mcp-task-frontend \
MTO_OPERATOR_BIN=$TARGET/mcp-task-operator \
MTO_BENCH_OUT=${MTO_BENCH_OUT:-${CARGO_TARGET_DIR:-$REPO_ROOT/target}/bench/scale.md} \
  "$TARGET/mto-bench"
echo "scale: done in $(($(date +%s) - started)) s"
