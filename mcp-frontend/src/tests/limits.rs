//! Per-caller quotas and input bounds: each refusal has its exact code and message, and
//! stores nothing.

use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use serde_json::json;

use super::*;
use crate::error::{QUOTA_EXCEEDED, RATE_LIMITED};
use crate::store::TaskStore;

fn start_task(arguments: Value) -> Value {
    rpc(
        "tools/call",
        json!({"name": "slow_compute", "arguments": arguments, "_meta": meta(true)}),
    )
}

#[tokio::test]
async fn calls_beyond_the_active_task_quota_get_31002_and_create_nothing() {
    let (state, store) = test_state_with(&[("MAX_ACTIVE_TASKS_PER_CALLER", "2")]);
    let first = stored_task(&store, anonymous(), working());
    // Terminal tasks and other callers' tasks do not count.
    stored_with(&store, json!({"status": "cancelled"}));
    stored_task(&store, "someone-else", working());
    let (_, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(body["result"]["resultType"], "task", "{body}");
    let before = store.count();

    let (code, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(body["error"]["code"], QUOTA_EXCEEDED.0, "{body}");
    assert_eq!(
        body["error"]["message"],
        "quota exceeded: this caller has 2 active tasks and the limit is 2; wait for one to \
         finish or cancel one"
    );
    assert_eq!(body["error"]["data"], json!({"limit": 2, "active": 2}));
    assert_eq!(store.count(), before, "nothing stored on refusal");

    // Another caller is not affected, and a task that ends frees a place.
    assert_eq!(store.held("someone-else").active, 1);
    store.update(&first, |t| {
        t.status = Some(status(json!({"status": "completed"})))
    });
    let (_, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(body["result"]["resultType"], "task", "{body}");
}

#[tokio::test]
async fn finished_tasks_count_against_the_stored_task_and_byte_quotas() {
    let (state, store) = test_state_with(&[
        ("MAX_ACTIVE_TASKS_PER_CALLER", "100"),
        ("MAX_STORED_TASKS_PER_CALLER", "3"),
        ("MAX_STORED_BYTES_PER_CALLER", "40000"),
    ]);
    // Two finished tasks: not active, but stored until their TTL.
    stored_with(&store, json!({"status": "cancelled"}));
    stored_with(&store, json!({"status": "cancelled"}));
    stored_task(&store, "someone-else", working());
    let (_, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(body["result"]["resultType"], "task", "{body}");
    let before = store.count();
    let (_, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(body["error"]["code"], QUOTA_EXCEEDED.0, "{body}");
    assert_eq!(
        body["error"]["message"],
        "quota exceeded: this caller has 3 stored tasks (finished ones count until their TTL \
         deletes them) and the limit (MAX_STORED_TASKS_PER_CALLER) is 3; wait for older tasks \
         to expire"
    );
    assert_eq!(body["error"]["data"], json!({"limit": 3, "stored": 3}));
    assert_eq!(store.count(), before, "nothing stored on refusal");
    assert_eq!(store.held(anonymous()).active, 1);

    // Bytes: a caller whose few tasks hold large arguments is refused by the byte limit.
    let (state, store) = test_state_with(&[("MAX_STORED_BYTES_PER_CALLER", "40000")]);
    let zeros = vec![0; 10_000];
    for _ in 0..2 {
        let (_, body) = call(&state, start_task(json!({"seconds": 1, "zeros": zeros}))).await;
        assert_eq!(body["result"]["resultType"], "task", "{body}");
    }
    let held = store.held(anonymous());
    assert!(held.bytes > 40_000, "{held:?}");
    let (_, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(body["error"]["code"], QUOTA_EXCEEDED.0, "{body}");
    assert_eq!(
        body["error"]["data"],
        json!({"limit": 40000, "storedBytes": held.bytes})
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("MAX_STORED_BYTES_PER_CALLER")),
        "{body}"
    );
}

#[tokio::test]
async fn a_concurrent_burst_on_one_replica_cannot_pass_the_quota() {
    let (state, store) =
        test_state_with(&[("MAX_ACTIVE_TASKS_PER_CALLER", "5"), ("CALL_BURST", "100")]);
    // Creates take a while, as API round trips do: every call checks before any is stored.
    store.set_create_latency(Duration::from_millis(100));
    let calls = (0..20).map(|_| {
        let state = state.clone();
        tokio::spawn(async move { call(&state, start_task(json!({"seconds": 1}))).await })
    });
    let mut created = 0;
    let mut refused = 0;
    for outcome in futures::future::join_all(calls).await {
        let (_, body) = outcome.unwrap();
        if body["result"]["resultType"] == "task" {
            created += 1;
        } else {
            assert_eq!(body["error"]["code"], QUOTA_EXCEEDED.0, "{body}");
            refused += 1;
        }
    }
    assert_eq!((created, refused), (5, 15));
    assert_eq!(store.count(), 5);
}

#[tokio::test]
async fn calls_faster_than_the_call_rate_get_31001_with_retry_after() {
    let (state, store) = test_state_with(&[("CALL_RATE_PER_SECOND", "1"), ("CALL_BURST", "2")]);
    for _ in 0..2 {
        let (_, body) = call(&state, start_task(json!({"seconds": 1}))).await;
        assert_eq!(body["result"]["resultType"], "task", "{body}");
    }
    let (status, body) = call(&state, start_task(json!({"seconds": 1}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], RATE_LIMITED.0, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("rate limited: tools/call is limited to 1 per second per caller"),
        "{message}"
    );
    assert!(body["error"]["data"]["retryAfterMs"].as_u64().unwrap() > 0);
    assert_eq!(body["error"]["data"]["limitPerSecond"], 1.0);
    assert_eq!(store.count(), 2);
}

#[tokio::test]
async fn arguments_over_the_limit_counting_each_dollar_twice_are_refused_unstored() {
    let (state, store) = test_state();
    let mut m = meta(true);
    m["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({"form": {}});
    let delete = |filename: String| {
        rpc(
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {"filename": filename}, "_meta": m}),
        )
    };
    // 30000 `$` take 60000 bytes in the tool's environment: within 64 KiB, so the call goes
    // on to ask its start input.
    let (_, body) = call(&state, delete("$".repeat(30_000))).await;
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    // 33000 `$` are 33000 bytes of JSON but 66000 in the environment.
    let args = json!({"filename": "$".repeat(33_000)});
    let bytes = serde_json::to_string(&args).unwrap().len() + 33_000;
    let (status, body) = call(&state, delete("$".repeat(33_000))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(
        body["error"]["message"],
        format!(
            "Invalid arguments for tool confirm_delete: arguments of {bytes} bytes exceed the \
             65536-byte limit"
        )
    );
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn start_input_answers_over_the_limit_are_refused_unstored() {
    let (state, store) = test_state_with(&[("MAX_START_INPUT_BYTES", "1000")]);
    let mut m = meta(true);
    m["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({"form": {}});
    let answer = json!({"action": "accept", "content": {"confirm": true, "pad": "x".repeat(1000)}});
    let params = json!({"name": "confirm_delete", "arguments": {}, "_meta": m,
        "inputResponses": {"confirm": answer}});
    let bytes = serde_json::to_string(&json!({ "confirm": answer }))
        .unwrap()
        .len();
    let (_, body) = call(&state, rpc("tools/call", params)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(
        body["error"]["message"],
        format!("inputResponses: {bytes} bytes exceed the 1000-byte limit")
    );
    assert_eq!(store.count(), 0);
}

#[tokio::test]
async fn only_the_capabilities_input_requests_need_are_stored() {
    let (state, store) = test_state();
    let mut m = meta(true);
    let caps = &mut m["io.modelcontextprotocol/clientCapabilities"];
    caps["elicitation"] = json!({"form": {"deep": {"x": "y".repeat(1000)}}});
    caps["experimental"] = json!({"big": {"z": "z".repeat(10_000)}});
    caps["roots"] = json!({"listChanged": true});
    let params = json!({"name": "slow_compute", "arguments": {"seconds": 1}, "_meta": m});
    let (_, body) = call(&state, rpc("tools/call", params)).await;
    let id = body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"));
    let stored = store.peek(id).unwrap();
    assert_eq!(
        serde_json::to_value(&stored.spec.client_capabilities).unwrap(),
        json!({"elicitation": {"form": {}}, "roots": {}})
    );
}

#[tokio::test]
async fn update_answers_that_would_overflow_the_task_are_refused_unstored() {
    let (state, store) = test_state_with(&[("MAX_INPUT_RESPONSES_BYTES", "300")]);
    let ask = |message: &str| {
        json!({"method": "elicitation/create", "params": {"mode": "form",
        "message": message, "requestedSchema": {"type": "object"}}})
    };
    let id = stored_with(
        &store,
        json!({"status": "input_required",
            "inputRequests": {"a": ask("A?"), "b": ask("B?")}}),
    );
    let answer = |pad: usize| json!({"action": "accept", "content": {"t": "x".repeat(pad)}});
    let update = |key: &str, pad: usize| {
        rpc(
            "tasks/update",
            json!({"taskId": id, "_meta": meta(true),
            "inputResponses": { key: answer(pad) }}),
        )
    };
    // One answer alone too large.
    let (_, body) = call(&state, update("a", 400)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    let bytes = serde_json::to_string(&json!({"a": answer(400)}))
        .unwrap()
        .len();
    assert_eq!(
        body["error"]["message"],
        format!(
            "the task's inputResponses with these answers: {bytes} bytes exceed the 300-byte limit"
        )
    );
    assert!(store.peek(&id).unwrap().spec.input_responses.is_none());
    // Two answers that fit one by one but not together.
    let (_, body) = call(&state, update("a", 150)).await;
    assert_eq!(body["result"]["resultType"], "complete", "{body}");
    let (_, body) = call(&state, update("b", 150)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    let stored = store.peek(&id).unwrap();
    let keys: Vec<_> = stored
        .spec
        .input_responses
        .as_ref()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["a"]);
}

fn listen_body(task_ids: &[String]) -> Value {
    json!({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
        "params": {"_meta": meta(true), "notifications": {"taskIds": task_ids}}})
}

async fn listen_status(state: &AppState, task_ids: &[String]) -> (StatusCode, Option<Value>) {
    let body = listen_body(task_ids);
    let request = post(&body).body(Body::from(body.to_string())).unwrap();
    let response = tower::ServiceExt::oneshot(crate::app(state.clone()), request)
        .await
        .unwrap();
    let status = response.status();
    let is_stream = response.headers()["content-type"] == "text/event-stream";
    if is_stream {
        return (status, None);
    }
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, Some(serde_json::from_slice(&bytes).unwrap()))
}

#[tokio::test]
async fn listen_with_too_many_ids_is_refused_before_any_lookup() {
    let (state, store) = test_state();
    let ids: Vec<String> = (0..101).map(|_| task_id::generate()).collect();
    let (status, body) = listen_status(&state, &ids).await;
    assert_eq!(status, StatusCode::OK);
    let body = body.expect("an error, not a stream");
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(
        body["error"]["message"],
        "notifications.taskIds names 101 tasks; at most 100 per listen"
    );
    assert_eq!(store.api_reads(), 0);
}

#[tokio::test]
async fn unknown_ids_cost_one_api_read_each_within_the_negative_cache_ttl() {
    let (state, store) = test_state();
    let ids: Vec<String> = (0..100).map(|_| task_id::generate()).collect();
    let (status, body) = listen_status(&state, &ids).await;
    assert_eq!((status, body), (StatusCode::OK, None));
    assert_eq!(store.api_reads(), 100);
    listen_status(&state, &ids).await;
    for _ in 0..3 {
        let (_, body) = get_task(&state, &ids[0]).await;
        assert_eq!(body["error"]["message"], crate::error::TASK_NOT_FOUND);
    }
    assert_eq!(store.api_reads(), 100, "misses were remembered");
    // A task that appears (the watch sees it) is found at once despite the remembered miss.
    let mut task = McpTask::new(
        &ids[0],
        McpTaskSpec {
            tool: "slow_compute".to_owned(),
            tool_uid: None,
            tool_generation: None,
            arguments: None,
            owner: anonymous().to_owned(),
            ttl_ms: Some(60_000),
            poll_interval_ms: None,
            client_capabilities: None,
            start_input_responses: None,
            input_responses: None,
        },
    );
    task.metadata.creation_timestamp = Some(Time(Timestamp::now()));
    store.insert(task);
    let (_, body) = get_task(&state, &ids[0]).await;
    assert_eq!(body["result"]["status"], "working", "{body}");
    let request = axum::http::Request::get("/metrics")
        .body(Body::empty())
        .unwrap();
    let (_, metrics) = send(&state, request).await;
    let metrics = metrics.as_str().unwrap_or_default().to_owned();
    assert!(
        metrics.contains("mcp_frontend_task_lookups_total{source=\"api\"} 100"),
        "{metrics}"
    );
}
