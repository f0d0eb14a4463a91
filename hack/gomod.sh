# Helpers of the scripts that build a tool from the Go module proxy into the cache
# (build-jaeger.sh, build-kueue.sh, build-kwok.sh, build-promtool.sh); sourced after versions.sh.
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local

# reuse_or_lock MARKER OUTPUT: when MARKER exists, prints OUTPUT and ends the script. Otherwise
# takes the build lock of MARKER's folder (two callers at once, make test beside a by-hand run,
# must not build into each other's files) and looks again once it holds it.
reuse_or_lock() {
  local marker=$1 output=$2
  if [ -e "$marker" ]; then
    echo "$output"
    exit 0
  fi
  mkdir -p "$(dirname "$marker")"
  exec 9>"$(dirname "$marker")/.lock"
  flock 9
  if [ -e "$marker" ]; then
    echo "$output"
    exit 0
  fi
}

# module_src MODULE VERSION: downloads MODULE@VERSION through the module proxy (checked against
# the checksum database) and prints the module cache's read-only copy of its source.
module_src() {
  local src
  src=$(go mod download -json "$1@$2" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$src" ] || { echo "go mod download gave no source for $1@$2" >&2; return 1; }
  echo "$src"
}

# build_in SRC PACKAGE OUT: builds PACKAGE (./cmd/...) of the source folder SRC, static and
# stripped, into OUT. `go build` writes only the output file, so SRC may be read-only.
build_in() {
  (cd "$1" && go build -p 2 -trimpath -ldflags "-s -w" -o "$3.tmp" "$2") >&2
  mv "$3.tmp" "$3"
}
