# The script of the chart's `helm test` pod (templates/tests/call-tool.yaml): an MCP client in
# sh and curl. Settings come from the environment (MCP_HOST, MCP_PORT, MCP_SERVICE_IP,
# TOOL, ARGUMENTS, TIMEOUT_SECONDS, CLIENT_VERSION); nothing in it is evaluated as shell code.
set -eu
url="http://$MCP_HOST:$MCP_PORT/mcp"
ip=$MCP_SERVICE_IP
case "$ip" in '$('*) ip="" ;; esac
token=""
[ -r /var/run/mcp-test/token ] && token=$(cat /var/run/mcp-test/token)
meta="\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}},\"io.modelcontextprotocol/clientInfo\":{\"name\":\"helm-test\",\"version\":\"$CLIENT_VERSION\"}}"

# mcp METHOD NAME PARAMS: one JSON-RPC request (PARAMS: members without braces), the answer on stdout.
mcp() {
  set -- "$1" "$2" "$3" -sS --max-time 30 -o - -w '\n%{http_code}' \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $1"
  [ -n "$2" ] && set -- "$@" -H "Mcp-Name: $2"
  [ -n "$token" ] && set -- "$@" -H "Authorization: Bearer $token"
  [ -n "$ip" ] && set -- "$@" --resolve "$MCP_HOST:$MCP_PORT:$ip"
  method=$1 params=$3
  shift 3
  curl "$@" --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$method\",\"params\":{$params${params:+,}$meta}}" "$url"
}

# field NAME: the first string value of "NAME" in the answer on stdin.
field() { grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | cut -d '"' -f 4; }

fail() { echo "FAIL: $*"; exit 1; }

answer=$(mcp tools/list "" "")
code=$(echo "$answer" | tail -n 1)
echo "tools/list: HTTP $code"
[ "$code" = 200 ] || fail "tools/list answered HTTP $code: $answer"
echo "$answer" | grep -q '"tools"' || fail "tools/list has no tools member: $answer"
[ -n "$TOOL" ] || { echo "PASS: the front end answers (no test.tool to call)"; exit 0; }
echo "$answer" | grep -q "\"name\":\"$TOOL\"" || fail "$TOOL is not listed to this caller: $answer"

answer=$(mcp tools/call "$TOOL" "\"name\":\"$TOOL\",\"arguments\":$ARGUMENTS")
echo "tools/call $TOOL: $(echo "$answer" | head -c 400)"
task=$(echo "$answer" | field taskId)
deadline=$(( $(date +%s) + TIMEOUT_SECONDS ))
while [ -n "$task" ]; do
  status=$(echo "$answer" | field status)
  case "$status" in
    completed) break ;;
    failed|cancelled|input_required) fail "task $task ended $status: $answer" ;;
  esac
  [ "$(date +%s)" -lt "$deadline" ] || fail "task $task still $status after $TIMEOUT_SECONDS s"
  sleep 1
  answer=$(mcp tasks/get "$task" "\"taskId\":\"$task\"")
  echo "tasks/get: $(echo "$answer" | field status) $(echo "$answer" | field statusMessage)"
done
echo "$answer" | grep -q '"isError":true' && fail "the tool reported an error: $answer"
echo "$answer" | grep -q '"error"' && fail "the call failed: $answer"
echo "PASS: $TOOL completed: $(echo "$answer" | head -c 400)"
