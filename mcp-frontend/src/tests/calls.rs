//! `tools/call`: validation, task creation, start inputs and synchronous calls.

use std::sync::Arc;

use axum::http::StatusCode;
use mcp_task_operator_crds::task_id;
use serde_json::json;

use super::*;
use crate::store::TaskStore;

fn call_params(name: &str, arguments: Value, tasks: bool) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": meta(tasks)})
}

/// `tools/call` of `name` with `arguments`, declaring the tasks extension or not.
async fn call_tool(
    state: &AppState,
    name: &str,
    arguments: Value,
    tasks: bool,
) -> (StatusCode, Value) {
    call(
        state,
        rpc("tools/call", call_params(name, arguments, tasks)),
    )
    .await
}

#[tokio::test]
async fn declaring_call_returns_a_flat_create_task_result_readable_at_once() {
    let (state, store) = test_state();
    let (status, body) = call_tool(&state, "slow_compute", json!({"seconds": 5}), true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = &body["result"];
    assert_eq!(result["resultType"], "task");
    assert_eq!(result["status"], "working");
    assert_eq!(result["ttlMs"], 3_600_000);
    assert_eq!(result["pollIntervalMs"], 2_000);
    assert!(result["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(result["lastUpdatedAt"].is_string());
    for absent in [
        "result",
        "error",
        "inputRequests",
        "requestState",
        "task",
        "ttl",
        "pollInterval",
    ] {
        assert!(result.get(absent).is_none(), "{absent} in {result}");
    }
    let id = result["taskId"].as_str().unwrap();
    assert!(task_id::is_valid(id));
    let stored = store.peek(id).unwrap();
    assert_eq!(stored.spec.owner, anonymous());
    let arguments = stored.spec.arguments.as_ref().unwrap().to_value();
    assert_eq!(arguments["seconds"], 5);
    let (status, got) = get_task(&state, id).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(got["result"]["status"], "working");
    assert_eq!(got["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_task_records_the_uid_and_generation_of_the_tool_its_call_was_authorized_on() {
    let (state, store) = test_state();
    let (status, body) = call_tool(&state, "failing_job", json!({}), true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let stored = store
        .peek(body["result"]["taskId"].as_str().unwrap())
        .unwrap();
    // The catalog entry authorization checked (the `failing-job` object of `test_state`).
    assert_eq!(stored.spec.tool_uid.as_deref(), Some("uid-failing_job"));
    assert_eq!(stored.spec.tool_generation, Some(3));
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_invalid_params_naming_the_argument() {
    let (state, store) = test_state();
    let (status, body) = call_tool(&state, "slow_compute", json!({"seconds": "ten"}), true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["error"]["code"], -32602);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("arguments/seconds"), "{message}");
    assert!(message.contains("integer"), "{message}");
    let (_, missing) = call_tool(&state, "slow_compute", json!({}), true).await;
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("seconds"),
        "{missing}"
    );
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn unknown_tool_is_invalid_params() {
    let (state, _) = test_state();
    let (status, body) = call_tool(&state, "nope", json!({}), true).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(body["error"]["message"], "Unknown tool: nope");
}

#[tokio::test]
async fn task_required_tool_refuses_non_declaring_callers_with_32021() {
    let (state, store) = test_state();
    let (status, body) = call_tool(&state, "failing_job", json!({}), false).await;
    assert_eq!(
        required_capabilities(status, &body)["extensions"][TASKS],
        json!({})
    );
    assert_eq!(store.count(), 0);
}

/// Plays the operator: completes (or fails) the next task created in `store`.
pub(super) fn finish_next_task(store: Arc<MemoryStore>, outcome: Value) {
    let mut changes = store.subscribe();
    tokio::spawn(async move {
        let task = changes.recv().await.unwrap();
        store.update(task.task_id(), |t| t.status = Some(status(outcome)));
    });
}

#[tokio::test]
async fn non_declaring_call_of_optional_tool_waits_for_the_result() {
    let (state, store) = test_state();
    finish_next_task(
        store.clone(),
        json!({"status": "completed", "result": {"content": [{"type": "text", "text": "done"}], "isError": false}}),
    );
    let (status, body) = call_tool(&state, "slow_compute", json!({"seconds": 0}), false).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["content"][0]["text"], "done");
    assert!(body["result"].get("taskId").is_none());
}

#[tokio::test]
async fn forbidden_tool_is_synchronous_even_for_declaring_callers_with_a_legacy_task_param() {
    let (state, store) = test_state();
    finish_next_task(
        store.clone(),
        json!({"status": "completed", "result": {"content": [{"type": "text", "text": "Hello, Ada!"}]}}),
    );
    let mut params = call_params("greet", json!({"name": "Ada"}), true);
    params["task"] = json!({"ttl": 60000});
    let (status, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "Hello, Ada!");
}

#[tokio::test]
async fn synchronous_call_of_a_failing_task_answers_its_json_rpc_error() {
    let (state, store) = test_state();
    finish_next_task(
        store.clone(),
        json!({"status": "failed", "error": {"code": -32603, "message": "pod evicted", "data": {"reason": "Evicted"}}}),
    );
    let (status, body) = call_tool(&state, "greet", json!({"name": "x"}), false).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["error"]["code"], -32603);
    assert_eq!(body["error"]["message"], "pod evicted");
    assert_eq!(body["error"]["data"]["reason"], "Evicted");
}

#[tokio::test(start_paused = true)]
async fn synchronous_call_that_outlives_its_limit_is_cancelled_with_an_error_result() {
    let (state, store) = test_state();
    let (status, body) = call_tool(&state, "greet", json!({"name": "x"}), false).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert_eq!(store.count(), 1);
}

#[tokio::test]
async fn start_inputs_are_asked_first_then_the_task_is_created() {
    let (state, store) = test_state();
    let mut m = meta(true);
    m["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({"form": {}});
    let params = json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}, "_meta": m});
    let (status, first) = call(&state, rpc("tools/call", params.clone())).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["result"]["resultType"], "input_required");
    assert_eq!(
        first["result"]["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert!(first["result"].get("taskId").is_none());
    assert_eq!(store.count(), 0);

    let mut retry = params.clone();
    retry["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let (_, second) = call(&state, rpc("tools/call", retry)).await;
    assert_eq!(second["result"]["resultType"], "task", "{second}");
    assert!(second["result"].get("inputRequests").is_none());
    let stored = store
        .peek(second["result"]["taskId"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        stored.spec.start_input_responses.as_ref().unwrap()["confirm"].to_value()["content"]["confirm"],
        true
    );

    let mut declined = params;
    declined["inputResponses"] = json!({"confirm": {"action": "decline"}});
    let (_, third) = call(&state, rpc("tools/call", declined)).await;
    assert_eq!(third["result"]["isError"], true, "{third}");
    assert_eq!(store.count(), 1);
}

#[tokio::test]
async fn start_inputs_need_the_elicitation_capability() {
    let (state, _) = test_state();
    let (status, body) = call_tool(&state, "confirm_delete", json!({}), true).await;
    assert!(required_capabilities(status, &body)["elicitation"].is_object());
}

/// The -32021 names the elicitation mode the question needs (MRTR is mode-aware): a URL
/// question for a client that declared only forms asks for `elicitation.url`.
#[tokio::test]
async fn missing_elicitation_mode_is_named_in_the_32021() {
    let (base, store) = test_state();
    let url_tool: McpTool = serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTool",
        "metadata": {"name": "sign-in", "namespace": "default"},
        "spec": {"name": "sign_in", "inputSchema": {"type": "object"}, "taskSupport": "forbidden",
            "template": {"spec": {"containers": [{"name": "tool", "image": "busybox"}]}},
            "startInputs": {"login": {"method": "elicitation/create", "params": {
                "mode": "url", "message": "Sign in", "url": "https://login.example/"}}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Valid",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }))
    .unwrap();
    let catalog =
        crate::tools::StaticCatalog(Arc::new(crate::tools::CatalogSnapshot::from_tools([
            &url_tool,
        ])));
    let state = AppState::new((*base.config).clone(), store, Arc::new(catalog));
    let mut params = call_params("sign_in", json!({}), false);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    let (status, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(
        required_capabilities(status, &body),
        &json!({"elicitation": {"url": {}}})
    );
    // Declaring url mode gets the question instead.
    let mut params = call_params("sign_in", json!({}), false);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"url": {}}});
    let (_, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    assert_eq!(
        body["result"]["inputRequests"]["login"]["params"]["mode"],
        "url"
    );
}

#[tokio::test]
async fn legacy_clients_get_synchronous_results_without_tasks() {
    let (state, store) = test_state();
    finish_next_task(
        store.clone(),
        json!({"status": "completed", "result": {"content": [{"type": "text", "text": "old"}]}}),
    );
    // A 2025-11-25 client after a stateless initialize: no _meta, even if it claims the extension.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "slow_compute", "arguments": {"seconds": 1}, "task": {"ttl": 1000}}});
    let request = bare_post()
        .header("mcp-protocol-version", "2025-11-25")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = send(&state, request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "old", "{answer}");
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
    assert_eq!(store.count(), 1);
}

/// A 2025-11-25 client treats any HTTP status but 200 as a transport failure, so a task-only
/// tool's refusal must reach it in band: HTTP 200, -32021, a message naming what it needs.
#[tokio::test]
async fn legacy_clients_get_task_only_refusals_in_band_with_http_200() {
    let (state, store) = test_state();
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "failing_job", "arguments": {}}});
    let request = bare_post()
        .header("mcp-protocol-version", "2025-11-25")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = send(&state, request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["id"], 8);
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("failing_job") && message.contains("2026-07-28"),
        "{message}"
    );
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn synchronous_call_whose_task_asks_for_input_is_cancelled_with_a_clear_error() {
    let (state, store) = test_state();
    finish_next_task(
        store.clone(),
        json!({"status": "input_required", "inputRequests": {"k": {
        "method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}}}}),
    );
    // The caller declares elicitation, so it is shown the request but, without tasks, cannot
    // answer it. (A request of a kind it did not declare is answered for it instead, see
    // crate::unanswerable, and the call keeps waiting.)
    let mut params = call_params("greet", json!({"name": "x"}), false);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({});
    let (status, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["isError"], true);
    assert!(
        body["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("needs input")
    );
    let task_id = store.peek_any().unwrap();
    assert!(store.peek(&task_id).unwrap().is_cancel_requested());
}

#[tokio::test]
async fn annotated_arguments_must_be_mirrored_in_mcp_param_headers() {
    let (state, _) = test_state();
    let body = rpc(
        "tools/call",
        call_params("slow_compute", json!({"seconds": 1, "label": "blue"}), true),
    );
    let (status, answer) = call(&state, body.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], -32020);
    let request = post(&body)
        .header("mcp-param-label", "blue")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = send(&state, request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["result"]["resultType"], "task");
}
