//! The operator's small HTTP server: `/healthz` (liveness: no reconcile and no leader-election
//! step is stalled, see [`crate::liveness`]), `/readyz` (startup checks passed) and `/metrics` (Prometheus text format).

use axum::Router;
use axum::extract::State as AxumState;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::metrics::render;
use crate::state::State;

/// The router serving the probes and metrics.
pub fn app(state: State) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn healthz(AxumState(state): AxumState<State>) -> Response {
    match state.liveness().check(std::time::Instant::now()) {
        Ok(()) => "ok".into_response(),
        Err(stalled) => {
            tracing::error!(%stalled, "liveness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, stalled).into_response()
        }
    }
}

async fn readyz(AxumState(state): AxumState<State>) -> Response {
    if state.is_ready() {
        "ready".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready").into_response()
    }
}

async fn metrics(AxumState(state): AxumState<State>) -> Response {
    match render(state.registry()) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "failed to render metrics");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use std::time::Duration;

    use super::*;
    use crate::liveness::Liveness;

    async fn get_path(state: &State, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = app(state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn healthz_is_ok_when_idle() {
        assert_eq!(
            get_path(&State::default(), "/healthz").await,
            (StatusCode::OK, "ok".into())
        );
    }

    #[tokio::test]
    async fn healthz_fails_while_a_reconcile_is_stalled() {
        let state = State::new(Liveness::new(Duration::ZERO, Duration::from_secs(60)));
        let liveness = state.liveness();
        let stuck = liveness.reconcile_started("mcptask");
        std::thread::sleep(Duration::from_millis(5));
        let (status, body) = get_path(&state, "/healthz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            body.starts_with("a mcptask reconcile has been running"),
            "{body}"
        );
        drop(stuck);
        assert_eq!(get_path(&state, "/healthz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn healthz_fails_when_the_election_loop_stops() {
        let state = State::new(Liveness::new(Duration::from_secs(60), Duration::ZERO));
        std::thread::sleep(Duration::from_millis(5));
        let (status, body) = get_path(&state, "/healthz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            body.starts_with("the leader-election loop has taken no step"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn readyz_follows_the_ready_flag() {
        let state = State::default();
        assert_eq!(
            get_path(&state, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        state.set_ready(true);
        assert_eq!(get_path(&state, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn metrics_are_served_in_text_format() {
        let state = State::default();
        state.metrics().failed("mcptask", "kube_get");
        let (status, body) = get_path(&state, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            body.contains("mcp_operator_reconcile_failures_total"),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
    }

    #[tokio::test]
    async fn unknown_paths_are_not_found() {
        assert_eq!(
            get_path(&State::default(), "/mcp").await.0,
            StatusCode::NOT_FOUND
        );
    }
}
