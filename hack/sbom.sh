#!/usr/bin/env bash
# Writes a CycloneDX JSON SBOM for each shipped binary (mcp-task-operator, mcp-task-frontend,
# mcp-bridge) to $CARGO_TARGET_DIR/sbom/<binary>.cdx.json, with cargo-cyclonedx
# $CYCLONEDX_VERSION (installed once into ~/.cache/mcp-task-operator/cargo-cyclonedx-<version>).
# Each document is checked: valid JSON, CycloneDX, the binary as its subject and the crates it
# cannot be without among its components. docs/RELEASING.md says what to do with them.
set -euo pipefail
. "$(dirname "$0")/versions.sh"
cd "$REPO_ROOT"

CDX=$CYCLONEDX_ROOT/bin/cargo-cyclonedx
if [ ! -x "$CDX" ]; then
  echo "installing cargo-cyclonedx $CYCLONEDX_VERSION into $CYCLONEDX_ROOT (cold: a few minutes)" >&2
  cargo install cargo-cyclonedx --version "$CYCLONEDX_VERSION" --locked --root "$CYCLONEDX_ROOT" >&2
fi
OUT=${CARGO_TARGET_DIR:-$REPO_ROOT/target}/sbom
mkdir -p "$OUT"

# --describe binaries: one document per binary of the workspace, written beside its Cargo.toml as
# <binary>_bin.cdx.json; the three shipped ones are kept, the others removed.
"$CDX" cyclonedx --format json --describe binaries --spec-version 1.5 -q >&2
trap 'find "$REPO_ROOT" -name "*_bin.cdx.json" -not -path "*/target/*" -not -path "*/.state/*" -delete' EXIT

# check BINARY CRATE...: moves the binary's document to $OUT and checks it names every CRATE.
check() {
  local binary=$1
  shift
  find "$REPO_ROOT" -name "${binary}_bin.cdx.json" -not -path "*/target/*" -not -path "*/.state/*" \
    -exec mv {} "$OUT/$binary.cdx.json" \;
  python3 - "$OUT/$binary.cdx.json" "$binary" "$@" <<'PY'
import json, sys
path, binary, needed = sys.argv[1], sys.argv[2], sys.argv[3:]
doc = json.load(open(path))
assert doc["bomFormat"] == "CycloneDX", f"{path}: not CycloneDX"
subject = doc["metadata"]["component"]
assert subject["name"] == binary, f"{path}: describes {subject['name']}, not {binary}"
names = {c["name"] for c in doc.get("components", [])}
missing = [n for n in needed if n not in names]
assert not missing, f"{path}: no component {missing}"
print(f"{path}: {binary} {subject.get('version', '')}, {len(names)} components")
PY
}

check mcp-task-operator kube tokio serde_json
check mcp-task-frontend rmcp axum kube
check mcp-bridge tokio serde_json
