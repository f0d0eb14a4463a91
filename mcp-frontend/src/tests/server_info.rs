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

#[tokio::test]
async fn a_tool_result_with_its_own_meta_keeps_it_and_gains_server_info() {
    let (state, store) = test_state();
    super::calls::finish_next_task(
        store.clone(),
        json!({"status": "completed", "result": {
            "content": [{"type": "text", "text": "done"}],
            "_meta": {"example.com/cost": 3, "io.modelcontextprotocol/serverInfo": {"name": "impostor", "version": "0"}},
        }}),
    );
    let params = json!({"name": "slow_compute", "arguments": {"seconds": 0}, "_meta": meta(false)});
    let (_, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(body["result"]["content"][0]["text"], "done", "{body}");
    assert_eq!(body["result"]["_meta"]["example.com/cost"], 3, "{body}");
    // The server answering is this one, whatever the tool's result says.
    assert_server_info(&body);
}

#[tokio::test]
async fn the_listen_acknowledgement_carries_server_info() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), working());
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta(true), "notifications": {"taskIds": [id]}}});
    let request = post(&body)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = tower::ServiceExt::oneshot(crate::app(state), request)
        .await
        .unwrap();
    let mut stream = response.into_body().into_data_stream();
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = futures::StreamExt::next(&mut stream)
            .await
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .expect("an SSE data line");
    let ack: Value = serde_json::from_str(data.trim()).unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let meta = &ack["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{ack}"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/serverInfo"]["name"], "mcp-task-operator",
        "{ack}"
    );
}
