#!/usr/bin/env bash
# `make scale-smoke`: a small `make scale` for `make test` (tests/tests/scale_smoke.rs).
# MTO_SCALE_SMOKE_TASKS (150) tasks at once on SCALE_SMOKE_NODES (10) KWOK fake nodes through a
# debug operator, on the running local cluster; asserts every task's result and the operator's
# API requests per task (a count). kwok is stopped again afterwards when this script started it.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
cd "$REPO_ROOT"
export PATH=$MTO_BIN:$PATH KUBECONFIG=$MTO_STATE/kubeconfig
TARGET=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug

"$HACK/build-debug.sh"
if ! "$HACK/kwok.sh" status 2>/dev/null | grep -q "kwok runs"; then
  trap '"$HACK/kwok.sh" stop' EXIT
fi
"$HACK/kwok.sh" start "${SCALE_SMOKE_NODES:-10}"
MTO_OPERATOR_BIN=$TARGET/mcp-task-operator \
  cargo test -p mcp-task-operator-tests --locked --test scale_smoke -- --ignored --nocapture
