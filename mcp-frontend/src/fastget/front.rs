//! Where the fast path sits: in front of the router and its layer stack, so that a plain poll
//! costs one pass of checks instead of a dozen nested services cloned per request. A request
//! that looks like a poll (`POST /mcp`, `Mcp-Method: tasks/get`, a body of known length of at
//! most [`MAX_POLL_BYTES`]) gets the stack's checks here, in the stack's order: `Host` and
//! `Origin`, the request timeout, the concurrency limit (the same permits), authentication, the
//! replica's availability; then the light parse and, for the caller's known task, the answer.
//! Every other request, and every poll one of those steps would refuse or the fast path does
//! not answer, goes to the router as the request it was, where the full path answers it
//! exactly as without the fast path (`tests/fastget.rs` compares the two byte for byte).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, HttpBody, to_bytes};
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use tower::{Service, ServiceExt};

use crate::state::AppState;

/// The longest body the fast path reads; a poll is a few hundred bytes.
pub const MAX_POLL_BYTES: u64 = 16 * 1024;

/// `inner` (the router) with the `tasks/get` fast path in front of it.
#[derive(Clone)]
pub struct Front<S> {
    state: Arc<AppState>,
    inner: S,
}

impl<S> Front<S> {
    /// The fast path of `state` in front of `inner`.
    pub fn new(state: AppState, inner: S) -> Self {
        Self {
            state: Arc::new(state),
            inner,
        }
    }
}

impl<S> Service<Request> for Front<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if !is_candidate(&self.state, &request) {
            return Box::pin(self.inner.call(request));
        }
        // The ready service serves a poll this path hands on; its clone waits for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let state = self.state.clone();
        Box::pin(async move {
            match serve(&state, request).await {
                Ok(response) => Ok(response),
                Err(request) => inner.oneshot(request).await,
            }
        })
    }
}

/// Whether `request` may be a plain poll: the fast path is on, and method, path, the
/// `Mcp-Method` header and the body's length say so (checked without reading anything).
fn is_candidate(state: &AppState, request: &Request) -> bool {
    state.fast_get.is_some()
        && request.method() == Method::POST
        && request.uri().path() == "/mcp"
        && request
            .headers()
            .get("mcp-method")
            .is_some_and(|m| m.as_bytes() == b"tasks/get")
        && request
            .body()
            .size_hint()
            .upper()
            .is_some_and(|n| n <= MAX_POLL_BYTES.min(state.config.max_body_bytes as u64))
}

/// The answer to a candidate poll, or the request back (unread, or with its body read into
/// memory) for the router. Bounded by the request timeout as the stack is, with its answer.
async fn serve(state: &AppState, request: Request) -> Result<Response, Request> {
    let arrived = Instant::now();
    if crate::origin::refused_header(&state.config, &request).is_some() {
        return Err(request);
    }
    match tokio::time::timeout(
        state.config.request_timeout,
        answer(state, request, arrived),
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(_) => Ok(StatusCode::GATEWAY_TIMEOUT.into_response()),
    }
}

/// The stack's checks after Host/Origin, in its order, then the poll's answer; the request back
/// (its permit returned) when a check refuses it or the fast path does not answer it.
async fn answer(state: &AppState, request: Request, arrived: Instant) -> Result<Response, Request> {
    let Some(fast) = state.fast_get.as_deref() else {
        return Err(request);
    };
    let Ok(permit) = state.requests.acquire().await else {
        return Err(request);
    };
    let Ok(identity) = crate::auth::identify(state, request.headers()).await else {
        return Err(request);
    };
    if crate::routes::unavailable_reason(state).is_some() {
        return Err(request);
    }
    let (parts, body) = request.into_parts();
    // The body's announced length is within the bound: a failed read broke off midway, and
    // gets the full path's answer to an unreadable body.
    let Ok(bytes) = to_bytes(body, MAX_POLL_BYTES as usize).await else {
        let max = state.config.max_body_bytes;
        return Ok(crate::routes::payload_too_large(max));
    };
    if let Some(poll) = super::request::parse(&parts.headers, &bytes)
        && let Some(response) = super::answer(state, fast, &identity.user, &poll, arrived).await
    {
        return Ok(response);
    }
    drop(permit);
    Err(Request::from_parts(parts, Body::from(bytes)))
}
