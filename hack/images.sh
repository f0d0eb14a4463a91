#!/usr/bin/env bash
# Builds OCI image archives with hack/mkimage.py (no registry, no Docker engine) and, when a
# cluster is running, imports them into its containerd as localhost/<name>:<tag>.
#   images.sh base                  pause (the pod sandbox), busybox and toolbox (busybox + curl);
#                                   prints the directory holding their archives
#   images.sh build REF [mkimage options...]   any image, e.g.
#       images.sh build localhost/sleepy:v1 --busybox --copy tool.sh:/tool.sh --entrypoint /tool.sh
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
SOCK=$MTO_STATE/containerd/containerd.sock

import() {
  if [ -S "$SOCK" ]; then
    ctr --address "$SOCK" -n k8s.io images import "$1" >/dev/null
    echo "imported $1"
  fi
}

case "${1:-}" in
base)
  # Keyed by the recipe, so a changed builder rebuilds the base images.
  key=$(cat "$HACK/mkimage.py" "$HACK/pause/pause.c" "$0" | sha256sum | cut -c1-12)
  out=$MTO_CACHE/images/base-$key
  mkdir -p "$out"
  if [ ! -f "$out/pause.tar" ]; then
    tmp=$(mktemp -d)
    gcc -Os -static -o "$tmp/pause" "$HACK/pause/pause.c"
    python3 "$HACK/mkimage.py" registry.k8s.io/pause:3.10 "$out/pause.tar" \
      --copy "$tmp/pause:/pause" --entrypoint /pause --user 65535:65535 >/dev/null
    rm -rf "$tmp"
  fi
  [ -f "$out/busybox.tar" ] ||
    python3 "$HACK/mkimage.py" localhost/busybox:1.35 "$out/busybox.tar" --busybox --cmd sh >/dev/null
  # busybox plus curl, for tests that need a TLS client that verifies certificates.
  [ -f "$out/toolbox.tar" ] ||
    python3 "$HACK/mkimage.py" localhost/toolbox:v1 "$out/toolbox.tar" --busybox \
      --binary /usr/bin/curl:/usr/bin/curl --cmd sh >/dev/null
  echo "$out"
  ;;
build)
  ref=${2:?image reference}
  shift 2
  out=$MTO_CACHE/images/$(echo "$ref" | tr '/:' '__').tar
  mkdir -p "$(dirname "$out")"
  python3 "$HACK/mkimage.py" "$ref" "$out" "$@"
  import "$out"
  ;;
*)
  echo "usage: images.sh base | build REF [mkimage options]" >&2
  exit 2
  ;;
esac
