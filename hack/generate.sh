#!/usr/bin/env bash
# Regenerates the CRD YAML from the Rust types (crds/src) into crds/yaml/, and copies it to
# where the Helm chart's CRD template reads it (files/crds/). CI runs this and fails on a
# `git diff`.
set -euo pipefail
cd "$(dirname "$0")/.."

rm -rf crds/yaml
mkdir -p crds/yaml
cargo run -q -p mcp-task-operator-crds --bin crdgen -- crds/yaml

rm -rf charts/mcp-task-operator/crds charts/mcp-task-operator/files/crds
mkdir -p charts/mcp-task-operator/files/crds
cp crds/yaml/*.yaml charts/mcp-task-operator/files/crds/
echo "generated: $(ls crds/yaml | tr '\n' ' ')"
