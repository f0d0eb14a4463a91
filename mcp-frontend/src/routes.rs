//! Router assembly: `/mcp` (rmcp's Streamable HTTP service, plus our own
//! `subscriptions/listen`), the probes, and the tower layer stack.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use rmcp::model::RequestId;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::auth;
use crate::body;
use crate::error::JsonRpcErrorResponse;
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

/// The router: `/mcp` behind the layer stack, then the probes (outside the trace layer, so
/// they stay out of the logs). [`crate::app`] puts the `tasks/get` fast path in front of it.
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
        .layer(GlobalConcurrencyLimitLayer::with_semaphore(
            state.requests.clone(),
        ))
        .layer(RequestBodyLimitLayer::new(config.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            config.request_timeout,
        ))
        .layer(
            // DEBUG, not INFO: a span per request costs every poll, and the tool call's own
            // span (`crate::trace`) is what traces are about.
            TraceLayer::new_for_http().make_span_with(|request: &Request| {
                tracing::debug_span!(
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
    let max_body_bytes = route.state.config.max_body_bytes;
    let Ok(bytes) = to_bytes(body, max_body_bytes).await else {
        return payload_too_large(max_body_bytes);
    };
    let unavailable = unavailable_reason(&route.state);
    let method = body::peek_method(&bytes);
    tracing::Span::current().record("mcp.method", method.as_deref());
    let mut response = if let Some(reason) = unavailable {
        refuse_unavailable(&bytes, reason)
    } else if method.as_deref() == Some(listen::METHOD) {
        listen::listen_tasks(route.state.clone(), parts, bytes).await
    } else {
        let json = has_json_content_type(&parts.headers);
        let request = Request::from_parts(parts, Body::from(bytes.clone()));
        let mut response = forward(route.rmcp, request).await;
        if crate::ack::is_task_ack_method(method.as_deref()) {
            response = crate::ack::with_server_info(response).await;
        }
        // rmcp answers a JSON body it cannot read with 415 and a serde message (before it
        // dispatches anything); -32700/-32600 say what is wrong. Read only then, so a good
        // message is parsed once, by rmcp.
        match (json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE)
            .then(|| body::check_message(&bytes).err())
            .flatten()
        {
            Some(refused) => (*refused).into_response(),
            None => response,
        }
    };
    if unavailable_reason(&route.state).is_some() {
        // The client's retry then opens a new connection, which the Service may send to a
        // replica that reaches the API server (a kept-alive one would come back here).
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    route.state.metrics.observe(
        method.as_deref(),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The answer to a body that could not be read within `max_body_bytes`: the same words as
/// rmcp's (and tower-http's, for a too large Content-Length) 413.
pub(crate) fn payload_too_large(max_body_bytes: usize) -> Response {
    let message = format!("Payload Too Large: request body exceeds {max_body_bytes} bytes");
    (StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
}

/// Why this replica cannot serve `/mcp` now: the Kubernetes API server is out of reach (its
/// task cache no longer moves, and writes would hang), or the task cache is (re)loading (it
/// could show a task's older state than another replica already did).
pub(crate) fn unavailable_reason(state: &AppState) -> Option<&'static str> {
    if !state.api_health.is_reachable() {
        Some(crate::error::API_SERVER_UNREACHABLE)
    } else if !state.tasks.is_synced() {
        Some(crate::error::TASK_CACHE_SYNCING)
    } else {
        None
    }
}

/// The answer of a replica that cannot serve, at once and whatever the request: HTTP 503 with
/// `Retry-After` and a JSON-RPC -32603 saying why. The request's `id` is kept when the body has
/// one.
pub(crate) fn refuse_unavailable(body: &[u8], reason: &'static str) -> Response {
    #[derive(serde::Deserialize)]
    struct PeekId {
        id: Option<RequestId>,
    }
    let id = serde_json::from_slice::<PeekId>(body)
        .ok()
        .and_then(|p| p.id);
    let mut response =
        JsonRpcErrorResponse::new(id, crate::error::unavailable(reason), false).into_response();
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
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

/// Whether the request says its body is JSON (`application/json`, any parameters), the
/// content type rmcp accepts; other bodies are left to rmcp's 415.
fn has_json_content_type(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
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

/// `/readyz`: 200 once the task and tool caches have synced, while the API server is reachable.
async fn readyz(State(state): State<AppState>) -> Response {
    if state.is_ready() {
        (StatusCode::OK, "ok").into_response()
    } else {
        let reason = if state.api_health.is_reachable() {
            "caches not synced"
        } else {
            "Kubernetes API server unreachable"
        };
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            reason,
        )
            .into_response()
    }
}
