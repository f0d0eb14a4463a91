//! The table's rows: each bad request and the exact answer it must get.

use super::*;

/// `_meta` declaring the tasks extension.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS_EXTENSION: {} } },
        "io.modelcontextprotocol/clientInfo": { "name": "bad-input", "version": "0" },
    })
}

fn rpc(method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = meta();
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
        .to_string()
        .into_bytes()
}

/// The headers a well-behaved client sends for `method` (and `Mcp-Name`, when given).
fn headers(method: &str, name: Option<&[u8]>) -> Vec<(&'static str, Vec<u8>)> {
    let mut headers = vec![
        ("content-type", b"application/json".to_vec()),
        ("accept", b"application/json, text/event-stream".to_vec()),
        ("mcp-protocol-version", PROTOCOL_VERSION.as_bytes().to_vec()),
        ("mcp-method", method.as_bytes().to_vec()),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name.to_vec()));
    }
    headers
}

fn without(mut headers: Vec<(&'static str, Vec<u8>)>, name: &str) -> Vec<(&'static str, Vec<u8>)> {
    headers.retain(|(n, _)| *n != name);
    headers
}

fn with(
    mut headers: Vec<(&'static str, Vec<u8>)>,
    name: &'static str,
    value: &str,
) -> Vec<(&'static str, Vec<u8>)> {
    headers.retain(|(n, _)| *n != name);
    headers.push((name, value.as_bytes().to_vec()));
    headers
}

/// A `tools/call` of `tool` with `arguments` and its matching headers.
fn call(tool: &str, arguments: Value) -> (Vec<(&'static str, Vec<u8>)>, Vec<u8>) {
    let body = rpc(
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    );
    (headers("tools/call", Some(tool.as_bytes())), body)
}

fn nested_array(depth: usize, leaf: &str) -> String {
    format!("{}{leaf}{}", "[".repeat(depth), "]".repeat(depth))
}

/// The MCP header encoding of a value that is not plain ASCII.
fn base64_sentinel(value: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("=?base64?");
    for chunk in value.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out.push_str("?=");
    out.into_bytes()
}

/// Every row of the table.
pub(super) fn rows() -> Vec<Row> {
    let parse = |m: &str| Expect::Rpc(400, -32700, exact(format!("Parse error: {m}")));
    let invalid_request = |detail: &'static str| {
        Expect::Rpc(
            400,
            -32600,
            Msg::Like(
                "Invalid Request: not a JSON-RPC 2.0 request or notification this server reads: ",
                detail,
            ),
        )
    };
    let greet = rpc(
        "tools/call",
        json!({ "name": "greet", "arguments": { "name": "Ada" } }),
    );
    let greet_headers = headers("tools/call", Some(b"greet"));
    let bad_utf8: Vec<u8> = String::from_utf8_lossy(&greet)
        .replace("Ada", "A\u{1}")
        .bytes()
        .map(|b| if b == 1 { 0xff } else { b })
        .collect();
    let bad_utf8_at = bad_utf8.iter().position(|&b| b == 0xff).expect("0xff");
    let deep_prefix = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"#;
    let mut rows = vec![
        // --- bodies that are not JSON, or not JSON-RPC ---
        Row::new("empty body", greet_headers.clone(), Vec::new(), parse("EOF while parsing a value at line 1 column 0")),
        Row::new("truncated JSON", greet_headers.clone(), greet[..40].to_vec(), parse("EOF while parsing a string at line 1 column 40")),
        Row::new(
            "malformed JSON (trailing comma)",
            greet_headers.clone(),
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call",}"#.to_vec(),
            parse("trailing comma at line 1 column 47"),
        ),
        Row::new(
            "two JSON values in one body",
            greet_headers.clone(),
            [greet.clone(), b" {}".to_vec()].concat(),
            parse(&format!("trailing characters at line 1 column {}", greet.len() + 2)),
        ),
        Row::new(
            "invalid UTF-8 inside a string",
            greet_headers.clone(),
            bad_utf8.clone(),
            parse(&format!("invalid unicode code point at line 1 column {}", bad_utf8_at + 1)),
        ),
        Row::new(
            "UTF-16 body",
            greet_headers.clone(),
            String::from_utf8_lossy(&greet).encode_utf16().flat_map(u16::to_le_bytes).collect(),
            parse("key must be a string at line 1 column 2"),
        ),
        Row::new(
            "arguments nested 10,000 deep",
            greet_headers.clone(),
            format!("{deep_prefix}{}}}}}}}", nested_array(10_000, "1")).into_bytes(),
            // Three objects and 125 arrays reach serde_json's nesting limit of 128.
            parse(&format!("recursion limit exceeded at line 1 column {}", deep_prefix.len() + 125)),
        ),
        Row::new("a JSON-RPC batch", greet_headers.clone(), [b"[", &greet[..], b"]"].concat(), Expect::Rpc(400, -32600, exact("Invalid Request: JSON-RPC batches are not supported; send one message per POST"))),
        Row::new("no method and no result", greet_headers.clone(), br#"{"jsonrpc":"2.0","id":1}"#.to_vec(), invalid_request("unrecognized JSON-RPC message")),
        Row::new("a JSON string", greet_headers.clone(), br#""tools/call""#.to_vec(), invalid_request("")),
        // --- sizes ---
        Row::new("body over MAX_BODY_BYTES with Content-Length", greet_headers.clone(), vec![b' '; MAX_BODY + 1], Expect::Text(413, "length limit exceeded")),
        Row {
            name: "body over MAX_BODY_BYTES, chunked".into(),
            headers: greet_headers.clone(),
            body: vec![b' '; 2 * MAX_BODY],
            chunked: true,
            expect: Expect::Text(413, "Payload Too Large: request body exceeds 1048576 bytes"),
        },
        // --- content types and Accept ---
        Row::new("Content-Type text/plain", with(greet_headers.clone(), "content-type", "text/plain"), greet.clone(), Expect::Text(415, "Unsupported Media Type: Content-Type must be application/json")),
        Row::new("no Content-Type", without(greet_headers.clone(), "content-type"), greet.clone(), Expect::Text(415, "Unsupported Media Type: Content-Type must be application/json")),
        Row::new(
            "form-encoded body",
            with(greet_headers.clone(), "content-type", "application/x-www-form-urlencoded"),
            b"jsonrpc=2.0&method=tools/call".to_vec(),
            Expect::Text(415, "Unsupported Media Type: Content-Type must be application/json"),
        ),
        Row::new(
            "Accept without text/event-stream",
            with(greet_headers.clone(), "accept", "application/json"),
            greet.clone(),
            Expect::Text(406, "Not Acceptable: Client must accept both application/json and text/event-stream"),
        ),
        // --- MCP headers ---
        Row::new(
            "no MCP-Protocol-Version header",
            without(greet_headers.clone(), "mcp-protocol-version"),
            greet.clone(),
            Expect::Rpc(400, -32020, exact("request _meta protocolVersion requires MCP-Protocol-Version header")),
        ),
        Row::new(
            "MCP-Protocol-Version disagreeing with _meta",
            with(greet_headers.clone(), "mcp-protocol-version", "2025-06-18"),
            greet.clone(),
            Expect::Rpc(400, -32020, exact("MCP-Protocol-Version header (2025-06-18) does not match request _meta protocolVersion (2026-07-28)")),
        ),
        Row::new("no Mcp-Method header", without(greet_headers.clone(), "mcp-method"), greet.clone(), Expect::Rpc(400, -32020, exact("missing required Mcp-Method header"))),
        Row::new(
            "Mcp-Method disagreeing with the body",
            with(greet_headers.clone(), "mcp-method", "tools/list"),
            greet.clone(),
            Expect::Rpc(400, -32020, exact("Mcp-Method header `tools/list` does not match body method `tools/call`")),
        ),
        Row::new("no Mcp-Name header", without(greet_headers.clone(), "mcp-name"), greet.clone(), Expect::Rpc(400, -32020, exact("missing required Mcp-Name header for `tools/call`"))),
        Row::new(
            "Mcp-Name disagreeing with the tool",
            with(greet_headers.clone(), "mcp-name", "slow_compute"),
            greet.clone(),
            Expect::Rpc(400, -32020, exact("Mcp-Name header `slow_compute` does not match body value `greet`")),
        ),
        Row::new(
            "no _meta",
            greet_headers.clone(),
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}"#.to_vec(),
            Expect::Rpc(400, -32602, exact("Invalid params: request _meta is missing or has malformed required fields: io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities")),
        ),
    ];
    // --- versions ---
    for version in ["2099-01-01", "2025-11-25", "not-a-version"] {
        let body = String::from_utf8_lossy(&greet)
            .replace(PROTOCOL_VERSION, version)
            .into_bytes();
        rows.push(Row::new(
            format!("protocol version {version} in header and _meta"),
            with(greet_headers.clone(), "mcp-protocol-version", version),
            body,
            Expect::Rpc(400, -32022, exact("Unsupported protocol version")),
        ));
    }
    // --- tools and arguments ---
    let argument_rows: [(&str, &str, Value, Expect); 8] = [
        (
            "unknown tool",
            "no_such_tool",
            json!({}),
            Expect::Rpc(200, -32602, exact("Unknown tool: no_such_tool")),
        ),
        (
            "missing required argument",
            "greet",
            json!({}),
            Expect::Rpc(
                200,
                -32602,
                exact(
                    r#"Invalid arguments for tool greet: arguments: "name" is a required property"#,
                ),
            ),
        ),
        (
            "argument of the wrong type",
            "slow_compute",
            json!({ "seconds": "ten" }),
            Expect::Rpc(
                200,
                -32602,
                exact(
                    r#"Invalid arguments for tool slow_compute: arguments/seconds: "ten" is not of type "number""#,
                ),
            ),
        ),
        (
            "argument below its minimum",
            "slow_compute",
            json!({ "seconds": -1 }),
            Expect::Rpc(
                200,
                -32602,
                exact(
                    "Invalid arguments for tool slow_compute: arguments/seconds: -1 is less than the minimum of 0",
                ),
            ),
        ),
        (
            "argument above its maximum",
            "slow_compute",
            json!({ "seconds": 1e300 }),
            Expect::Rpc(
                200,
                -32602,
                exact(
                    "Invalid arguments for tool slow_compute: arguments/seconds: 1e+300 is greater than the maximum of 3600",
                ),
            ),
        ),
        (
            "argument nested 100 deep where a string is due",
            "greet",
            serde_json::from_str(&format!(r#"{{"name":{}}}"#, nested_array(100, "1")))
                .expect("JSON"),
            Expect::Rpc(
                200,
                -32602,
                Msg::Like(
                    "Invalid arguments for tool greet: arguments/name: [[[",
                    r#"]]] is not of type "string""#,
                ),
            ),
        ),
        (
            "task-only tool without the tasks extension",
            "failing_job",
            json!({}),
            Expect::Rpc(
                400,
                -32021,
                exact(
                    "tool failing_job runs only as a task; call it on MCP 2026-07-28 declaring the io.modelcontextprotocol/tasks extension",
                ),
            ),
        ),
        (
            "a wrong type beside an undeclared argument",
            "greet",
            json!({ "name": 1, "extra": true }),
            Expect::Rpc(
                200,
                -32602,
                exact(
                    r#"Invalid arguments for tool greet: arguments/name: 1 is not of type "string""#,
                ),
            ),
        ),
    ];
    for (name, tool, arguments, expect) in argument_rows {
        let (headers, mut body) = call(tool, arguments);
        if tool == "failing_job" {
            let mut value: Value = serde_json::from_slice(&body).expect("JSON");
            value["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
            body = value.to_string().into_bytes();
        }
        rows.push(Row::new(name, headers, body, expect));
    }
    rows.push(Row::new(
        "arguments that are not an object",
        greet_headers.clone(),
        rpc(
            "tools/call",
            json!({ "name": "greet", "arguments": ["Ada"] }),
        ),
        Expect::Rpc(
            200,
            -32602,
            exact("invalid tools/call params: invalid type: sequence, expected a map"),
        ),
    ));
    rows.push(Row::new(
        "tool name that is not a string",
        headers("tools/call", Some(b"5")),
        rpc("tools/call", json!({ "name": 5 })),
        Expect::Rpc(
            200,
            -32602,
            exact("invalid tools/call params: invalid type: integer `5`, expected a string"),
        ),
    ));
    rows.push(Row::new(
        "tools/call as a notification (no id)",
        greet_headers.clone(),
        {
            let mut value: Value = serde_json::from_slice(&greet).expect("JSON");
            value.as_object_mut().expect("object").remove("id");
            value.to_string().into_bytes()
        },
        Expect::Accepted,
    ));
    // --- absurd task IDs on every task method and on listen ---
    let long = "a".repeat(10_000);
    let absurd: [(&str, &str, Vec<u8>); 5] = [
        ("10,000 characters", &long, long.as_bytes().to_vec()),
        ("path-like ../x", "../x", b"../x".to_vec()),
        (
            "path-like /api/v1/namespaces",
            "/api/v1/namespaces",
            b"/api/v1/namespaces".to_vec(),
        ),
        (
            "unicode タスク (base64 header)",
            "タスク",
            base64_sentinel("タスク"),
        ),
        ("empty", "", Vec::new()),
    ];
    for (label, id, header) in &absurd {
        for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
            let mut params = json!({ "taskId": id });
            if method == "tasks/update" {
                params["inputResponses"] =
                    json!({ "confirm-1": { "action": "accept", "content": {} } });
            }
            rows.push(Row::new(
                format!("{method} of a task ID {label}"),
                headers(method, Some(header)),
                rpc(method, params),
                Expect::Rpc(200, -32602, exact("Task not found")),
            ));
        }
    }
    rows.push(Row::new(
        "tasks/get with a raw unicode Mcp-Name",
        headers("tasks/get", Some("タスク".as_bytes())),
        rpc("tasks/get", json!({ "taskId": "タスク" })),
        Expect::Rpc(
            400,
            -32020,
            exact("Mcp-Name header contains invalid characters"),
        ),
    ));
    let ids: Vec<&str> = absurd.iter().map(|(_, id, _)| *id).collect();
    rows.push(Row::new(
        "subscriptions/listen to absurd task IDs",
        headers("subscriptions/listen", None),
        rpc(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": ids } }),
        ),
        Expect::ListenAcceptsNothing,
    ));
    rows.push(Row::new(
        "subscriptions/listen with taskIds not strings",
        headers("subscriptions/listen", None),
        rpc(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": [1, {}] } }),
        ),
        Expect::Rpc(
            200,
            -32602,
            exact("notifications.taskIds must be an array of strings"),
        ),
    ));
    rows.push(Row::new(
        "subscriptions/listen without an id",
        headers("subscriptions/listen", None),
        {
            let mut value: Value = serde_json::from_slice(&rpc(
                "subscriptions/listen",
                json!({ "notifications": {} }),
            ))
            .expect("JSON");
            value.as_object_mut().expect("object").remove("id");
            value.to_string().into_bytes()
        },
        Expect::Rpc(400, -32600, exact("subscriptions/listen needs an id")),
    ));
    rows
}
