# shellcheck shell=sh
# Helpers for tools written against the tool container contract (v1) in POSIX sh, for busybox.
# Sourced by the example tools; copied into their images at /usr/local/lib/mcp/mcp.sh.
#
# The contract, in short:
#   env MCP_TASK_ID, MCP_TOOL_NAME, MCP_TOOL_ARGUMENTS (JSON object), MCP_START_INPUTS (JSON)
#   /var/run/mcp/cancel-requested  empty until the client cancels, then an RFC 3339 time
#   /var/run/mcp/input-responses   "{}" until the client answers, then {"<key>": <answer>, ...}
#   /var/run/mcp/message-nonce     only with messageNonce: true: the nonce every message carries
#                                  (env MCP_MESSAGE_NONCE instead in a warm pod, or when declared)
#   stdout: one JSON object per line with the key "mcp" is a message; anything else is a log line.
#   (docs/tool-contract.md has the whole contract.) Print messages with mcp_send: it signs them
#   with the nonce whenever there is one.
#
# JSON is handled as text: mcp_json_get returns a value's raw JSON text, so a string comes back
# with its quotes and escapes intact and can be put back into a JSON string without re-escaping.

# Directory of the contract's files. The override is for running a tool outside a pod.
MCP_RUN_DIR=${MCP_RUN_DIR:-/var/run/mcp}

# The task's message nonce (empty unless the McpTool sets messageNonce: true): the env var when
# set (a warm pod gets it with its claim), else the file. Read once: it never changes for the
# life of the pod.
MCP_NONCE=${MCP_MESSAGE_NONCE:-$(cat "$MCP_RUN_DIR/message-nonce" 2>/dev/null || true)}

# mcp_send KIND [MEMBERS]: prints one contract message {"mcp":"KIND",MEMBERS} on a line, signed
# with the task's nonce when there is one. MEMBERS is the rest of the JSON object without its
# braces, e.g. '"result":{"content":[]}'.
mcp_send() {
  if [ -n "$MCP_NONCE" ]; then
    printf '{"mcp":"%s","nonce":"%s"%s%s}\n' "$1" "$MCP_NONCE" "${2:+,}" "${2:-}"
  else
    printf '{"mcp":"%s"%s%s}\n' "$1" "${2:+,}" "${2:-}"
  fi
}

# mcp_json_get JSON [PATH]: prints the raw JSON text of the value at PATH, a dot-separated list
# of object keys (e.g. "user_name.content.name"; empty = the whole value). Returns 1 when a key
# is missing or the text on the way is not a JSON object. Keys are compared as written in the
# JSON text (escape sequences are not decoded), which is exact for plain ASCII keys.
mcp_json_get() {
  MCP_J=$1 MCP_P=${2:-} awk '
    function ws(i) { while (i <= n && index(" \t\r\n", substr(s, i, 1)) > 0) i++; return i }
    # i is at an opening quote; returns the index after the closing quote, 0 if unterminated.
    function strend(i,   c) {
      for (i++; i <= n; i++) {
        c = substr(s, i, 1)
        if (c == "\\") i++
        else if (c == "\"") return i + 1
      }
      return 0
    }
    # i is at the first character of a value; returns the index after it, 0 if malformed.
    function valend(i,   c, d) {
      c = substr(s, i, 1)
      if (c == "\"") return strend(i)
      if (c == "{" || c == "[") {
        for (d = 0; i <= n; ) {
          c = substr(s, i, 1)
          if (c == "\"") { i = strend(i); if (!i) return 0; continue }
          if (c == "{" || c == "[") d++
          else if (c == "}" || c == "]") { if (--d == 0) return i + 1 }
          i++
        }
        return 0
      }
      while (i <= n && index(",}] \t\r\n", substr(s, i, 1)) == 0) i++
      return i
    }
    BEGIN {
      s = ENVIRON["MCP_J"]; n = length(s)
      np = (ENVIRON["MCP_P"] == "") ? 0 : split(ENVIRON["MCP_P"], seg, ".")
      i = ws(1)
      for (k = 1; k <= np; k++) {
        if (substr(s, i, 1) != "{") exit 1
        i = ws(i + 1)
        for (;;) {
          if (substr(s, i, 1) != "\"") exit 1
          e = strend(i); if (!e) exit 1
          key = substr(s, i + 1, e - i - 2)
          i = ws(e); if (substr(s, i, 1) != ":") exit 1
          i = ws(i + 1)
          if (key == seg[k]) break
          e = valend(i); if (!e) exit 1
          i = ws(e)
          if (substr(s, i, 1) != ",") exit 1
          i = ws(i + 1)
        }
      }
      e = valend(i)
      if (!e || e == i) exit 1
      printf "%s", substr(s, i, e - i)
      exit 0
    }'
}

# mcp_json_string RAW: prints the contents of a JSON string (RAW without its quotes, escapes
# kept, so still valid inside a JSON string). Returns 1 when RAW is not a JSON string.
mcp_json_string() {
  case $1 in
  \"*\") ;;
  *) return 1 ;;
  esac
  MCP_RAW=$1 awk 'BEGIN { s = ENVIRON["MCP_RAW"]; printf "%s", substr(s, 2, length(s) - 2) }'
}

# mcp_json_escape TEXT: prints TEXT escaped for use inside a JSON string. Other control
# characters than tab, CR and LF are dropped.
mcp_json_escape() {
  MCP_T=$1 awk 'BEGIN {
    s = ENVIRON["MCP_T"]; n = length(s); out = ""
    for (i = 1; i <= n; i++) {
      c = substr(s, i, 1)
      if (c == "\\") out = out "\\\\"
      else if (c == "\"") out = out "\\\""
      else if (c == "\n") out = out "\\n"
      else if (c == "\t") out = out "\\t"
      else if (c == "\r") out = out "\\r"
      else if (c < " ") continue
      else out = out c
    }
    printf "%s", out
  }'
}

# mcp_int NAME RAW MIN MAX: prints RAW as a decimal integer if it is a JSON number with no
# fractional part (10, 10.0) from MIN to MAX; otherwise explains on stdout and returns 1.
mcp_int() {
  _mcp_v=$(printf '%s' "$2" | sed -n 's/^0*\([0-9][0-9]*\)\(\.0*\)\{0,1\}$/\1/p')
  case $_mcp_v in
  '' | ??????????*) _mcp_v= ;; # not an integer, or 10+ digits (beyond any bound used here)
  esac
  if [ -z "$_mcp_v" ] || [ "$_mcp_v" -lt "$3" ] || [ "$_mcp_v" -gt "$4" ]; then
    echo "invalid argument $1: expected an integer from $3 to $4, got $2"
    return 1
  fi
  printf '%s' "$_mcp_v"
}

# mcp_status TEXT: reports progress (the task's statusMessage).
mcp_status() {
  mcp_send status "\"message\":\"$(mcp_json_escape "$1")\""
}

# mcp_status_escaped TEXT: the same, for TEXT that is already JSON-escaped (e.g. built from
# string arguments as mcp_json_string returns them).
mcp_status_escaped() {
  mcp_send status "\"message\":\"$1\""
}

# mcp_cancelled: true once the client has asked to cancel the task.
mcp_cancelled() {
  [ -s "$MCP_RUN_DIR/cancel-requested" ]
}

# mcp_sleep_ms MS: sleeps MS milliseconds in steps of at most 100 ms; returns 1 as soon as a
# cancel is requested.
mcp_sleep_ms() {
  _mcp_left=$1
  while [ "$_mcp_left" -gt 0 ]; do
    mcp_cancelled && return 1
    _mcp_step=$((_mcp_left < 100 ? _mcp_left : 100))
    usleep $((_mcp_step * 1000))
    _mcp_left=$((_mcp_left - _mcp_step))
  done
  ! mcp_cancelled
}

# mcp_input_responses: prints the client's answers so far (a JSON object; "{}" when none).
mcp_input_responses() {
  cat "$MCP_RUN_DIR/input-responses" 2>/dev/null || printf '{}'
}

# mcp_wait_input KEY...: waits until every KEY has an answer in input-responses, polling every
# 200 ms. Returns 0 when all are answered, 1 if a cancel is requested first.
mcp_wait_input() {
  while :; do
    mcp_cancelled && return 1
    _mcp_responses=$(mcp_input_responses)
    _mcp_all=1
    for _mcp_key in "$@"; do
      mcp_json_get "$_mcp_responses" "$_mcp_key" >/dev/null || { _mcp_all=0; break; }
    done
    [ "$_mcp_all" = 1 ] && return 0
    usleep 200000
  done
}
