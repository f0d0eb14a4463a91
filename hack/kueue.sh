#!/usr/bin/env bash
# Runs Kueue ($KUEUE_VERSION, built by hack/build-kueue.sh) in the running local cluster, as the
# Deployment kueue-system/kueue-controller-manager from a registry-free image
# (localhost/kueue:<version>, hack/mkimage.py), with its webhook (Kueue's internal certificate
# management) and the manifests of its default install, narrowed by hack/kueue-manifests.py so
# that only Jobs labelled kueue.x-k8s.io/queue-name ever reach it.
#   kueue.sh start    build (cached), import, apply, wait until the webhook answers; idempotent
#   kueue.sh stop     delete everything it applied (CRDs, and so queues and workloads, included)
#   kueue.sh status   the Deployment's pods
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
. "$HACK/versions.sh"
# Always the project's own cluster, like the other cluster scripts.
export PATH=$MTO_BIN:$PATH KUBECONFIG=$MTO_STATE/kubeconfig
IMAGE=localhost/kueue:$KUEUE_VERSION
NS=kueue-system

manifests() {
  python3 "$HACK/kueue-manifests.py" "$IMAGE" <"$KUEUE_DIR/default.yaml"
}

start() {
  "$HACK/build-kueue.sh" >/dev/null
  local archive=$MTO_CACHE/images/$(echo "$IMAGE" | tr '/:' '__').tar
  # Keyed by the binary: a rebuilt binary makes a new archive (same tag, so the pod restarts).
  if [ ! -f "$archive" ] || [ "$KUEUE_DIR/kueue" -nt "$archive" ]; then
    "$HACK/images.sh" build "$IMAGE" --copy "$KUEUE_DIR/kueue:/manager" \
      --entrypoint /manager --user 65532:65532 >&2
  else
    ctr --address "$MTO_STATE/containerd/containerd.sock" -n k8s.io images import "$archive" >/dev/null
  fi
  manifests | kubectl apply --server-side --force-conflicts --field-manager=mto-kueue -f - >/dev/null
  kubectl -n "$NS" rollout status deploy/kueue-controller-manager --timeout=300s >&2
  # Ready means the webhook server runs; the API server calls it once the certificate Kueue
  # made is in the webhook configurations: a dry-run create goes through the webhooks.
  local flavor='{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"mto-probe"}}'
  for _ in $(seq 1 120); do
    if echo "$flavor" | kubectl create --dry-run=server -f - >/dev/null 2>&1; then
      echo "kueue $KUEUE_VERSION runs in $NS"
      return 0
    fi
    sleep 1
  done
  echo "kueue's webhook did not answer in 120 s" >&2
  kubectl -n "$NS" logs deploy/kueue-controller-manager --tail=50 >&2 || true
  return 1
}

case "${1:-}" in
start) start ;;
stop) [ -f "$KUEUE_DIR/default.yaml" ] || exit 0
  manifests | kubectl delete --ignore-not-found --wait=false -f - >/dev/null
  echo "kueue removed" ;;
status) kubectl -n "$NS" get pods -o wide ;;
*) echo "usage: kueue.sh start | stop | status" >&2; exit 2 ;;
esac
