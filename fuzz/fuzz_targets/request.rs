//! The front end's request path from raw body bytes, without network or API server: the
//! routing peek, the JSON-RPC read (-32700/-32600), `subscriptions/listen` validation, and for
//! `tools/call` the tool lookup, capability gate and argument validation against real schemas;
//! task IDs and input answers of `tasks/*` through the same checks the handlers run.
#![no_main]

use std::sync::OnceLock;

use axum::http::request::Parts;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mcp_task_operator_crds::{McpTool, task_id};
use mcp_task_operator_mcp_frontend::tools::CatalogSnapshot;
use mcp_task_operator_mcp_frontend::{body, call, listen, tasks};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};

/// Served tools with the schema features clients send bad input against.
fn catalog() -> &'static CatalogSnapshot {
    static CATALOG: OnceLock<CatalogSnapshot> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let tools: Vec<McpTool> = [
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
        ]
        .into_iter()
        .map(|(name, task_support, schema)| tool(name, task_support, schema))
        .collect();
        CatalogSnapshot::from_tools(tools.iter())
    })
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

fuzz_target!(|data: &[u8]| {
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
