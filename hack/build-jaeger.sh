#!/usr/bin/env bash
# Builds Jaeger v2 (`cmd/jaeger`: an OpenTelemetry Collector with an OTLP receiver, an
# in-memory trace store and the query HTTP API) from the Go module proxy at $JAEGER_VERSION into
# $JAEGER_BIN (~/.cache/mcp-task-operator/jaeger-<version>/jaeger), and prints that path. The
# tracing tests (tests/tests/tracing.rs) run it on loopback as the real backend they read traces
# back from. A binary already there is never rebuilt. Nothing here is committed.
set -euo pipefail
. "$(dirname "$0")/versions.sh"
. "$(dirname "$0")/gomod.sh"

reuse_or_lock "$JAEGER_BIN" "$JAEGER_BIN"
echo "building jaeger $JAEGER_VERSION into $JAEGER_BIN (cold: about 9 CPU-minutes; 30 min on 2 cores shared with other builds)" >&2
SRC=$(module_src github.com/jaegertracing/jaeger "$JAEGER_VERSION")
build_in "$SRC" ./cmd/jaeger "$JAEGER_BIN"
echo "$JAEGER_BIN"
