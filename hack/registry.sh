#!/usr/bin/env bash
# The local cluster's image and chart registry: the CNCF distribution registry (Debian package
# docker-registry) on loopback ($REGISTRY_ADDR, default 127.0.0.1:5000), over TLS with a
# certificate for localhost and 127.0.0.1 from the cluster's CA (hack/pki.sh), as a real registry
# serves: buildah, skopeo and helm need no insecure or plain-HTTP flag, only to trust that CA.
# `start` writes $REGISTRY_TRUST (this machine's CA bundle plus the cluster's CA) for them
# (`trust_registry` in hack/release-env.sh); containerd trusts it through the hosts.toml that
# hack/cluster-up.sh writes. Its storage, config, trust bundle, log and PID live under
# $MTO_STATE (registry/, logs/registry.log, pids/registry.pid): `hack/cluster-down.sh` stops it
# with the other components and removes them.
#   registry.sh start    start it unless it answers (idempotent); installs the package if missing
#   registry.sh stop     stop it (by its recorded PID)
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
. "$HACK/release-env.sh"
D=$MTO_STATE
PIDFILE=$D/pids/registry.pid
up() { curl -sf --cacert "$D/pki/ca.crt" "https://$REGISTRY_ADDR/v2/" >/dev/null 2>&1; }
taken() { ss -Hltn "sport = :${REGISTRY_ADDR##*:}" 2>/dev/null | grep -qF "$REGISTRY_ADDR"; }

case "${1:-}" in
start)
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && up; then exit 0; fi
  command -v docker-registry >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
  if taken; then
    echo "something else listens on $REGISTRY_ADDR; set REGISTRY_ADDR to a free loopback port" >&2
    exit 1
  fi
  [ -f "$D/pki/registry.crt" ] ||
    { echo "no $D/pki/registry.crt: the registry starts with the cluster (make cluster-up)" >&2; exit 1; }
  mkdir -p "$D/registry/data" "$D/pids" "$D/logs"
  cat "${SYSTEM_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" "$D/pki/ca.crt" >"$REGISTRY_TRUST"
  cat >"$D/registry/config.yml" <<CONF
version: 0.1
log: {level: warn, fields: {service: registry}}
storage:
  filesystem: {rootdirectory: $D/registry/data}
  delete: {enabled: true}
http:
  addr: $REGISTRY_ADDR
  tls: {certificate: $D/pki/registry.crt, key: $D/pki/registry.key}
  headers: {X-Content-Type-Options: [nosniff]}
CONF
  nohup docker-registry serve "$D/registry/config.yml" >>"$D/logs/registry.log" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 50); do up && { echo "registry up on $REGISTRY_ADDR ($REGISTRY)"; exit 0; }; sleep 0.2; done
  echo "registry did not answer on $REGISTRY_ADDR within 10 s; log: $D/logs/registry.log" >&2
  exit 1
  ;;
stop)
  if [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q docker-registry; then
      kill -TERM "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
  fi
  ;;
*)
  echo "usage: registry.sh start|stop" >&2
  exit 2
  ;;
esac
