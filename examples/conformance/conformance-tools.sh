#!/bin/sh
# The fixture tools the official MCP conformance suite's tasks scenarios call
# (@modelcontextprotocol/conformance, SEP-2663), as one image for mcp-task-operator. The tool to
# run is MCP_TOOL_NAME (or the first argument, for running by hand); see README.md.
#
#   greet               {name} -> "Hello, {name}!" (registered taskSupport: forbidden)
#   slow_compute        {seconds, label}: sleeps, then a result; stops promptly on cancel
#   failing_job         ~1 s, then exits 1: a tool error (completed, isError: true)
#   protocol_error_job  an {"mcp":"error"} message: the task fails with a JSON-RPC error
#   confirm_delete      {filename}: asks to confirm (input key confirm-1), then completes
#   multi_input         asks two questions at once (keys name-1 and confirm-1), then completes
#   test_tool_with_task the front end asks startInputs.user_name before the task exists; the
#                       answer arrives in MCP_START_INPUTS and the result greets that name
#
# and the fixtures of the suite's core 2026-07-28 scenarios (core-mcptools.yaml), each a
# synchronous call that returns the CallToolResult its scenario names at once:
#
#   test_simple_text, test_streaming_elicitation, json_schema_2020_12_tool   one text
#   test_image_content, test_audio_content, test_embedded_resource          one image/audio/resource
#   test_multiple_content_types  text, image and resource
#   test_error_handling          a tool error (isError: true)
#   test_logging_tool            a log line, then a text
#   test_input_required_result_elicitation   greets the name of startInputs.user_name
#   test_custom_headers          {region} -> "Region: <its JSON>"
#   test_trigger_tool_change     rewrites its own McpTool's description through the Kubernetes
#                                API (its service account may patch that one object), so the
#                                tool list changes; needs curl (the image is busybox + curl)
set -u
# shellcheck source=examples/lib/mcp.sh
. "${MCP_LIB:-/usr/local/lib/mcp/mcp.sh}"

args=${MCP_TOOL_ARGUMENTS:-}
[ -n "$args" ] || args='{}'
tool=${1:-${MCP_TOOL_NAME:-}}

# string_arg NAME DEFAULT: the string argument NAME, JSON-escaped (fit for a JSON string).
string_arg() {
  raw=$(mcp_json_get "$args" "$1") && mcp_json_string "$raw" || printf '%s' "$2"
}

# result TEXT [STRUCTURED]: prints a successful result; TEXT must already be JSON-escaped.
result() {
  if [ -n "${2:-}" ]; then
    mcp_send result "$(printf '"result":{"content":[{"type":"text","text":"%s"}],"structuredContent":%s,"isError":false}' "$1" "$2")"
  else
    mcp_send result "$(printf '"result":{"content":[{"type":"text","text":"%s"}],"isError":false}' "$1")"
  fi
}

# cancelled WHAT: the last words of a cancelled tool (WHAT JSON-escaped). No result message: the
# operator reports the task cancelled once the container has stopped.
cancelled() {
  mcp_status_escaped "cancelled: $1"
  exit 0
}

# ask KEY MESSAGE PROPERTY TYPE: one elicitation/create form request, as a JSON object member.
ask() {
  printf '"%s":{"method":"elicitation/create","params":{"mode":"form","message":"%s","requestedSchema":{"type":"object","properties":{"%s":{"type":"%s"}},"required":["%s"]}}}' \
    "$1" "$2" "$3" "$4" "$3"
}

# answer KEY PATH: the raw JSON at PATH in the client's answer to KEY ("" when absent).
answer() {
  mcp_json_get "$(mcp_input_responses)" "$1${2:+.$2}" || true
}

greet() {
  result "Hello, $(string_arg name World)!"
}

slow_compute() {
  label=$(string_arg label slow_compute)
  raw=$(mcp_json_get "$args" seconds) || raw=0
  # Seconds may be fractional; work in tenths of a second.
  tenths=$(printf '%s' "$raw" | awk '/^(0|[1-9][0-9]*)(\.[0-9]+)?$/ { printf "%d", $1 * 10 + 0.5; exit } { exit 1 }') || {
    echo "slow_compute: invalid argument seconds: expected a number from 0 to 3600, got $raw"
    exit 2
  }
  [ "$tenths" -le 36000 ] || {
    echo "slow_compute: invalid argument seconds: expected a number from 0 to 3600, got $raw"
    exit 2
  }
  t=0
  while [ "$t" -lt "$tenths" ]; do
    mcp_sleep_ms 100 || cancelled "$label stopped after $((t / 10)).$((t % 10)) s"
    t=$((t + 1))
    [ $((t % 10)) -eq 0 ] && mcp_status_escaped "$label: $((t / 10)) of $raw s"
  done
  result "Computed $label in $raw s" "{\"label\":\"$label\",\"seconds\":$raw}"
}

failing_job() {
  mcp_status "working on a job that is going to fail"
  mcp_sleep_ms 1000 || cancelled "failing_job stopped"
  echo "failing_job: the job failed on purpose (exit status 1)"
  exit 1
}

protocol_error_job() {
  mcp_sleep_ms 500 || cancelled "protocol_error_job stopped"
  mcp_send error '"error":{"code":-32603,"message":"protocol_error_job: internal error raised on purpose","data":{"fixture":"protocol_error_job"}}'
}

confirm_delete() {
  filename=$(string_arg filename file)
  mcp_send input "\"requests\":{$(ask confirm-1 "Delete $filename? This cannot be undone." confirm boolean)}"
  mcp_wait_input confirm-1 || cancelled "no answer to the delete confirmation"
  action=$(mcp_json_string "$(answer confirm-1 action)") || action=none
  if [ "$action" = accept ] && [ "$(answer confirm-1 content.confirm)" = true ]; then
    result "Deleted $filename" "{\"filename\":\"$filename\",\"deleted\":true}"
  else
    result "Kept $filename: deletion not confirmed (action: $action)" \
      "{\"filename\":\"$filename\",\"deleted\":false}"
  fi
}

multi_input() {
  mcp_send input "\"requests\":{$(ask name-1 "What is your name?" name string),$(ask confirm-1 "Shall I go on?" confirm boolean)}"
  mcp_wait_input name-1 confirm-1 || cancelled "the questions were not answered"
  name=$(answer name-1 content.name)
  name=$(mcp_json_string "$name") || name=stranger
  confirm=false
  [ "$(answer confirm-1 content.confirm)" = true ] && confirm=true
  result "Hello, $name! Go on: $confirm." "{\"name\":\"$name\",\"confirm\":$confirm}"
}

test_tool_with_task() {
  answers=${MCP_START_INPUTS:-'{}'}
  name=$(mcp_json_get "$answers" user_name.content.name) && name=$(mcp_json_string "$name") ||
    name=anonymous
  mcp_status_escaped "greeting $name"
  mcp_sleep_ms 1000 || cancelled "greeting $name"
  result "Hello, $name! The task finished for you."
}

# The core fixtures' payloads: a 1x1 red PNG and a WAV file holding one silent 8 kHz sample.
PNG=iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==
WAV=UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==
IMAGE="{\"type\":\"image\",\"data\":\"$PNG\",\"mimeType\":\"image/png\"}"

# content JSON [IS_ERROR]: prints a result whose content array is JSON.
content() {
  mcp_send result "\"result\":{\"content\":$1,\"isError\":${2:-false}}"
}

# text TEXT [IS_ERROR]: prints a result holding one text (TEXT already JSON-escaped).
text() {
  content "[{\"type\":\"text\",\"text\":\"$1\"}]" "${2:-false}"
}

# resource URI MIME TEXT: one embedded text resource (TEXT already JSON-escaped).
resource() {
  printf '{"type":"resource","resource":{"uri":"%s","mimeType":"%s","text":"%s"}}' "$1" "$2" "$3"
}

simple_text() {
  text "This is a simple text response for testing."
}

test_image_content() {
  content "[$IMAGE]"
}

test_audio_content() {
  content "[{\"type\":\"audio\",\"data\":\"$WAV\",\"mimeType\":\"audio/wav\"}]"
}

test_embedded_resource() {
  content "[$(resource test://embedded-resource text/plain \
    'This is an embedded resource content.')]"
}

test_multiple_content_types() {
  content "[{\"type\":\"text\",\"text\":\"Multiple content types test:\"},$IMAGE,$(resource \
    test://mixed-content-resource application/json '{\"test\":\"data\",\"value\":123}')]"
}

test_error_handling() {
  text "This tool intentionally returns an error for testing" true
}

test_logging_tool() {
  echo "test_logging_tool: this line is a log line, kept in the pod's log"
  text "Logged to stdout only."
}

test_input_required_result_elicitation() {
  answers=${MCP_START_INPUTS:-'{}'}
  name=$(mcp_json_get "$answers" user_name.content.name) && name=$(mcp_json_string "$name") ||
    name=stranger
  text "Hello, $name!"
}

test_custom_headers() {
  raw=$(mcp_json_get "$args" region) || raw=null
  text "Region: $(mcp_json_escape "$raw")"
}

# test_trigger_tool_change: merge-patches the description of this tool's own McpTool (named by
# the pod label mcptasks.io/tool, in MCPTOOL_NAME) with the pod's service-account token, so
# the tool list changes, as it would for a tool that registers tools. A failed patch is a tool
# error.
test_trigger_tool_change() {
  sa=/var/run/secrets/kubernetes.io/serviceaccount
  self=${MCPTOOL_NAME:?the McpTool template sets MCPTOOL_NAME}
  host=${KUBERNETES_SERVICE_HOST:?not running in a pod}
  case $host in *:*) host="[$host]" ;; esac
  url="https://$host:${KUBERNETES_SERVICE_PORT:-443}/apis/mcptasks.io/v1alpha1"
  url="$url/namespaces/$(cat "$sa/namespace")/mcptools/$self"
  description="Changes the tool list: each call rewrites this description (last: ${MCP_TASK_ID:-})."
  out=$(curl -sS --max-time 10 --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" \
    -H 'Content-Type: application/merge-patch+json' -X PATCH -w '\n%{http_code}' \
    --data "{\"spec\":{\"description\":\"$description\"}}" "$url" 2>&1)
  if [ "$(printf '%s' "$out" | tail -n 1)" != 200 ]; then
    echo "test_trigger_tool_change: cannot patch McpTool $self: $(printf '%s' "$out" | tr '\n' ' ')"
    exit 1
  fi
  echo "test_trigger_tool_change: patched the description of McpTool $self"
  text "The tool list changed."
}

case $tool in
greet | slow_compute | failing_job | protocol_error_job | confirm_delete | multi_input | \
  test_tool_with_task | test_image_content | test_audio_content | test_embedded_resource | \
  test_multiple_content_types | test_error_handling | test_logging_tool | \
  test_input_required_result_elicitation | test_custom_headers | test_trigger_tool_change)
  "$tool"
  ;;
test_simple_text | test_streaming_elicitation | json_schema_2020_12_tool)
  simple_text
  ;;
*)
  echo "conformance-tools: unknown tool '$tool' (MCP_TOOL_NAME); expected one of the tools" \
    "listed at the top of $0"
  exit 2
  ;;
esac
