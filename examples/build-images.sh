#!/usr/bin/env bash
# Builds the example tool images with hack/images.sh (no registry, no Docker engine) and, when
# the local cluster runs, imports them into its containerd. Meant for `make images`.
#   examples/build-images.sh            every example image
#   examples/build-images.sh NAME...    only these: restock-report, conformance, wrap-cli,
#                                       mcp-servers
# wrap-cli runs the stock localhost/busybox:1.35, which `hack/images.sh base` builds; it is
# imported here too so that the examples work on a cluster started without it.
set -euo pipefail
EXAMPLES=$(cd "$(dirname "$0")" && pwd)
IMAGES=$EXAMPLES/../hack/images.sh
LIB=$EXAMPLES/lib/mcp.sh:/usr/local/lib/mcp/mcp.sh
# The tools run as this user (the McpTool templates say so too).
USER_ID=65532:65532

build() {
  case $1 in
  restock-report)
    "$IMAGES" build localhost/restock-report:v1 --busybox --user "$USER_ID" --copy "$LIB" \
      --copy "$EXAMPLES/restock-report/restock-report.sh:/usr/local/bin/restock-report" \
      --entrypoint /usr/local/bin/restock-report
    ;;
  conformance)
    # busybox plus curl, as localhost/toolbox:v1 (`hack/images.sh base`): the
    # test_trigger_tool_change fixture patches its McpTool over HTTPS.
    "$IMAGES" build localhost/conformance-tools:v1 --busybox --binary /usr/bin/curl:/usr/bin/curl \
      --user "$USER_ID" --copy "$LIB" \
      --copy "$EXAMPLES/conformance/conformance-tools.sh:/usr/local/bin/conformance-tools" \
      --entrypoint /usr/local/bin/conformance-tools
    ;;
  wrap-cli)
    base=$("$IMAGES" base)
    sock=${MTO_STATE:-$EXAMPLES/../.state}/containerd/containerd.sock
    if [ -S "$sock" ]; then
      ctr --address "$sock" -n k8s.io images import "$base/busybox.tar" >/dev/null
      echo "imported $base/busybox.tar"
    fi
    ;;
  mcp-servers)
    "$EXAMPLES/mcp-servers/build-images.sh"
    ;;
  *)
    echo "build-images.sh: unknown example $1 (restock-report, conformance, wrap-cli, mcp-servers)" >&2
    exit 2
    ;;
  esac
}

if [ $# -eq 0 ]; then
  set -- restock-report conformance wrap-cli mcp-servers
fi
for name in "$@"; do
  build "$name"
done
