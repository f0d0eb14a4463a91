#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from the Go module proxy at
# $PROMETHEUS_MODULE_VERSION into $PROMTOOL_BIN (~/.cache/mcp-task-operator/promtool-<version>/
# promtool) and prints its path on the last line. A binary already there is never rebuilt.
# Nothing here is committed. The chart test (tests/tests/metrics_chart.rs) runs this script.
set -euo pipefail
. "$(dirname "$0")/versions.sh"
. "$(dirname "$0")/gomod.sh"

reuse_or_lock "$PROMTOOL_BIN" "$PROMTOOL_BIN"
echo "building promtool $PROMETHEUS_MODULE_VERSION into $PROMTOOL_BIN (cold: several minutes on 2 cores)" >&2
DIR=$(dirname "$PROMTOOL_BIN")
W=$(mktemp -d "$DIR/.build.XXXXXX")
trap 'rm -rf "$W"' EXIT
# remove_all_sd leaves out every service-discovery plugin (AWS, Azure, GCE, Kubernetes, ...):
# rule checks and rule unit tests need none, and they are most of the build (and of its disk).
GOBIN="$W" go install -p 2 -tags remove_all_sd -trimpath -ldflags "-s -w" \
  "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_MODULE_VERSION" >&2
mv "$W/promtool" "$PROMTOOL_BIN"
"$PROMTOOL_BIN" --version >&2
echo "$PROMTOOL_BIN"
