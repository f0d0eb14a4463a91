#!/usr/bin/env bash
# NOT USED YET: nothing calls this script. The local cluster still runs Debian's containerd 1.6 and
# runc 1.1 (hack/deps.sh), whose CRI cannot mount `image` volumes (Kubernetes' ImageVolume needs
# containerd 2.1+). This builds the runtime the cluster would switch to for issue 38 (the bridge
# as an `image` volume); the switch itself (cluster-up's containerd config, the ImageVolume
# feature gate on the API server and kubelet) is not made yet.
#
# Builds containerd, containerd-shim-runc-v2, ctr and runc from the Go module proxy into
# $MTO_CACHE/containerd-<version>-runc-<version>/ and prints that folder (alone, on stdout).
# A folder whose binaries are all present is never rebuilt.
#
# Versions: containerd 2.3 is the LTS branch (supported to April 2028) and, like runc 1.4/1.5,
# still supports cgroup v1, deprecated but with removal not before May 2029 (RELEASES.md and
# docs/deprecated.md in their module sources); this machine has cgroup v1 only.
#
# No wrapper module as in hack/build-k8s.sh: neither go.mod has replace directives, so
# `go install pkg@version` builds each with exactly its own pinned requirements.
# containerd and its shim are pure Go (CGO_ENABLED=0, so no btrfs snapshotter); runc needs cgo
# and libseccomp (Debian's libseccomp-dev, installed when missing). runc is built without the
# `libpathrs` tag (a Rust library Debian bookworm lacks), which runc 1.5 still supports.
set -euo pipefail
. "$(dirname "$0")/versions.sh"

CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.3.7}
RUNC_VERSION=${RUNC_VERSION:-v1.5.3}
OUT=${CONTAINERD_DIR:-$MTO_CACHE/containerd-$CONTAINERD_VERSION-runc-$RUNC_VERSION}
BINS=(containerd containerd-shim-runc-v2 ctr runc)

missing=()
find_missing() {
  missing=()
  for b in "${BINS[@]}"; do [ -x "$OUT/$b" ] || missing+=("$b"); done
  [ ${#missing[@]} -gt 0 ]
}
if ! find_missing; then
  echo "$OUT"
  exit 0
fi
# One build at a time: a second caller waits and finds them built.
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if ! find_missing; then
  echo "$OUT"
  exit 0
fi
echo "building ${missing[*]} into $OUT (cold: about 3 min on 2 cores, module download included)" >&2

if ! dpkg -s libseccomp-dev >/dev/null 2>&1; then
  echo "installing Debian's libseccomp-dev (runc's seccomp support)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends libseccomp-dev >/dev/null 2>&1 || {
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends libseccomp-dev >/dev/null
  }
fi

# GOFLAGS is cleared: -mod=... is refused by `go install pkg@version`.
export GOFLAGS= GOTOOLCHAIN=local
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export GOBIN="$W/bin"

C=github.com/containerd/containerd/v2
# The version package's values are what `containerd --version` and the CRI's runtime version
# report (the kubelet logs them); without them it says "1.0.0+unknown".
CLDF="-s -w -X $C/version.Version=$CONTAINERD_VERSION -X $C/version.Revision=$CONTAINERD_VERSION"
CLDF="$CLDF -X $C/version.Package=github.com/containerd/containerd/v2"
want() { [ ! -x "$OUT/$1" ]; }
if want containerd || want ctr; then
  CGO_ENABLED=0 go install -trimpath -tags urfave_cli_no_docs -ldflags "$CLDF" \
    "$C/cmd/containerd@$CONTAINERD_VERSION" "$C/cmd/ctr@$CONTAINERD_VERSION"
fi
if want containerd-shim-runc-v2; then
  # As containerd's Makefile builds the shim: static, and without the gRPC server (ttrpc only).
  CGO_ENABLED=0 go install -trimpath -tags "urfave_cli_no_docs no_grpc" -ldflags "$CLDF" \
    "$C/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
fi
if want runc; then
  CGO_ENABLED=1 go install -trimpath -tags "seccomp urfave_cli_no_docs" \
    -ldflags "-s -w -X main.gitCommit=$RUNC_VERSION" "github.com/opencontainers/runc@$RUNC_VERSION"
fi
for b in "${missing[@]}"; do
  if [ -x "$GOBIN/$b" ]; then
    mv "$GOBIN/$b" "$OUT/$b"
    echo "built $b" >&2
  fi
done
find_missing && { echo "not built: ${missing[*]}" >&2; exit 1; }
"$OUT/containerd" --version >&2
"$OUT/runc" --version | head -1 >&2
echo "$OUT"
