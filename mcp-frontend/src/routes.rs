//! Router assembly: `/mcp` (rmcp's Streamable HTTP service, plus our own
//! `subscriptions/listen`), the probes, and the tower layer stack.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use bytes::Bytes;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower::limit::ConcurrencyLimitLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::auth;
use crate::handler::McpHandler;
use crate::listen;
use crate::origin;
use crate::state::AppState;

/// rmcp's service for `/mcp`, one handler per request.
type McpService = StreamableHttpService<McpHandler, NeverSessionManager>;

/// State of the `/mcp` route.
#[derive(Clone)]
struct McpRoute {
    state: AppState,
    rmcp: McpService,
}

/// The whole application: `/mcp` behind the layer stack, then the probes (outside the trace
/// layer, so they stay out of the logs).
pub fn router(state: AppState) -> Router {
    let config = state.config.clone();
    let handler_state = state.clone();
    let rmcp = StreamableHttpService::new(
        move || Ok(McpHandler::new(handler_state.clone())),
        Arc::new(NeverSessionManager::default()),
        rmcp_config(&state),
    );
    let mcp = Router::new()
        .route("/mcp", any(post_message))
        .with_state(McpRoute {
            state: state.clone(),
            rmcp,
        });
    let mcp = mcp.layer(middleware::from_fn_with_state(
        state.clone(),
        auth::authenticate,
    ));
    // The last `.layer()` is the outermost: trace, timeout, body limit, concurrency, Origin.
    let mcp = mcp
        .layer(middleware::from_fn_with_state(
            config.clone(),
            origin::check_host_and_origin,
        ))
        .layer(ConcurrencyLimitLayer::new(config.max_concurrent_requests))
        .layer(RequestBodyLimitLayer::new(config.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            config.request_timeout,
        ))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request| {
                tracing::info_span!(
                    "mcp_request",
                    http.method = %request.method(),
                    mcp.method = tracing::field::Empty,
                )
            }),
        );
    let probes = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(auth::METADATA_PATH, get(auth::protected_resource_metadata))
        .route(
            &format!("{}/mcp", auth::METADATA_PATH),
            get(auth::protected_resource_metadata),
        )
        .with_state(state);
    mcp.merge(probes)
}

/// rmcp in stateless mode with JSON responses. Host and Origin are checked by our own layer
/// (it also guards `subscriptions/listen`, which never reaches rmcp), so rmcp's is off.
fn rmcp_config(state: &AppState) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_sse_retry(None)
        .with_max_request_body_bytes(state.config.max_body_bytes)
        // NB: not the shutdown token. Cancelling rmcp's token aborts in-flight requests; with
        // JSON responses nothing of rmcp's outlives its request, so graceful shutdown simply
        // waits for them (a synchronous call ends by its tool's limit at the latest).
        .with_cancellation_token(CancellationToken::new())
        .disable_allowed_hosts()
        .disable_allowed_origins()
}

/// `/mcp`: `subscriptions/listen` goes to [`listen`]; everything else to rmcp.
async fn post_message(State(route): State<McpRoute>, request: Request) -> Response {
    if request.method() != Method::POST {
        return forward(route.rmcp, request).await;
    }
    let started = Instant::now();
    let (mut parts, body) = request.into_parts();
    trim_mcp_headers(&mut parts.headers);
    let Ok(bytes) = to_bytes(body, route.state.config.max_body_bytes).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let method = peek_method(&bytes);
    tracing::Span::current().record("mcp.method", method.as_deref());
    let response = if method.as_deref() == Some(listen::METHOD) {
        listen::listen_tasks(route.state.clone(), parts, bytes).await
    } else {
        forward(route.rmcp, Request::from_parts(parts, Body::from(bytes))).await
    };
    route.state.metrics.observe(
        method.as_deref(),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// Drops whitespace around `MCP-*`/`Mcp-*` header values, as RFC 9110 field parsing does
/// before a value is evaluated. hyper's HTTP/1 parser already does so for requests from the
/// wire; doing it here keeps rmcp's comparisons right whatever carried the request.
fn trim_mcp_headers(headers: &mut axum::http::HeaderMap) {
    let untrimmed: Vec<_> = headers
        .iter()
        .filter(|(name, value)| {
            name.as_str().starts_with("mcp-")
                && value
                    .as_bytes()
                    .first()
                    .zip(value.as_bytes().last())
                    .is_some_and(|(a, b)| matches!(a, b' ' | b'\t') || matches!(b, b' ' | b'\t'))
        })
        .map(|(name, _)| name.clone())
        .collect();
    for name in untrimmed {
        let values: Vec<_> = headers
            .get_all(&name)
            .iter()
            .filter_map(|v| {
                let trimmed = v.as_bytes().trim_ascii();
                axum::http::HeaderValue::from_bytes(trimmed).ok()
            })
            .collect();
        headers.remove(&name);
        for value in values {
            headers.append(name.clone(), value);
        }
    }
}

async fn forward(rmcp: McpService, request: Request) -> Response {
    match rmcp.oneshot(request).await {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    }
}

/// The JSON-RPC method of a body, reading nothing else.
fn peek_method(body: &Bytes) -> Option<String> {
    #[derive(Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Peek<'_>>(body)
        .ok()
        .and_then(|p| p.method)
        .map(std::borrow::Cow::into_owned)
}

/// `/metrics`: the Prometheus text format.
async fn metrics(State(state): State<AppState>) -> Response {
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, &state.registry).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// `/readyz`: 200 once the task and tool caches have synced.
async fn readyz(State(state): State<AppState>) -> Response {
    if state.is_ready() {
        (StatusCode::OK, "ok").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "caches not synced",
        )
            .into_response()
    }
}
