#!/usr/bin/env bash
# Builds the KWOK controller (`kwok`, the kubelet of fake nodes; `kwokctl` is not needed) from
# the Go module proxy at $KWOK_VERSION, with the patches in hack/kwok/*.patch, into $KWOK_BIN
# (~/.cache/mcp-task-operator/kwok-<version>-<patch hash>/kwok). A binary already there is never
# rebuilt; a changed patch builds into a new directory. Nothing here is committed.
#
# Why patched (hack/kwok/kwok.patch, against v0.7.0):
# - logs: kwok serves a fake container's log file all at once, and its stand-in for the container
#   runtime always answers "unavailable", so a follow stream (`kubectl logs -f`, the operator's
#   log follower) never ends. The patch treats the file as a script (each line printed at its
#   time after the container started, never after it exited) and ends a follow stream, as a
#   kubelet does, once the pod cache says the container terminated or the pod is gone.
# - lost nodes: a node that leaves kwok's label selector could be taken back by a stage or Lease
#   sync that was under way, so its heartbeats went on; the patch drops such work.
# The source still comes from the module proxy (checked against the checksum database as
# usual); only the patch is ours.
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/gomod.sh"

reuse_or_lock "$KWOK_BIN" "kwok $KWOK_VERSION cached in $KWOK_BIN"
echo "building kwok $KWOK_VERSION into $KWOK_BIN (cold: about 10 min on 2 cores)"
W=$(mktemp -d)
trap 'chmod -R u+w "$W"; rm -rf "$W"' EXIT
SRC=$(module_src sigs.k8s.io/kwok "$KWOK_VERSION")
cp -r "$SRC" "$W/kwok"
chmod -R u+w "$W/kwok"
for p in "$HACK"/kwok/*.patch; do
  patch -s -p1 -d "$W/kwok" <"$p"
done
mkdir -p "$(dirname "$KWOK_BIN")"
build_in "$W/kwok" ./cmd/kwok "$KWOK_BIN"
"$KWOK_BIN" --version
