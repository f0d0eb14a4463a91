#!/usr/bin/env bash
# Pushes images this project built as OCI archives (hack/images.sh, hack/build-images.sh,
# examples/build-images.sh) to the local registry (hack/registry.sh) and pins them by digest.
#   registry-push.sh REF...              REF = localhost/NAME:TAG; pushes each to
#                                        $REGISTRY/NAME:TAG and prints `REF $REGISTRY/NAME@sha256:…`
#   registry-push.sh --rewrite FILE...   prints the manifests with every `image: localhost/NAME:TAG`
#                                        replaced by its pushed `$REGISTRY/NAME@sha256:…`
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/release-env.sh"
trust_registry

archive() { # the OCI archive of REF: hack/images.sh's name for it, or a base image
  local ref=$1 f
  f=$MTO_CACHE/images/$(echo "$ref" | tr '/:' '__').tar
  [ -f "$f" ] && { echo "$f"; return; }
  case $ref in
    localhost/busybox:1.35) echo "$("$HACK/images.sh" base)/busybox.tar" ;;
    localhost/toolbox:v1) echo "$("$HACK/images.sh" base)/toolbox.tar" ;;
    *) echo "no archive of $ref (expected $f): build it first" >&2; return 1 ;;
  esac
}

pin() { # REF -> $REGISTRY/NAME@DIGEST, pushed
  local ref=$1 name tag tmp
  case $ref in localhost/*:*) ;; *) echo "not a localhost/NAME:TAG reference: $ref" >&2; return 1 ;; esac
  name=${ref#localhost/}; tag=${name##*:}; name=${name%:*}
  tmp=$(mktemp)
  skopeo copy --quiet --digestfile "$tmp" \
    "oci-archive:$(archive "$ref")" "docker://$REGISTRY/$name:$tag" >&2
  echo "$REGISTRY/$name@$(cat "$tmp")"
  rm -f "$tmp"
}

if [ "${1:-}" = --rewrite ]; then
  shift
  declare -A pinned=()
  for ref in $(sed -n 's/^ *image: *\(localhost\/[^ ]*\) *$/\1/p' "$@" | sort -u); do
    pinned[$ref]=$(pin "$ref")
  done
  script=()
  for ref in "${!pinned[@]}"; do script+=(-e "s#^\( *image: *\)$ref *\$#\1${pinned[$ref]}#"); done
  if [ ${#script[@]} -eq 0 ]; then
    for f in "$@"; do cat "$f"; echo "---"; done
  else
    for f in "$@"; do sed "${script[@]}" "$f"; echo "---"; done
  fi
  exit 0
fi
[ $# -gt 0 ] || { echo "usage: registry-push.sh REF... | --rewrite FILE..." >&2; exit 2; }
for ref in "$@"; do echo "$ref $(pin "$ref")"; done
