#!/usr/bin/env bash
# Builds the debug binaries the test tiers run (operator, front end, kubectl-mcp, bridge, ...).
#
# Cargo resolves features per command: `cargo build --bin x` leaves the dev-dependencies'
# features out (tokio's test-util, opentelemetry_sdk's testing), so tokio and every crate above
# it (hyper, kube, axum, rmcp, ...) would be compiled once more beside what `make unit` compiled.
# Building the workspace's targets, tests included, resolves them as `make unit` and the tests
# crate do (tests/Cargo.toml), and only the binaries themselves are new. The tests crate is left
# to the tier that runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --workspace --exclude mcp-task-operator-tests --all-targets
