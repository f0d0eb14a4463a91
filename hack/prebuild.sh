#!/usr/bin/env bash
# `make test` starts this first. It builds what the later tiers need and cargo does not build,
# in the background at the lowest CPU priority, so that the tools come out of CPU time the
# foreground leaves idle (downloads, a crate that compiles alone, tests that wait on pods)
# rather than one after the other on the critical path:
#   the Debian packages, the Kubernetes binaries (cluster-up), the MCP clients and servers,
#   Kueue, promtool, Jaeger (integration), kwok (scale smoke), the base images and the
#   Dockerfile's three images (release tier, which builds them again from buildah's layer cache),
#   and the fuzz targets (fuzz smoke),
# in the order `make test` needs them.
# Each of those scripts takes a lock of its own and keeps what it built, so a tier that reaches
# one still being built waits for it, and one already built costs nothing. A failure here only
# shows in the log: the tier that needs the tool runs its script again and fails there, loudly.
#
#   hack/prebuild.sh start   in the background; PID and log in $MTO_CACHE/prebuild/
#   hack/prebuild.sh stop    stops it (by its recorded PID, with the builds it started), if it runs
#   hack/prebuild.sh run     in the foreground
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
export PATH="$MTO_BIN:$PATH"
D=$MTO_CACHE/prebuild
PIDFILE=$D/pid

running() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "prebuild.sh run"
}

case "${1:-}" in
start)
  mkdir -p "$D"
  if running; then echo "prebuild: already running (PID $(cat "$PIDFILE"))"; exit 0; fi
  # Its own session and process group, so that `stop` reaches the go and buildah processes too.
  setsid nice -n 19 "$HACK/prebuild.sh" run >"$D/log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  echo "prebuild: started (PID $!, log $D/log)"
  ;;
stop)
  if running; then
    pid=$(cat "$PIDFILE")
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    echo "prebuild: stopped (PID $pid)"
  fi
  rm -f "$PIDFILE"
  ;;
run)
  t0=$(date +%s)
  step() {
    local t name=${1##*/}
    t=$(date +%s)
    if "$@" >/dev/null; then
      echo "prebuild: $name done in $(($(date +%s) - t)) s"
    else
      echo "prebuild: $name failed after $(($(date +%s) - t)) s (the tier that needs it runs it again)"
    fi
  }
  # README's release block builds these (hack/release-test.sh waits on the same lock); built
  # here first, its builds come from buildah's layer cache.
  release_images() (
    . "$HACK/release-env.sh"
    cd "$REPO_ROOT"
    exec 8>"$BUILDAH_DIR/.images.lock"
    flock 8
    for target in operator frontend bridge; do
      buildah build --quiet --target "$target" -t "localhost/mto-prebuild-$target:latest" .
    done
  )
  fuzz_targets() { FUZZ_BUILD_ONLY=1 "$HACK/fuzz.sh"; }
  step "$HACK/deps.sh"
  step "$HACK/build-k8s.sh"
  step "$HACK/clients.sh"
  step "$HACK/mcp-servers.sh"
  step "$HACK/build-kueue.sh"
  step "$HACK/build-promtool.sh"
  step "$HACK/build-jaeger.sh"
  step "$HACK/build-kwok.sh"
  step "$HACK/base-images.sh"
  step release_images
  step fuzz_targets
  echo "prebuild: all done in $(($(date +%s) - t0)) s"
  ;;
*)
  echo "usage: $0 start|stop|run" >&2
  exit 2
  ;;
esac
