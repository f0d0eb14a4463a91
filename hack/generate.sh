#!/usr/bin/env bash
# Regenerates the CRD YAML from the Rust types (crds/src) into crds/yaml/, and copies it to
# where the Helm chart installs CRDs from. CI runs this and fails on a `git diff`.
set -euo pipefail
cd "$(dirname "$0")/.."

rm -rf crds/yaml
mkdir -p crds/yaml
cargo run -q -p mcp-task-operator-crds --bin crdgen -- crds/yaml

mkdir -p charts/mcp-task-operator/crds
rm -f charts/mcp-task-operator/crds/mcptools.yaml charts/mcp-task-operator/crds/mcptasks.yaml
cp crds/yaml/*.yaml charts/mcp-task-operator/crds/
echo "generated: $(ls crds/yaml | tr '\n' ' ')"
