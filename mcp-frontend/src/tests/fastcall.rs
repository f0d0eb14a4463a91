//! The `tools/call` fast path against the full path: two front ends, one with
//! `FAST_CALL=false`, each over its own task store, get the same requests in the same order;
//! every answer must be byte-identical (status, `Content-Type` and body bytes) once the values
//! a new task gets (its random ID and its timestamps) are replaced by placeholders. The cases
//! are tools × request IDs × (header variants with the plain body, body variants with the
//! standard headers).

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use super::fastget::{
    assert_same, counter_lines, header_variants, raw, request, with_raw_forms, with_tokens,
};
use super::*;

/// The two front ends: with the fast path, and without it.
fn pair(vars: &[(&str, &str)]) -> (AppState, AppState) {
    let (fast, _) = test_state_with(vars);
    let mut off = vars.to_vec();
    off.push(("FAST_CALL", "false"));
    let (full, _) = test_state_with(&off);
    assert!(fast.config.fast_call && !full.config.fast_call);
    (with_tokens(fast, vars), with_tokens(full, vars))
}

/// The tools called: a task-only tool, one whose schema the arguments break, one asking start
/// inputs, a synchronous one, one with a header-mapped argument (always the full path), and
/// one the catalog does not have; each with the arguments of its plain call.
fn tools() -> Vec<(&'static str, Value)> {
    vec![
        ("failing_job", json!({"any": [1, "two"]})),
        ("confirm_delete", json!({"filename": "a.txt"})),
        ("confirm_delete", json!({"filename": 7})),
        ("greet", json!({"name": "Ada"})),
        ("slow_compute", json!({"seconds": 1, "label": "x"})),
        ("no_such_tool", json!({})),
    ]
}

/// Body variants of a call of `tool` with `arguments` and request ID `id`: the plain form first.
fn bodies(tool: &str, arguments: &Value, id: &Value) -> Vec<Vec<u8>> {
    let plain = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta(true)}});
    let mut variants = vec![plain.clone()];
    let mut with = |edit: &dyn Fn(&mut Value)| {
        let mut body = plain.clone();
        edit(&mut body);
        variants.push(body);
    };
    let meta_key = |key: &str| format!("io.modelcontextprotocol/{key}");
    with(&|b| b["extra"] = json!(1));
    with(&|b| b["params"]["task"] = json!({"ttl": 1000}));
    with(&|b| {
        b["params"]["inputResponses"] = json!({"confirm": {"action": "accept",
        "content": {"confirm": true}}})
    });
    with(&|b| drop(b["params"].as_object_mut().unwrap().remove("arguments")));
    with(&|b| b["params"]["arguments"] = json!(null));
    with(&|b| b["params"]["arguments"] = json!([1]));
    with(&|b| b["params"]["arguments"] = json!({"huge": "h".repeat(300 * 1024)}));
    with(&|b| b["params"]["name"] = json!(7));
    with(&|b| drop(b["params"].as_object_mut().unwrap().remove("name")));
    with(&|b| drop(b["params"].as_object_mut().unwrap().remove("_meta")));
    with(&|b| b["params"]["_meta"]["progressToken"] = json!("p"));
    with(&|b| {
        b["params"]["_meta"]["traceparent"] =
            json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    });
    with(&|b| b["params"]["_meta"][meta_key("protocolVersion")] = json!("2025-11-25"));
    with(&|b| b["params"]["_meta"][meta_key("clientCapabilities")] = json!({}));
    with(&|b| {
        drop(
            b["params"]["_meta"]
                .as_object_mut()
                .unwrap()
                .remove(&meta_key("clientInfo")),
        )
    });
    with(&|b| b["params"]["_meta"][meta_key("clientInfo")] = json!(5));
    with(&|b| b["jsonrpc"] = json!("1.0"));
    with(&|b| drop(b.as_object_mut().unwrap().remove("id")));
    with(&|b| b["params"] = json!([tool]));
    with_raw_forms(variants, "tools/call")
}

/// `body` with the values a new task gets (`taskId`, `createdAt`, `lastUpdatedAt` of the
/// result) replaced by placeholders, everything else byte for byte.
fn normalized(body: &[u8]) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(body).into_owned();
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return text.into_bytes();
    };
    for field in ["taskId", "createdAt", "lastUpdatedAt"] {
        if let Some(value) = message["result"][field].as_str() {
            text = text.replace(&format!("\"{value}\""), &format!("\"<{field}>\""));
        }
    }
    text.into_bytes()
}

/// Sends every case to both front ends and compares the answers; returns how many calls the
/// fast path of `fast` served.
async fn differ(vars: &[(&str, &str)]) -> u64 {
    let (fast, full) = pair(vars);
    let ids = [
        json!(1),
        json!(0),
        json!(i64::MAX),
        json!(1.5),
        json!("abc"),
        json!("\u{e9}\"\\"),
        json!(null),
        json!({}),
    ];
    let mut cases = 0;
    for (tool, arguments) in tools() {
        for (n, id) in ids.iter().enumerate() {
            let headers = header_variants("tools/call", tool);
            for (b, body) in bodies(tool, &arguments, id).iter().enumerate() {
                // Every header variant with the plain body; every body with the standard headers.
                let sets: &[_] = if b == 0 { &headers } else { &headers[..1] };
                for set in sets {
                    let (status, kind, body_full) = raw(&full, request(body, set)).await;
                    let want = (status, kind, normalized(&body_full));
                    let (status, kind, body_fast) = raw(&fast, request(body, set)).await;
                    let got = (status, kind, normalized(&body_fast));
                    let case = || format!("tool {tool}, id #{n}, body #{b}, headers {set:?}");
                    assert_same(&got, &want, case);
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 1_000, "{cases} cases");
    // The answers were counted alike, by method and status and by tool and outcome.
    assert_eq!(counts(&fast), counts(&full));
    served(&fast)
}

/// The request and tool-call counters of `state`, as `/metrics` shows them.
fn counts(state: &AppState) -> Vec<String> {
    counter_lines(state, "mcp_frontend_tool_calls_total", "tools/call")
}

/// How many calls the fast path of `state` served.
fn served(state: &AppState) -> u64 {
    state
        .fast_calls
        .as_ref()
        .map_or(0, |n| n.load(Ordering::Relaxed))
}

#[tokio::test(start_paused = true)]
async fn fast_and_full_paths_answer_calls_byte_identically() {
    let created = differ(&[
        ("CALL_RATE_PER_SECOND", "0"),
        ("MAX_ACTIVE_TASKS_PER_CALLER", "0"),
    ])
    .await;
    // The plain bodies (and the pretty-printed and escaped ones) of the four catalog tools
    // without a header-mapped argument, for every ID rmcp reads.
    assert!(
        created >= 4 * 6,
        "the fast path served only {created} calls"
    );
}

#[tokio::test(start_paused = true)]
async fn fast_and_full_paths_authenticate_calls_alike() {
    differ(&[
        ("AUTH_MODE", "static"),
        ("STATIC_TOKENS_FILE", "/unused"),
        ("CALL_RATE_PER_SECOND", "0"),
        ("MAX_ACTIVE_TASKS_PER_CALLER", "0"),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn fast_and_full_paths_apply_the_active_task_quota_alike() {
    // Each store holds the same tasks, so both refuse from the same call on.
    differ(&[
        ("CALL_RATE_PER_SECOND", "0"),
        ("MAX_ACTIVE_TASKS_PER_CALLER", "5"),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_goes_away_cancels_the_task_on_both_paths() {
    for fast_call in ["true", "false"] {
        let (state, store) = test_state_with(&[("FAST_CALL", fast_call)]);
        // `greet` runs synchronously: the call waits for the task, which nothing runs.
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "Ada"}, "_meta": meta(true)}});
        let call = crate::app(state.clone())
            .oneshot(post(&body).body(Body::from(body.to_string())).unwrap());
        // The caller gives up while the call waits: the request's future is dropped.
        assert!(
            tokio::time::timeout(Duration::from_secs(1), call)
                .await
                .is_err()
        );
        let id = store.peek_any().expect("the call created its task");
        tokio::time::sleep(Duration::from_millis(10)).await;
        let task = store.peek(&id).unwrap();
        assert!(
            task.is_cancel_requested(),
            "FAST_CALL={fast_call}: the task was not cancelled"
        );
        assert_eq!(served(&state), u64::from(fast_call == "true"));
    }
}
