//! `tasks/get`, `tasks/update`, `tasks/cancel`.

use axum::http::StatusCode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use mcp_task_operator_crds::CANCEL_REQUESTED_ANNOTATION;
use serde_json::json;

use super::*;
use crate::error::{TASK_EXPIRED, TASK_NOT_FOUND};

#[tokio::test]
async fn non_declaring_task_requests_get_32021_before_any_lookup() {
    let (state, _) = test_state();
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let mut params = json!({"taskId": "gate-test", "_meta": meta(false)});
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let (status, body) = call(&state, rpc(method, params)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method}: {body}");
        assert_eq!(body["error"]["code"], -32021, "{method}: {body}");
        assert_eq!(
            body["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
            json!({})
        );
    }
}

#[tokio::test]
async fn task_requests_with_missing_params_are_gated_then_invalid_not_unknown_methods() {
    let (state, _) = test_state();
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        // Without taskId (and inputResponses) rmcp cannot parse the request: the capability
        // gate still answers first...
        let (status, body) = call(&state, rpc(method, json!({"_meta": meta(false)}))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method}: {body}");
        assert_eq!(body["error"]["code"], -32021, "{method}: {body}");
        // ...then invalid params, never "method not found".
        let (status, body) = call(&state, rpc(method, json!({"_meta": meta(true)}))).await;
        assert_eq!(status, StatusCode::OK, "{method}: {body}");
        assert_eq!(body["error"]["code"], -32602, "{method}: {body}");
    }
    // tasks/update needs inputResponses as well.
    let params = json!({"taskId": "gate-test", "_meta": meta(true)});
    let (_, body) = call(&state, rpc("tasks/update", params)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    // Unknown methods stay -32601 with HTTP 404.
    let (status, body) = call(
        &state,
        rpc("tasks/frobnicate", json!({"_meta": meta(true)})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], -32601);
}

#[tokio::test]
async fn unknown_foreign_and_malformed_ids_look_the_same() {
    let (state, store) = test_state();
    let foreign = stored_task(&store, "someone-else", working());
    let unknown = mcp_task_operator_crds::task_id::generate();
    for id in [foreign.as_str(), unknown.as_str(), "gate-test"] {
        for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
            let params = json!({"taskId": id, "inputResponses": {}, "_meta": meta(true)});
            let (status, body) = call(&state, rpc(method, params)).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["error"]["code"], -32602, "{method} {id}: {body}");
            assert_eq!(body["error"]["message"], TASK_NOT_FOUND);
        }
    }
    assert!(!store.peek(&foreign).unwrap().is_cancel_requested());
}

/// Makes the stored task `id` two hours old: past its one-hour TTL.
fn two_hours_old(store: &MemoryStore, id: &str) {
    store.update(id, |t| {
        let past = Timestamp::now()
            .checked_sub(SignedDuration::from_hours(2))
            .unwrap();
        t.metadata.creation_timestamp = Some(Time(past));
    });
}

#[tokio::test]
async fn expired_tasks_answer_task_has_expired_to_their_owner() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), cancelled());
    two_hours_old(&store, &id);
    let (_, body) = get_task(&state, &id).await;
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(body["error"]["message"], TASK_EXPIRED);
}

/// A task that has not ended is never "expired", even past its expiry: the operator, which
/// keeps a running task's expiry ahead, may be away. -32602 would be final to the client.
#[tokio::test]
async fn a_running_task_past_its_expiry_is_still_served() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), working());
    two_hours_old(&store, &id);
    let (_, body) = get_task(&state, &id).await;
    assert_eq!(body["result"]["status"], "working", "{body}");
}

#[tokio::test]
async fn get_shows_each_status_with_its_payload() {
    let (state, store) = test_state();
    let completed = stored_with(
        &store,
        json!({"status": "completed", "statusMessage": "done",
        "result": {"content": [{"type": "text", "text": "ok"}], "isError": true}}),
    );
    let (_, body) = get_task(&state, &completed).await;
    let result = &body["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["statusMessage"], "done");
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(result["result"]["isError"], true);
    assert!(result.get("error").is_none() && result.get("requestState").is_none());

    let failed = stored_with(
        &store,
        json!({"status": "failed",
        "error": {"code": -32603, "message": "boom"}}),
    );
    let (_, body) = get_task(&state, &failed).await;
    assert_eq!(body["result"]["status"], "failed");
    assert_eq!(
        body["result"]["error"],
        json!({"code": -32603, "message": "boom"})
    );
    assert!(body["result"].get("result").is_none());

    let cancelled = stored_with(&store, json!({"status": "cancelled"}));
    let (_, body) = get_task(&state, &cancelled).await;
    assert_eq!(body["result"]["status"], "cancelled");
    assert_eq!(body["result"]["ttlMs"], 3_600_000);
}

fn elicitation(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
}

#[tokio::test]
async fn update_merges_only_outstanding_answers_and_get_drops_answered_keys() {
    let (state, store) = test_state();
    let id = stored_with(
        &store,
        json!({"status": "input_required",
        "inputRequests": {"a": elicitation("A?"), "b": elicitation("B?")}}),
    );
    let (_, body) = get_task(&state, &id).await;
    let requests = body["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["a", "b"]);

    let params = json!({"taskId": id, "_meta": meta(true), "inputResponses": {
        "a": {"action": "accept", "content": {"ok": true}}, "unknown-key": {"ignored": true}}});
    let (status, ack) = call(&state, rpc("tasks/update", params)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ack["result"]["resultType"], "complete");
    let stored = store.peek(&id).unwrap();
    let responses = stored.spec.input_responses.as_ref().unwrap();
    assert_eq!(responses.keys().collect::<Vec<_>>(), ["a"]);

    let (_, body) = get_task(&state, &id).await;
    assert_eq!(body["result"]["status"], "input_required");
    let requests = body["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["b"]);

    let bad =
        json!({"taskId": id, "_meta": meta(true), "inputResponses": {"b": {"action": "maybe"}}});
    let (_, body) = call(&state, rpc("tasks/update", bad)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
}

#[tokio::test]
async fn cancel_sets_the_annotation_once_and_acks_terminal_tasks_unchanged() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), working());
    for _ in 0..2 {
        let (status, ack) = cancel_task(&state, &id).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ack["result"]["resultType"], "complete");
    }
    let annotations = store
        .peek(&id)
        .unwrap()
        .metadata
        .annotations
        .clone()
        .unwrap();
    assert!(annotations.contains_key(CANCEL_REQUESTED_ANNOTATION));

    let done = stored_with(
        &store,
        json!({"status": "completed", "result": {"content": []}}),
    );
    let (_, ack) = cancel_task(&state, &done).await;
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(!store.peek(&done).unwrap().is_cancel_requested());
}

#[tokio::test]
async fn polling_a_task_faster_than_its_interval_gets_retry_after() {
    let (state, store) = test_state_with(&[("POLL_BURST_PER_TASK", "2")]);
    let id = stored_task(&store, anonymous(), working());
    for _ in 0..2 {
        let (_, body) = get_task(&state, &id).await;
        assert_eq!(body["result"]["status"], "working", "{body}");
    }
    let (status, body) = get_task(&state, &id).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -31001, "{body}");
    assert!(body["error"]["data"]["retryAfterMs"].as_u64().unwrap() > 0);
}

/// `docs/DESIGN.md#expired-task`, byte for byte: the owner of an expired task reads exactly "Task has
/// expired"; everyone else, and everyone asking for an unknown task, exactly "Task not found",
/// in answers that differ in nothing else.
#[tokio::test]
async fn task_error_messages_are_exact_and_unknown_equals_foreign_byte_for_byte() {
    let (state, store) = test_state();
    let own_expired = stored_task(&store, anonymous(), cancelled());
    two_hours_old(&store, &own_expired);
    let foreign_expired = stored_task(&store, "someone-else", cancelled());
    two_hours_old(&store, &foreign_expired);
    let foreign = stored_task(&store, "someone-else", working());
    let unknown = mcp_task_operator_crds::task_id::generate();

    let raw = |id: &str, method: &str| {
        let params = json!({"taskId": id, "inputResponses": {}, "_meta": meta(true)});
        let body = rpc(method, params);
        let request = post(&body)
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let state = state.clone();
        async move {
            let response = crate::app(state).oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            (status, bytes)
        }
    };
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let (status, bytes) = raw(&own_expired, method).await;
        assert_eq!(status, StatusCode::OK);
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            body["error"],
            json!({"code": -32602, "message": "Task has expired"}),
            "{method}"
        );

        let (_, not_found) = raw(&unknown, method).await;
        let body: Value = serde_json::from_slice(&not_found).unwrap();
        assert_eq!(
            body["error"],
            json!({"code": -32602, "message": "Task not found"}),
            "{method}"
        );
        for other in [&foreign, &foreign_expired] {
            let (status, bytes) = raw(other, method).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(
                bytes, not_found,
                "{method}: a foreign task must look unknown"
            );
        }
    }
}

#[tokio::test]
async fn a_task_with_a_160_bit_id_of_an_earlier_release_is_still_served() {
    let (state, store) = test_state();
    let legacy = "mzxw6ytbmzxw6ytbmzxw6ytbmzxw6ytb";
    let stored = stored_task(&store, anonymous(), working());
    let mut task = (*store.peek(&stored).unwrap()).clone();
    task.metadata.name = Some(legacy.to_owned());
    store.insert(task);
    let (status, body) = get_task(&state, legacy).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["taskId"], legacy);
    assert_eq!(body["result"]["status"], "working");
}
