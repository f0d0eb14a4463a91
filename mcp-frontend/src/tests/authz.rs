//! Authorization on `/mcp` with RBAC answers from a mocked API server: `tools/list` shows only
//! callable tools, and a refused `tools/call` reads exactly like an unknown tool.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use serde_json::json;

use super::*;
use crate::auth::Auth;
use crate::authz::{AccessReviewer, Authz};
use crate::review_cache::ReviewCache;
use crate::static_tokens::StaticTokens;

/// A front end with static tokens (alice in group `callers`) and RBAC that lets group
/// `callers` call only the `McpTool`s named `greet` and `failing-job`.
fn rbac_state() -> (AppState, Arc<MemoryStore>) {
    let (state, store) = test_state_with(&[
        ("AUTH_MODE", "static"),
        ("STATIC_TOKENS_FILE", "/unused"),
        ("AUTHORIZATION_MODE", "rbac"),
    ]);
    let (service, mut handle) =
        tower_test::mock::pair::<Request<kube::client::Body>, Response<kube::client::Body>>();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let bytes = request.into_body().collect().await.unwrap().to_bytes();
            let review: Value = serde_json::from_slice(&bytes).unwrap();
            let spec = &review["spec"];
            let allowed = spec["groups"] == json!(["callers"])
                && ["greet", "failing-job"].contains(
                    &spec["resourceAttributes"]["name"]
                        .as_str()
                        .unwrap_or_default(),
                );
            let answer = json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview", "spec": spec, "status": {"allowed": allowed}});
            send.send_response(Response::new(kube::client::Body::from(
                answer.to_string().into_bytes(),
            )));
        }
    });
    let client = kube::Client::new(service, "default");
    let reviewer = AccessReviewer::new(client, "default", ReviewCache::default());
    let tokens = StaticTokens::parse("tok-alice,alice,u1,callers\ntok-bob,bob\n");
    let state = state
        .with_auth(Auth::Bearer(Arc::new(tokens)))
        .with_authz(Authz::Rbac(Arc::new(reviewer)));
    (state, store)
}

async fn call_as(state: &AppState, token: &str, body: Value) -> (StatusCode, Value) {
    let request = post(&body)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    send(state, request).await
}

fn names(list: &Value) -> Vec<&str> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn tools_list_shows_only_the_tools_rbac_lets_the_caller_call() {
    let (state, _) = rbac_state();
    let list = rpc("tools/list", json!({"_meta": meta(true)}));
    let (status, alice) = call_as(&state, "tok-alice", list.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&alice), ["failing_job", "greet"]);
    // The answer depends on the caller: no shared cache may keep it.
    assert_eq!(alice["result"]["cacheScope"], "private");
    let (_, bob) = call_as(&state, "tok-bob", list).await;
    assert!(names(&bob).is_empty(), "{bob}");
}

#[tokio::test]
async fn a_refused_tools_call_answers_exactly_as_an_unknown_tool() {
    let (state, store) = rbac_state();
    // slow_compute exists but alice may not call it; "nope" does not exist. Arguments are
    // wrong on purpose: the refusal comes before any check that would tell the two apart.
    let mut answers = Vec::new();
    for name in ["slow_compute", "nope"] {
        let params = json!({"name": name, "arguments": {"seconds": "x"}, "_meta": meta(true)});
        answers.push(
            call_as(&state, "tok-alice", rpc("tools/call", params))
                .await
                .1,
        );
    }
    let [refused, unknown] = <[Value; 2]>::try_from(answers).expect("two answers");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .replace("slow_compute", "nope"),
        unknown["error"]["message"]
    );
    assert_eq!(refused["error"].get("data"), unknown["error"].get("data"));
    assert_eq!(store.count(), 0);
    // A tool RBAC grants works (failing_job runs only as a task: the answer is immediate).
    let (_, granted) = call_as(
        &state,
        "tok-alice",
        rpc(
            "tools/call",
            json!({"name": "failing_job", "arguments": {}, "_meta": meta(true)}),
        ),
    )
    .await;
    assert!(granted.get("error").is_none(), "{granted}");
    assert_eq!(store.count(), 1);
}
