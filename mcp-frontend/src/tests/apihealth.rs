//! A replica that cannot reach the Kubernetes API server: not ready, every `/mcp` request
//! refused at once with a clear -32603 (HTTP 503, `Retry-After`, `Connection: close`), and
//! served again once a probe succeeds.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;
use tower::ServiceExt;

use super::{get_task, meta, rpc, send, stored_task, test_state, working};
use crate::error::API_SERVER_UNREACHABLE;

#[tokio::test]
async fn unreachable_api_server_fails_readiness_and_refuses_requests_at_once() {
    let (state, store) = test_state();
    let id = stored_task(&store, super::anonymous(), working());
    // Two failed probes in a row: unreachable.
    state.api_health.record(false);
    state.api_health.record(false);

    let probe = Request::get("/readyz").body(Body::empty()).unwrap();
    let (status, body) = send(&state, probe).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body, json!("Kubernetes API server unreachable"));

    let body = rpc("tasks/get", json!({"taskId": id, "_meta": meta(true)}));
    let request = super::post(&body)
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(response.headers()["connection"], "close");
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(answer["error"]["message"], API_SERVER_UNREACHABLE);
    assert_eq!(answer["error"]["data"]["retryAfterMs"], 1000);

    // One successful probe: served again.
    state.api_health.record(true);
    let (status, body) = get_task(&state, &id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["status"], "working");
}
