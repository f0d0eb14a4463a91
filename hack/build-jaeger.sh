#!/usr/bin/env bash
# Builds Jaeger v2 (`cmd/jaeger`: an OpenTelemetry Collector with an OTLP receiver, an
# in-memory trace store and the query HTTP API) from the Go module proxy at $JAEGER_VERSION into
# $JAEGER_BIN (~/.cache/mcp-task-operator/jaeger-<version>/jaeger), and prints that path. The
# tracing tests (tests/tests/tracing.rs) run it on loopback as the real backend they read traces
# back from. A binary already there is never rebuilt. Nothing here is committed.
set -euo pipefail
. "$(dirname "$0")/versions.sh"

if [ -x "$JAEGER_BIN" ]; then
  echo "$JAEGER_BIN"
  exit 0
fi
# Two callers at once (make test beside a by-hand run) must not build into each other's file.
mkdir -p "$(dirname "$JAEGER_BIN")"
exec 9>"$(dirname "$JAEGER_BIN")/.lock"
flock 9
if [ -x "$JAEGER_BIN" ]; then
  echo "$JAEGER_BIN"
  exit 0
fi
echo "building jaeger $JAEGER_VERSION into $JAEGER_BIN (cold: about 9 CPU-minutes; 30 min on 2 cores shared with other builds)" >&2
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local
SRC=$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$SRC" ] || { echo "go mod download gave no source for github.com/jaegertracing/jaeger@$JAEGER_VERSION" >&2; exit 1; }
# Built in the module cache's read-only copy: `go build` writes only the output file.
(cd "$SRC" && go build -p 2 -trimpath -ldflags "-s -w" -o "$JAEGER_BIN.tmp" ./cmd/jaeger) >&2
mv "$JAEGER_BIN.tmp" "$JAEGER_BIN"
echo "$JAEGER_BIN"
