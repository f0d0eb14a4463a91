//! Authentication on `/mcp`: 401 challenges, token identities, and task ownership.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;
use tower::ServiceExt;

use super::*;
use crate::auth::Auth;
use crate::error::TASK_NOT_FOUND;
use crate::static_tokens::StaticTokens;

fn token_state() -> (AppState, Arc<MemoryStore>) {
    let (state, store) = test_state_with(&[
        ("AUTH_MODE", "static"),
        ("STATIC_TOKENS_FILE", "/unused"),
        ("RESOURCE_URL", "https://mcp.example/mcp"),
        ("AUTHORIZATION_SERVERS", "https://login.example"),
    ]);
    let tokens = StaticTokens::parse("tok-alice,alice\ntok-bob,bob\n");
    (state.with_auth(Auth::Bearer(Arc::new(tokens))), store)
}

async fn call_as(state: &AppState, token: Option<&str>, body: Value) -> axum::response::Response {
    let mut builder = post(&body);
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let request = builder.body(Body::from(body.to_string())).unwrap();
    crate::app(state.clone()).oneshot(request).await.unwrap()
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401_with_a_metadata_challenge() {
    let (state, _) = token_state();
    let body = rpc("server/discover", json!({"_meta": meta(false)}));
    let response = call_as(&state, None, body.clone()).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        response.headers()["www-authenticate"],
        r#"Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp""#
    );
    let response = call_as(&state, Some("wrong"), body.clone()).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );
    // The body says what failed: no token, or a token that is not valid.
    for (token, says) in [
        (None, "send a bearer token"),
        (Some("wrong"), "the bearer token is not valid"),
    ] {
        let response = call_as(&state, token, body.clone()).await;
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.starts_with("Unauthorized: ") && text.contains(says),
            "{text}"
        );
    }
    assert_eq!(
        call_as(&state, Some("tok-alice"), body).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn protected_resource_metadata_names_the_resource_and_its_servers() {
    let (state, _) = token_state();
    let request = Request::get("/.well-known/oauth-protected-resource/mcp")
        .body(Body::empty())
        .unwrap();
    let (status, body) = send(&state, request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["resource"], "https://mcp.example/mcp");
    assert_eq!(
        body["authorization_servers"],
        json!(["https://login.example"])
    );
}

#[tokio::test]
async fn the_caller_owns_its_tasks_and_nobody_else_sees_them() {
    let (state, store) = token_state();
    let create = rpc(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 1}, "_meta": meta(true)}),
    );
    let response = call_as(&state, Some("tok-alice"), create).await;
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let created: Value = serde_json::from_slice(&bytes).unwrap();
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(store.peek(&id).unwrap().spec.owner, "alice");

    let get = rpc("tasks/get", json!({"taskId": id, "_meta": meta(true)}));
    let as_bob = call_as(&state, Some("tok-bob"), get.clone()).await;
    let bytes = http_body_util::BodyExt::collect(as_bob.into_body())
        .await
        .unwrap()
        .to_bytes();
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["error"]["message"], TASK_NOT_FOUND);
    let as_alice = call_as(&state, Some("tok-alice"), get).await;
    let bytes = http_body_util::BodyExt::collect(as_alice.into_body())
        .await
        .unwrap()
        .to_bytes();
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["result"]["status"], "working", "{answer}");
}

#[tokio::test]
async fn a_token_mode_without_an_authenticator_fails_closed() {
    let (state, _) = test_state_with(&[("AUTH_MODE", "tokenreview"), ("TOKEN_AUDIENCES", "mcp")]);
    let response = call_as(
        &state,
        Some("anything"),
        rpc("server/discover", json!({"_meta": meta(false)})),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}
