#!/usr/bin/env bash
# Builds the Kubernetes and etcd binaries the local cluster runs, from the Go module proxy, and
# gets helm. Cached per version under $MTO_CACHE (default ~/.cache/mcp-task-operator); a version
# whose binaries are all present is never rebuilt. Nothing here is committed.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces every staging module with
# ./staging/src/...), so we build it through a throwaway wrapper module that replaces each staging
# module with its published v0.X.Y tag.
set -euo pipefail
. "$(dirname "$0")/versions.sh"

OUT="$MTO_BIN"
BINS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd helm)
missing=()
find_missing() {
  missing=()
  for b in "${BINS[@]}"; do [ -x "$OUT/$b" ] || missing+=("$b"); done
  [ ${#missing[@]} -gt 0 ]
}
if ! find_missing; then
  echo "k8s binaries cached in $OUT"
  exit 0
fi
# One build at a time (make test builds these in the background, hack/prebuild.sh, and
# cluster-up may get here meanwhile): the second caller waits and finds them built.
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if ! find_missing; then
  echo "k8s binaries cached in $OUT"
  exit 0
fi
echo "building ${missing[*]} into $OUT (cold: about 10 min on 2 cores, module download included)"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
go mod init local/k8sbins >/dev/null 2>&1

# The staging list comes from k8s.io/kubernetes's own go.mod, so it is right for any version.
GOMOD=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
STAGING_VERSION="v0.${K8S_VERSION#1.}"
for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$GOMOD"); do
  go mod edit "-replace=$m=$m@$STAGING_VERSION"
done
go mod edit "-require=k8s.io/kubernetes@v$K8S_VERSION"
cat > tools.go <<'G'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
G
go mod tidy

# Without these -X flags the binaries report v0.0.0-master, which breaks version-skew checks.
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
LDF="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF="$LDF -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR"
  LDF="$LDF -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
# One `go build` of all six: their shared packages are compiled once and the links run side by
# side; the binaries land in a scratch folder, then move into place.
cmds=()
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
  [ -x "$OUT/$c" ] || cmds+=("k8s.io/kubernetes/cmd/$c")
done
if [ ${#cmds[@]} -gt 0 ]; then
  mkdir "$W/bin"
  go build -trimpath -ldflags "$LDF" -o "$W/bin/" "${cmds[@]}"
  for p in "${cmds[@]}"; do
    mv "$W/bin/${p##*/}" "$OUT/${p##*/}"
    echo "built ${p##*/}"
  done
fi

# etcd at the version Kubernetes itself pins (3.6.x for 1.34); the package path ends in /v3, so
# the output name is given explicitly.
if [ ! -x "$OUT/etcd" ]; then
  ETCD_V=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  echo "built etcd $ETCD_V"
fi

# helm has no replace directives: a plain install works, in its own module graph.
if [ ! -x "$OUT/helm" ]; then
  GOBIN="$W/gobin" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$W/gobin/helm" "$OUT/helm"
  echo "built helm $HELM_VERSION"
fi

"$OUT/kube-apiserver" --version
"$OUT/etcd" --version | head -1
"$OUT/helm" version --short
