#!/bin/sh
# restock-report: recounts the stock of 64 products one by one and reports those below a
# threshold. A tool for mcp-task-operator, written against the tool container contract (v1).
#
# Arguments (env MCP_TOOL_ARGUMENTS, a JSON object):
#   threshold  integer 0..1000, default 10: report products with fewer units than this
#   delayMs    integer 0..60000, default 200: time taken to recount one product
# Output: a status message after each product, then one result message. A cancel request stops
# the recount after the current product with a last status message and exit 0 (no result: the
# operator reports the task cancelled). Bad arguments print an explanation and exit 2, which the
# operator reports as a tool error (completed, isError: true), as MCP wants for input errors.
#
# Stock is deterministic so that tests can assert the result: product i (1..64) is SKU-000i with
# (i * 37 + 11) % 50 units.
set -u
# shellcheck source=examples/lib/mcp.sh
. "${MCP_LIB:-/usr/local/lib/mcp/mcp.sh}"

PRODUCTS=64

fail_arguments() {
  echo "restock-report: $1"
  exit 2
}

args=${MCP_TOOL_ARGUMENTS:-}
[ -n "$args" ] || args='{}'
case $(mcp_json_get "$args") in
\{*) ;;
*) fail_arguments "invalid arguments: expected a JSON object, got $args" ;;
esac

# int_arg NAME DEFAULT MAX: the integer argument NAME, or DEFAULT when absent or null.
int_arg() {
  raw=$(mcp_json_get "$args" "$1") || raw=null
  if [ "$raw" = null ]; then
    echo "$2"
  else
    mcp_int "$1" "$raw" 0 "$3"
  fi
}
threshold=$(int_arg threshold 10 1000) || fail_arguments "$threshold"
delay_ms=$(int_arg delayMs 200 60000) || fail_arguments "$delay_ms"

echo "restock-report: recounting $PRODUCTS SKUs, ${delay_ms} ms each, threshold $threshold"
stop() {
  mcp_status "cancelled after recounting $1 of $PRODUCTS SKUs"
  echo "restock-report: cancel requested; stopped after $1 SKUs"
  exit 0
}

low_json=
low_text=
low_count=0
i=1
while [ "$i" -le "$PRODUCTS" ]; do
  mcp_cancelled && stop $((i - 1))
  mcp_sleep_ms "$delay_ms" || stop $((i - 1))
  count=$(((i * 37 + 11) % 50))
  if [ "$count" -lt "$threshold" ]; then
    sku=$(printf 'SKU-%04d' "$i")
    low_json="$low_json${low_json:+,}{\"sku\":\"$sku\",\"count\":$count}"
    low_text="$low_text${low_text:+, }$sku ($count)"
    low_count=$((low_count + 1))
  fi
  mcp_status "recounted $i of $PRODUCTS SKUs"
  i=$((i + 1))
done

if [ "$low_count" -eq 0 ]; then
  summary="All $PRODUCTS SKUs have at least $threshold units; nothing to restock."
else
  summary="$low_count of $PRODUCTS SKUs have fewer than $threshold units: $low_text."
fi
structured="{\"threshold\":$threshold,\"recounted\":$PRODUCTS,\"lowStock\":[$low_json]}"
# The structured content again as text (MCP: a tool returning structuredContent should also
# return it serialized in a text block). It holds no backslashes, so escaping quotes suffices.
structured_text=$(printf '%s' "$structured" | sed 's/"/\\"/g')
mcp_send result "$(printf '"result":{"content":[{"type":"text","text":"%s"},{"type":"text","text":"%s"}],"structuredContent":%s,"isError":false}' \
  "$summary" "$structured_text" "$structured")"
