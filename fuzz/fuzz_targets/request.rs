//! The front end's request path from raw body bytes, without network or API server: the
//! routing peek, the JSON-RPC read (-32700/-32600), `subscriptions/listen` validation, and for
//! `tools/call` the tool lookup, capability gate and argument validation against real schemas;
//! task IDs and input answers of `tasks/*` through the same checks the handlers run. The two
//! fast paths' light parses (`tasks/get`, `tools/call`) see each body with the plain headers of
//! its method and name, and whatever they take rmcp's own parse must read as the same request:
//! a fast path may only serve what rmcp would hand to the handler unchanged.
#![no_main]

use std::sync::OnceLock;

use std::sync::Arc;

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mcp_task_operator_crds::{McpTool, task_id};
use mcp_task_operator_mcp_frontend::store::memory::MemoryStore;
use mcp_task_operator_mcp_frontend::tools::{CatalogSnapshot, StaticCatalog};
use mcp_task_operator_mcp_frontend::{AppState, Config, body, call, fastcall, fastget, listen, tasks};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcRequest};
use serde_json::{Value, json};

/// Served tools with the schema features clients send bad input against.
fn catalog() -> &'static CatalogSnapshot {
    static CATALOG: OnceLock<CatalogSnapshot> = OnceLock::new();
    CATALOG.get_or_init(|| CatalogSnapshot::from_tools(tools().iter()))
}

/// A front end's state over [`tools`] (no API server: an in-memory task store), for the
/// `tools/call` fast path's catalog look-up.
fn state() -> &'static AppState {
    static STATE: OnceLock<AppState> = OnceLock::new();
    STATE.get_or_init(|| {
        let config = Config::from_lookup(|name| match name {
            "AUTH_MODE" | "AUTHORIZATION_MODE" => Some("none".to_owned()),
            "ALLOW_UNAUTHENTICATED" => Some("true".to_owned()),
            _ => None,
        })
        .expect("fuzz configuration");
        let tools = StaticCatalog(Arc::new(CatalogSnapshot::from_tools(tools().iter())));
        AppState::new(config, Arc::new(MemoryStore::default()), Arc::new(tools))
    })
}

/// The tools of [`catalog`]: each task-support mode, schemas with the features clients send
/// bad input against, and an argument mapped to a header (`x-mcp-header`, never fast).
fn tools() -> Vec<McpTool> {
    [
            ("greet", "forbidden", json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
            ("slow_compute", "optional", json!({"type": "object", "properties": {
                "seconds": {"type": "number", "minimum": 0, "maximum": 3600},
                "label": {"type": "string", "maxLength": 64, "pattern": "^[a-z ]*$"}},
                "required": ["seconds"], "additionalProperties": false})),
            ("failing_job", "required", json!({"type": "object"})),
            ("nested", "optional", json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": true}}}},
                "properties": {"tree": {"$ref": "#/$defs/node"}, "mode": {"enum": ["phone", "email"]}},
                "if": {"properties": {"mode": {"const": "phone"}}, "required": ["mode"]},
                "then": {"required": ["tree"]},
            })),
            ("labelled", "optional", json!({"type": "object", "properties": {
                "label": {"type": "string", "x-mcp-header": "Label"}}})),
        ]
        .into_iter()
        .map(|(name, task_support, schema)| tool(name, task_support, schema))
        .collect()
}

fn tool(name: &str, task_support: &str, schema: Value) -> McpTool {
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTool",
        "metadata": {"name": name.replace('_', "-"), "namespace": "fuzz"},
        "spec": {"name": name, "inputSchema": schema, "taskSupport": task_support,
            "template": {"spec": {"containers": [{"name": "tool", "image": "busybox"}]}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Valid",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }))
    .expect("fuzz fixture is an McpTool")
}

/// The headers of a well-formed listen request, so validation reaches the body's fields.
fn listen_parts() -> Parts {
    axum::http::Request::post("/mcp")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", listen::METHOD)
        .body(())
        .expect("static request")
        .into_parts()
        .0
}

/// An outstanding elicitation, the shape answers are checked against.
fn elicitation() -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
}

/// The plain headers of a request of `method` naming `name` (a tool, a task ID), as a
/// client derives them from its body.
fn plain_headers(method: &str, name: &str) -> Option<HeaderMap> {
    let mut headers = HeaderMap::new();
    for (key, value) in [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ] {
        headers.insert(key, HeaderValue::from_str(value).ok()?);
    }
    Some(headers)
}

/// rmcp's own reading of `data`, which a fast path took: it must be a request.
fn rmcp_request(data: &[u8], path: &str) -> JsonRpcRequest<ClientRequest> {
    match body::check_message(data) {
        Ok(ClientJsonRpcMessage::Request(request)) => request,
        other => panic!(
            "the {path} fast path took a body rmcp reads as {other:?}: {}",
            String::from_utf8_lossy(data)
        ),
    }
}

/// Whatever the fast paths take from `data` (with the headers a client would send for it),
/// rmcp reads as the same request.
fn fast_paths_agree_with_rmcp(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let params = &value["params"];
    if let Some(task) = params["taskId"].as_str()
        && let Some(headers) = plain_headers("tasks/get", task)
        && let Some(poll) = fastget::request::parse(&headers, data)
    {
        let request = rmcp_request(data, "tasks/get");
        let ClientRequest::GetTaskRequest(get) = request.request else {
            panic!("the tasks/get fast path took {:?}", request.request);
        };
        assert_eq!(request.id, poll.id);
        assert_eq!(get.params.task_id, poll.task_id);
    }
    if let Some(name) = params["name"].as_str()
        && let Some(headers) = plain_headers(fastcall::METHOD, name)
        && let Some(fast) = fastcall::parse(state(), &headers, data)
    {
        let request = rmcp_request(data, "tools/call");
        let ClientRequest::CallToolRequest(call) = request.request else {
            panic!("the tools/call fast path took {:?}", request.request);
        };
        assert_eq!(request.id, fast.id);
        assert_eq!(call.params.name, fast.params.name);
        assert_eq!(call.params.arguments, fast.params.arguments);
        assert!(call.params.input_responses.is_none() && call.params.request_state.is_none());
    }
}

fuzz_target!(|data: &[u8]| {
    fast_paths_agree_with_rmcp(data);
    if body::peek_method(data).as_deref() == Some(listen::METHOD) {
        let _ = listen::request::validate(&listen_parts(), &Bytes::copy_from_slice(data));
        return;
    }
    let Ok(ClientJsonRpcMessage::Request(request)) = body::check_message(data) else {
        return;
    };
    match request.request {
        ClientRequest::CallToolRequest(call) => {
            let params = call.params;
            for declares_tasks in [false, true] {
                let checked = call::check_call(
                    catalog(),
                    &params.name,
                    params.arguments.clone(),
                    declares_tasks,
                );
                // Every refusal must map to a JSON-RPC error without panicking.
                if let Err(error) = checked {
                    let _ = error.to_error_data();
                }
            }
        }
        ClientRequest::GetTaskRequest(get) => {
            let _ = task_id::is_valid(&get.params.task_id);
        }
        ClientRequest::CancelTaskRequest(cancel) => {
            let _ = task_id::is_valid(&cancel.params.task_id);
        }
        ClientRequest::UpdateTaskRequest(update) => {
            let _ = task_id::is_valid(&update.params.task_id);
            let request = elicitation();
            for (key, response) in &update.params.input_responses {
                let _ = tasks::check_input_response(key, &request, response);
            }
        }
        _ => {}
    }
});
