# Pinned versions and the cache layout, sourced by every hack/ script.
# kubelet 1.34 is the last minor that supports containerd 1.x (Debian bookworm) and cgroup v1
# without opting out of a failing default; see docs/local-cluster.md.
K8S_VERSION=${K8S_VERSION:-1.34.4}
HELM_VERSION=${HELM_VERSION:-v3.19.5}
# KWOK (fake nodes for scale and node-loss tests): v0.7 is built against client-go 0.33, within
# the supported skew of Kubernetes 1.34; v0.8 is built against 0.36. See docs/local-cluster.md.
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
MTO_CACHE=${MTO_CACHE:-$HOME/.cache/mcp-task-operator}
MTO_BIN=${MTO_BIN:-$MTO_CACHE/k8s-v$K8S_VERSION}
REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# The kwok binary, keyed by the patch it is built with (hack/build-kwok.sh says why it is patched).
KWOK_BIN=${KWOK_BIN:-$MTO_CACHE/kwok-$KWOK_VERSION-$(cat "$REPO_ROOT"/hack/kwok/*.patch | sha256sum | cut -c1-12)/kwok}
# Everything a running cluster owns lives under MTO_STATE; `make cluster-down` removes it.
MTO_STATE=${MTO_STATE:-$REPO_ROOT/.state}
# Addresses: the control plane binds loopback and the bridge; pods live on the bridge only.
NODE_NAME=node1
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
BRIDGE=mto0
IPT_COMMENT=mcp-task-operator
# The image and chart registry (hack/registry.sh): loopback only, TLS from the cluster's CA;
# images are named $REGISTRY/<name>.
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
REGISTRY=${REGISTRY:-localhost:${REGISTRY_ADDR##*:}}
# promtool (checks and unit-tests the chart's alert rules): Prometheus v3.16's Go module version.
PROMETHEUS_MODULE_VERSION=${PROMETHEUS_MODULE_VERSION:-v0.316.0}
PROMTOOL_BIN=${PROMTOOL_BIN:-$MTO_CACHE/promtool-$PROMETHEUS_MODULE_VERSION/promtool}
# Jaeger v2 (the tracing tests' backend: OTLP receiver, in-memory store, query API), built by
# hack/build-jaeger.sh from the Go module proxy.
JAEGER_VERSION=${JAEGER_VERSION:-v1.76.0}
JAEGER_BIN=${JAEGER_BIN:-$MTO_CACHE/jaeger-$JAEGER_VERSION/jaeger}
# Kueue (admission of suspended Jobs through queues; the Kueue tests' real queue), built by
# hack/build-kueue.sh from the Go module proxy, with its manifests rendered from the same source.
KUEUE_VERSION=${KUEUE_VERSION:-v0.17.0}
KUEUE_DIR=${KUEUE_DIR:-$MTO_CACHE/kueue-$KUEUE_VERSION}

# cargo-cyclonedx (CycloneDX SBOMs from Cargo.lock), installed by hack/sbom.sh.
CYCLONEDX_VERSION=${CYCLONEDX_VERSION:-0.5.9}
CYCLONEDX_ROOT=${CYCLONEDX_ROOT:-$MTO_CACHE/cargo-cyclonedx-$CYCLONEDX_VERSION}
