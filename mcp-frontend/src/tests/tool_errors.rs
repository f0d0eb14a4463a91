//! A tool's `{"mcp":"error"}` code on the wire: codes JSON-RPC and MCP reserve become -32603
//! with the tool's error in `data`, in `tasks/get` and in a synchronous call alike.

use axum::http::StatusCode;
use serde_json::json;

use super::calls::finish_next_task;
use super::*;

/// A bare -32021, which would claim a missing client capability without naming it.
fn reserved_failure() -> Value {
    json!({"status": "failed", "error": {"code": -32021, "message": "needs tasks"}})
}

#[tokio::test]
async fn a_reserved_tool_code_is_an_internal_error_in_tasks_get() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), Some(status(reserved_failure())));
    let (code, body) = get_task(&state, &id).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["status"], "failed");
    let error = &body["result"]["error"];
    assert_eq!(error["code"], -32603, "{body}");
    assert_eq!(
        error["data"],
        json!({"toolCode": -32021, "toolMessage": "needs tasks"})
    );

    let application = stored_with(
        &store,
        json!({"status": "failed", "error": {"code": 1001, "message": "quota", "data": {"x": 1}}}),
    );
    let (_, body) = get_task(&state, &application).await;
    assert_eq!(
        body["result"]["error"],
        json!({"code": 1001, "message": "quota", "data": {"x": 1}})
    );
}

#[tokio::test]
async fn a_reserved_tool_code_is_an_internal_error_in_a_synchronous_call() {
    let (state, store) = test_state();
    finish_next_task(store.clone(), reserved_failure());
    let params = json!({"name": "greet", "arguments": {"name": "x"}, "_meta": meta(false)});
    let (status, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(body["error"]["data"]["toolCode"], -32021);
    assert_eq!(body["error"]["data"]["toolMessage"], "needs tasks");
    assert!(body["error"]["data"].get("requiredCapabilities").is_none());
}
