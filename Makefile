# The one entry point: generate, fmt, lint, the local cluster, every test tier, the demo.
# `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

K8S_VERSION ?= 1.34.4
MTO_CACHE ?= $(HOME)/.cache/mcp-task-operator
MTO_BIN ?= $(MTO_CACHE)/k8s-v$(K8S_VERSION)
MTO_STATE ?= $(CURDIR)/.state
# Tag of our images in integration stacks; checkouts sharing one cluster set their own.
MTO_IMAGE_TAG ?= dev
# Compiled dependencies are shared between checkouts (CI clones afresh on the same machine).
CARGO_TARGET_DIR ?= $(MTO_CACHE)/target
# No incremental-compilation data: CI's clean clones would add gigabytes of it on every run,
# and one setting for every target keeps the shared artifacts reusable between them.
CARGO_INCREMENTAL ?= 0
export K8S_VERSION MTO_CACHE MTO_BIN MTO_STATE CARGO_TARGET_DIR CARGO_INCREMENTAL MTO_IMAGE_TAG
export PATH := $(MTO_BIN):$(PATH)
# Integration tests and kubectl talk to the local cluster.
CLUSTER_KUBECONFIG := $(MTO_STATE)/kubeconfig

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

.PHONY: generate
generate: ## regenerate the CRD YAML from the Rust types (crds/yaml, chart)
	hack/generate.sh

.PHONY: generate-check
generate-check: generate ## fail when generated files are stale
	@if [ -n "$$(git status --porcelain -- crds/yaml charts)" ]; then git status --short -- crds/yaml charts; echo "generated files are stale: run make generate and commit" >&2; exit 1; fi

.PHONY: fmt
fmt: ## format the Rust code
	cargo fmt --all

.PHONY: fmt-check
fmt-check:
	cargo fmt --all -- --check

.PHONY: lint
lint: ## clippy with warnings denied
	cargo clippy --workspace --all-targets --locked -- -D warnings

.PHONY: unit
unit: ## unit and HTTP-level tests (no cluster)
	cargo test --workspace --exclude mcp-task-operator-tests --locked

.PHONY: fuzz
fuzz: ## cargo-fuzz: 1,000,000 executions of each target (request path, tool-output parser)
	FUZZ_RUNS=1000000 hack/fuzz.sh

.PHONY: fuzz-smoke
fuzz-smoke: ## cargo-fuzz: a short bounded run of each target (25 s), as make test runs it
	FUZZ_SECONDS=25 hack/fuzz.sh

.PHONY: k8s-bins
k8s-bins: ## build (or reuse) the Kubernetes, etcd and helm binaries
	hack/build-k8s.sh

.PHONY: kwok-bin
kwok-bin: ## build (or reuse) the KWOK controller for fake nodes
	hack/build-kwok.sh

.PHONY: kwok-up
kwok-up: ## fake nodes on the running local cluster: make kwok-up NODES=50 (default 2)
	hack/kwok.sh start $(or $(NODES),2)

.PHONY: kwok-down
kwok-down: ## delete the fake nodes and stop kwok
	hack/kwok.sh stop

.PHONY: kueue-up
kueue-up: ## Kueue on the running local cluster (built from the Go module proxy, then cached)
	hack/kueue.sh start

.PHONY: kueue-down
kueue-down: ## remove Kueue (its CRDs, queues and workloads) from the running local cluster
	hack/kueue.sh stop

# Not in `make test` yet: a cold kwok build adds about 10 min to a fresh machine's run.
.PHONY: kwok-test
kwok-test: ## fake-node tests on the running local cluster (starts kwok with 2 nodes)
	hack/kwok.sh start
	hack/build-debug.sh
	MTO_OPERATOR_BIN=$(CARGO_TARGET_DIR)/debug/mcp-task-operator \
	KUBECONFIG=$(CLUSTER_KUBECONFIG) cargo test -p mcp-task-operator-tests --locked --test kwok -- --ignored

.PHONY: sbom
sbom: ## CycloneDX SBOM of each shipped binary into $(CARGO_TARGET_DIR)/sbom (docs/RELEASING.md)
	hack/sbom.sh

.PHONY: cluster-up
cluster-up: ## start the local single-node cluster (KUBECONFIG=.state/kubeconfig)
	hack/cluster-up.sh

.PHONY: cluster-down
cluster-down: ## stop the local cluster and remove everything it made
	hack/cluster-down.sh

.PHONY: cluster-crash-test
cluster-crash-test: ## SIGKILL every component, then prove cluster-down leaves nothing and up works again
	hack/crash-test.sh

.PHONY: image
image: ## build and import an image: make image REF=localhost/x:v1 ARGS='--busybox --copy a:/a'
	hack/images.sh build $(REF) $(ARGS)

.PHONY: images
images: ## build the example tool images (imported when the cluster runs)
	examples/build-images.sh

.PHONY: integration
integration: ## integration and end-to-end tests against the running local cluster
	IMAGE_TAG=$(MTO_IMAGE_TAG) PROFILE=debug hack/build-images.sh
	examples/build-images.sh
	hack/kueue.sh start
	MTO_CLIENTS=$$(hack/clients.sh) MTO_SERVERS=$$(hack/mcp-servers.sh) \
	MTO_PROMTOOL=$$(hack/build-promtool.sh | tail -n 1) \
	MTO_JAEGER_BIN=$$(hack/build-jaeger.sh) \
	MTO_BRIDGE_BIN=$(CARGO_TARGET_DIR)/debug/mcp-bridge \
	MTO_CLI_BIN=$(CARGO_TARGET_DIR)/debug/kubectl-mcp \
	MTO_FRONTEND_BIN=$(CARGO_TARGET_DIR)/debug/mcp-task-frontend \
	MTO_OPERATOR_BIN=$(CARGO_TARGET_DIR)/debug/mcp-task-operator \
	KUBECONFIG=$(CLUSTER_KUBECONFIG) cargo test -p mcp-task-operator-tests --locked --no-fail-fast -- --test-threads=4

.PHONY: chaos
chaos: ## fault suite on the running cluster: SIGKILLs, API server restart, kubelet stop, partition, lost nodes (KWOK)
	IMAGE_TAG=$(MTO_IMAGE_TAG) PROFILE=debug hack/build-images.sh
	examples/build-images.sh
	$(MAKE) chaos-run
	$(MAKE) kwok-test

# The fault suite with the images already imported (`make test` runs it bounded, with
# MTO_CHAOS_SCALE=ci, after `integration` built them). Whatever the outcome, the components it
# stops are started again (a no-op when they run).
.PHONY: chaos-run
chaos-run:
	status=0; MTO_OPERATOR_BIN=$(CARGO_TARGET_DIR)/debug/mcp-task-operator \
	  KUBECONFIG=$(CLUSTER_KUBECONFIG) cargo test -p mcp-task-operator-tests --locked \
	  --test chaos -- --ignored --nocapture || status=$$?; \
	hack/cluster-ctl.sh start kube-apiserver >/dev/null || true; \
	hack/cluster-ctl.sh start kubelet >/dev/null || true; \
	exit $$status

.PHONY: load
load: ## mixed load on 2 front-end replicas for LOAD_SECONDS (600): errors, latency, memory
	IMAGE_TAG=$(MTO_IMAGE_TAG) PROFILE=debug hack/build-images.sh
	examples/build-images.sh
	KUBECONFIG=$(CLUSTER_KUBECONFIG) cargo test -p mcp-task-operator-tests --locked \
	  --test load -- --ignored --nocapture

# `make test` runs every tier. The cluster is started once and stopped at the end, also when a
# tier fails (MTO_KEEP_CLUSTER=1 leaves it running for a closer look); the release tier, whose
# chart must own the CRDs, gets a cluster of its own. hack/prebuild.sh builds what the later tiers
# need (Kubernetes, Kueue, Jaeger, kwok, the Dockerfile's images, the fuzz targets) in the
# background meanwhile, out of the CPU time the foreground leaves idle, which is why the tiers
# that need the most of it come last.
.PHONY: test
test: ## every tier: prune the build cache, fmt, generate check, clippy, unit, SBOMs, cluster up, integration, chaos (bounded), scale smoke, release (README's install, on a new cluster), fuzz smoke, cluster down, crash cleanup
	hack/prune-cache.sh
	hack/prebuild.sh start
	trap 'hack/prebuild.sh stop' EXIT; \
	$(MAKE) fmt-check generate-check lint unit sbom; \
	$(MAKE) cluster-up; \
	status=0; $(MAKE) integration || status=$$?; \
	[ $$status -ne 0 ] || MTO_CHAOS_SCALE=ci $(MAKE) chaos-run || status=$$?; \
	[ $$status -ne 0 ] || $(MAKE) scale-smoke || status=$$?; \
	[ $$status -ne 0 ] || $(MAKE) cluster-down cluster-up release-test || status=$$?; \
	[ $$status -ne 0 ] || $(MAKE) fuzz-smoke || status=$$?; \
	cat $(MTO_CACHE)/prebuild/log 2>/dev/null || true; \
	if [ -n "$${MTO_KEEP_CLUSTER:-}" ]; then exit $$status; fi; \
	$(MAKE) cluster-down; hack/check-clean.sh; \
	[ $$status -ne 0 ] || $(MAKE) cluster-crash-test; \
	exit $$status

.PHONY: release-test
release-test: ## README's "On an existing cluster" block on a fresh local cluster (images from the Dockerfile, chart as OCI, by digest), helm test, a tool call, the e2e suite on the release
	hack/release-test.sh

.PHONY: up
up: ## cluster, images, Helm chart, example tools, then a demo task driven to completion
	hack/up.sh

.PHONY: bench
bench: ## benchmarks, each figure beside a baseline (local cluster; results in $CARGO_TARGET_DIR/bench/results.md, docs/BENCHMARKS.md)
	hack/bench.sh

.PHONY: scale-smoke
scale-smoke: ## a small `make scale`: 150 tasks at once on 10 KWOK fake nodes, debug operator; asserts results and API requests per task (tests/tests/scale_smoke.rs)
	hack/scale-smoke.sh

.PHONY: scale
scale: ## thousands of tasks on KWOK fake nodes beside bare Jobs (MTO_BENCH_FLEET=1000,5000; results in $CARGO_TARGET_DIR/bench/scale.md, docs/BENCHMARKS.md)
	hack/scale.sh

.PHONY: scale-long
scale-long: ## `make scale` with pods of 10 minutes, so that all 5,000 run at once (MTO_BENCH_FLEET=5000; about 35 min; results in $CARGO_TARGET_DIR/bench/scale-long.md)
	MTO_BENCH_FLEET=$${MTO_BENCH_FLEET:-5000} MTO_BENCH_FLEET_LONG=1 \
	  MTO_BENCH_OUT=$${MTO_BENCH_OUT:-$(CARGO_TARGET_DIR)/bench/scale-long.md} hack/scale.sh
