#!/usr/bin/env bash
# Images of two real MCP servers, built without a registry from their published packages
# (hack/mcp-servers.sh installs them, pinned), for the McpServers in this directory:
#   localhost/server-everything:2026.8.31  Node.js + @modelcontextprotocol/server-everything (npm)
#   localhost/mcp-server-time:2026.10.19   Python + mcp-server-time (PyPI)
# Neither image holds anything of ours: the operator's init container copies the bridge in.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
HACK=$HERE/../../hack
. "$HACK/versions.sh"
SERVERS=$("$HACK/mcp-servers.sh")
CLIENTS=$("$HACK/clients.sh")
USER_ID=65532:65532
# Built once per recipe and server install; later runs only import the archives.
KEY=$(cat "$0" "$HACK/mkimage.py" | sha256sum | cut -c1-12)-$(basename "$SERVERS")
STAMP=$MTO_CACHE/images/mcp-servers.key
SOCK=$MTO_STATE/containerd/containerd.sock
if [ "$(cat "$STAMP" 2>/dev/null)" = "$KEY" ]; then
  for tar in server-everything_2026.8.31 mcp-server-time_2026.10.19; do
    if [ -S "$SOCK" ]; then
      ctr --address "$SOCK" -n k8s.io images import "$MTO_CACHE/images/localhost_$tar.tar" >/dev/null
      echo "imported $MTO_CACHE/images/localhost_$tar.tar"
    fi
  done
  exit 0
fi
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

# server-everything: the node binary (with the libraries it links) and the package tree.
"$HACK/images.sh" build localhost/server-everything:2026.8.31 \
  --binary "$(readlink -f "$CLIENTS/node22"):/usr/local/bin/node" \
  --copy "$SERVERS/npm/node_modules:/app/node_modules" \
  --env PATH=/usr/local/bin:/usr/bin:/bin --env HOME=/tmp --user "$USER_ID"

# mcp-server-time: the interpreter of its virtualenv at /usr/local/bin/python3, the standard
# library beside it (Python finds it there), without tests and tools, and the virtualenv's
# packages as its site-packages; every extension module brings the libraries it links.
py=$SERVERS/py/bin/python
read -r exe stdlib purelib < <("$py" -c 'import os,sys,sysconfig; p=sysconfig.get_paths(); print(os.path.realpath(sys.executable), p["stdlib"], p["purelib"])')
lib=$STAGE/usr/local/lib/python3.11
"$py" - "$stdlib" "$purelib" "$lib" <<'PY'
import shutil, sys
stdlib, purelib, dest = sys.argv[1:]
skip = shutil.ignore_patterns("site-packages", "dist-packages", "test", "tests", "idlelib",
    "tkinter", "turtledemo", "ensurepip", "lib2to3", "__pycache__", "config-3.*", "pip", "pip-*",
    "setuptools", "setuptools-*", "_distutils_hack")
shutil.copytree(stdlib, dest, ignore=skip, symlinks=False)
shutil.copytree(purelib, dest + "/site-packages", ignore=skip, symlinks=False)
PY
binaries=(--binary "$exe:/usr/local/bin/python3")
while IFS= read -r so; do
  binaries+=(--binary "$so:/usr/local/lib/python3.11/${so#"$lib"/}")
done < <(find "$lib" -name '*.so' -type f)
"$HACK/images.sh" build localhost/mcp-server-time:2026.10.19 \
  --copy "$STAGE/usr:/usr" "${binaries[@]}" \
  --env PATH=/usr/local/bin:/usr/bin:/bin --env HOME=/tmp --env PYTHONDONTWRITEBYTECODE=1 \
  --user "$USER_ID"
echo "$KEY" >"$STAMP"
