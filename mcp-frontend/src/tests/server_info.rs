//! `_meta["io.modelcontextprotocol/serverInfo"]` on results built outside the task payloads:
//! the task acknowledgements and the start-input answers of `tools/call`.

use axum::http::StatusCode;
use serde_json::json;

use super::*;

fn assert_server_info(body: &Value) {
    assert_eq!(
        body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-task-operator",
        "{body}"
    );
}

#[tokio::test]
async fn update_and_cancel_acks_carry_server_info() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), working());
    let update = json!({"taskId": id, "_meta": meta(true), "inputResponses": {}});
    let (status, ack) = call(&state, rpc("tasks/update", update)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ack["result"]["resultType"], "complete");
    assert_server_info(&ack);
    let (status, ack) = cancel_task(&state, &id).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ack["result"]["resultType"], "complete");
    assert_server_info(&ack);
    // Errors have no result to complete.
    let (_, error) = cancel_task(&state, &task_id::generate()).await;
    assert_eq!(error["error"]["code"], -32602, "{error}");
}

#[tokio::test]
async fn start_input_request_and_declined_start_carry_server_info() {
    let (state, store) = test_state();
    let mut m = meta(true);
    m["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({"form": {}});
    let params = json!({"name": "confirm_delete", "arguments": {}, "_meta": m});
    let (_, asked) = call(&state, rpc("tools/call", params.clone())).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    assert_server_info(&asked);

    let mut declined = params;
    declined["inputResponses"] = json!({"confirm": {"action": "decline"}});
    let (_, answer) = call(&state, rpc("tools/call", declined)).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_server_info(&answer);
    assert_eq!(store.count(), 0);
}
