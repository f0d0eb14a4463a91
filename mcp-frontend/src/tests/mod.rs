//! HTTP-level tests: the whole router over the in-memory task store, driven with `oneshot`.

mod apihealth;
mod auth;
mod authz;
mod calls;
mod deletions;
mod fastcall;
mod fastget;
mod limits;
mod listen;
mod polls;
mod protocol;
mod server_info;
mod task_methods;
mod tool_errors;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{McpTask, McpTaskSpec, McpTaskStatus, McpTool, task_id};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::auth::ANONYMOUS;
use crate::config::Config;
use crate::state::AppState;
use crate::store::memory::MemoryStore;
use crate::tools::{CatalogSnapshot, StaticCatalog};

pub const V: &str = "2026-07-28";
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A front end over an empty task store and four Ready tools, without authentication.
pub fn test_state() -> (AppState, Arc<MemoryStore>) {
    test_state_with(&[])
}

/// Like [`test_state`], with extra or overriding `MCP_FRONTEND_*` settings.
pub fn test_state_with(vars: &[(&str, &str)]) -> (AppState, Arc<MemoryStore>) {
    let config = Config::from_lookup(|name| {
        if let Some((_, value)) = vars.iter().find(|(n, _)| *n == name) {
            return Some((*value).to_owned());
        }
        match name {
            "AUTH_MODE" => Some("none".to_owned()),
            "ALLOW_UNAUTHENTICATED" => Some("true".to_owned()),
            "AUTHORIZATION_MODE" => Some("none".to_owned()),
            "ALLOWED_ORIGINS" => Some("https://app.example".to_owned()),
            _ => None,
        }
    })
    .unwrap();
    let tools = [
        tool(
            "greet",
            "forbidden",
            json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}),
            None,
        ),
        tool(
            "slow_compute",
            "optional",
            json!({"type":"object","properties":{"seconds":{"type":"integer","minimum":0},"label":{"type":"string","x-mcp-header":"Label"}},"required":["seconds"]}),
            None,
        ),
        tool("failing_job", "required", json!({"type":"object"}), None),
        tool(
            "confirm_delete",
            "optional",
            json!({"type":"object","properties":{"filename":{"type":"string"}}}),
            Some(json!({
                "confirm": {"method":"elicitation/create","params":{"message":"Delete it?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}}}
            })),
        ),
    ];
    let catalog = StaticCatalog(Arc::new(CatalogSnapshot::from_tools(tools.iter())));
    let store = Arc::new(MemoryStore::default());
    (
        AppState::new(config, store.clone(), Arc::new(catalog)),
        store,
    )
}

fn tool(
    name: &str,
    task_support: &str,
    input_schema: Value,
    start_inputs: Option<Value>,
) -> McpTool {
    let mut spec = json!({
        "name": name,
        "description": format!("{name} test tool"),
        "inputSchema": input_schema,
        "taskSupport": task_support,
        "template": {"spec": {"containers": [{"name": "tool", "image": "busybox"}]}},
    });
    if let Some(start_inputs) = start_inputs {
        spec["startInputs"] = start_inputs;
    }
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTool",
        "metadata": {"name": name.replace('_', "-"), "namespace": "default",
                     "uid": format!("uid-{name}"), "generation": 3},
        "spec": spec,
        "status": {"observedGeneration": 3,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Valid",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }))
    .unwrap()
}

/// `_meta` of a 2026-07-28 request; `tasks` declares the extension.
pub fn meta(tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// A POST to `/mcp` with `Host`, `Content-Type` and `Accept` only: no MCP headers.
pub fn bare_post() -> axum::http::request::Builder {
    Request::post("/mcp")
        .header("host", "localhost:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

/// A POST to `/mcp` with the standard headers derived from the body.
pub fn post(body: &Value) -> axum::http::request::Builder {
    let mut builder = bare_post();
    if let Some(method) = body["method"].as_str() {
        builder = builder.header("mcp-method", method);
        let name = match method {
            "tools/call" => body["params"]["name"].as_str(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
            "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                body["params"]["uri"].as_str()
            }
            _ => None,
        };
        if let Some(name) = name {
            builder = builder.header("mcp-name", name);
        }
    }
    if let Some(version) =
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        builder = builder.header("mcp-protocol-version", version);
    }
    builder
}

/// Like [`post`] with the given `Host` header instead of `localhost:8080`.
pub fn post_to_host(body: &Value, host: &str, extra: &[(&'static str, &str)]) -> Request<Body> {
    let mut request = post(body).body(Body::from(body.to_string())).unwrap();
    let headers = request.headers_mut();
    headers.insert("host", host.parse().unwrap());
    for (name, value) in extra {
        headers.insert(*name, value.parse().unwrap());
    }
    request
}

/// A JSON-RPC request body.
pub fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// Sends `request` through the app; returns the status and the JSON body.
pub async fn send(state: &AppState, request: Request<Body>) -> (StatusCode, Value) {
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, body)
}

/// Sends `request` and checks that it is refused for its headers: HTTP 400, -32020.
pub async fn assert_header_mismatch(state: &AppState, request: Request<Body>) {
    let (status, answer) = send(state, request).await;
    assert_eq!(
        (status, answer["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020)),
        "{answer}"
    );
}

/// Sends `body` with the standard headers.
pub async fn call(state: &AppState, body: Value) -> (StatusCode, Value) {
    let request = post(&body).body(Body::from(body.to_string())).unwrap();
    send(state, request).await
}

/// A stored task of `owner` in `status`, as the operator would leave it.
pub fn stored_task(store: &MemoryStore, owner: &str, status: Option<McpTaskStatus>) -> String {
    let id = task_id::generate();
    let mut task = McpTask::new(
        &id,
        McpTaskSpec {
            tool: "slow_compute".to_owned(),
            tool_uid: None,
            tool_generation: None,
            arguments: None,
            owner: owner.to_owned(),
            ttl_ms: Some(3_600_000),
            poll_interval_ms: Some(2_000),
            client_capabilities: None,
            start_input_responses: None,
            input_responses: None,
        },
    );
    task.metadata.creation_timestamp = Some(Time(Timestamp::now()));
    task.status = status;
    store.insert(task);
    id
}

/// An anonymous caller's stored task whose status is `value` (JSON, as the operator writes it).
pub fn stored_with(store: &MemoryStore, value: Value) -> String {
    stored_task(store, anonymous(), Some(status(value)))
}

/// A status value from JSON (camelCase, as the operator writes it).
pub fn status(value: Value) -> McpTaskStatus {
    serde_json::from_value(value).unwrap()
}

/// `tasks/get` for `id` from a declaring client.
pub async fn get_task(state: &AppState, id: &str) -> (StatusCode, Value) {
    task_request(state, "tasks/get", id).await
}

/// `tasks/cancel` for `id` from a declaring client.
pub async fn cancel_task(state: &AppState, id: &str) -> (StatusCode, Value) {
    task_request(state, "tasks/cancel", id).await
}

/// `method` with only `taskId` (and the request `_meta`) from a declaring client.
async fn task_request(state: &AppState, method: &str, id: &str) -> (StatusCode, Value) {
    call(
        state,
        rpc(method, json!({"taskId": id, "_meta": meta(true)})),
    )
    .await
}

pub fn anonymous() -> &'static str {
    ANONYMOUS
}

pub fn working() -> Option<McpTaskStatus> {
    Some(status(json!({"status": "working"})))
}

pub fn cancelled() -> Option<McpTaskStatus> {
    Some(status(json!({"status": "cancelled"})))
}

/// Asserts the answer is the -32021 refusal (HTTP 400) of a request that needs a client
/// capability, and returns the capabilities it names (`error.data.requiredCapabilities`).
pub fn required_capabilities(status: StatusCode, body: &Value) -> &Value {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], -32021, "{body}");
    &body["error"]["data"]["requiredCapabilities"]
}
