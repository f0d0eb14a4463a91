//! Where the fast paths sit: in front of the router and its layer stack, so that a plain poll
//! or call costs one pass of checks instead of a dozen nested services cloned per request. A
//! request that looks like one (`POST /mcp`, `Mcp-Method: tasks/get` with a body of known
//! length of at most [`MAX_POLL_BYTES`], or `Mcp-Method: tools/call` with a body of known
//! length within the body limit) gets the stack's checks here, in the stack's order: `Host`
//! and `Origin`, the request timeout, the concurrency limit (the same permits),
//! authentication, the replica's availability; then the light parse and the answer: for a
//! poll of the caller's known task, [`super::answer`]; for a plain call,
//! [`crate::fastcall::answer`]. Every other request, and every one of those steps would refuse
//! or the fast path does not take, goes to the router as the request it was, where the full
//! path answers it exactly as without the fast paths (`tests/fastget.rs` and
//! `tests/fastcall.rs` compare the two byte for byte).

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
        let Some(kind) = candidate(&self.state, &request) else {
            return Box::pin(self.inner.call(request));
        };
        // The ready service serves a poll this path hands on; its clone waits for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let state = self.state.clone();
        Box::pin(async move {
            match serve(&state, kind, request).await {
                Ok(response) => Ok(response),
                Err(request) => inner.oneshot(request).await,
            }
        })
    }
}

/// Which fast path may take a request.
#[derive(Clone, Copy)]
enum Kind {
    /// A `tasks/get` poll.
    Poll,
    /// A `tools/call`.
    Call,
}

impl Kind {
    /// The longest body this kind reads.
    fn max_bytes(self, state: &AppState) -> usize {
        let limit = state.config.max_body_bytes;
        match self {
            Self::Poll => limit.min(MAX_POLL_BYTES as usize),
            Self::Call => limit,
        }
    }
}

/// Which fast path may take `request`: that path is on, and method, path, the `Mcp-Method`
/// header and the body's length say so (checked without reading anything).
fn candidate(state: &AppState, request: &Request) -> Option<Kind> {
    if request.method() != Method::POST || request.uri().path() != "/mcp" {
        return None;
    }
    let kind = match request.headers().get("mcp-method")?.as_bytes() {
        b"tasks/get" if state.fast_get.is_some() => Kind::Poll,
        b"tools/call" if state.fast_calls.is_some() => Kind::Call,
        _ => return None,
    };
    let length = request.body().size_hint().upper()?;
    (length <= kind.max_bytes(state) as u64).then_some(kind)
}

/// The answer to a candidate, or the request back (unread, or with its body read into memory)
/// for the router. Bounded by the request timeout as the stack is, with its answer.
async fn serve(state: &Arc<AppState>, kind: Kind, request: Request) -> Result<Response, Request> {
    let arrived = Instant::now();
    if crate::origin::refused_header(&state.config, &request).is_some() {
        return Err(request);
    }
    match tokio::time::timeout(
        state.config.request_timeout,
        answer(state, kind, request, arrived),
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(_) => Ok(StatusCode::GATEWAY_TIMEOUT.into_response()),
    }
}

/// The stack's checks after Host/Origin, in its order, then the answer; the request back (its
/// permit returned) when a check refuses it or the fast path does not answer it.
async fn answer(
    state: &Arc<AppState>,
    kind: Kind,
    request: Request,
    arrived: Instant,
) -> Result<Response, Request> {
    let Ok(permit) = state.requests.acquire().await else {
        return Err(request);
    };
    // Held until the answer, as the stack's auth layer holds it.
    let Ok(admitted) = crate::auth::admit(state, request.headers(), request.extensions()).await
    else {
        return Err(request);
    };
    let identity = admitted.identity.clone();
    if crate::routes::unavailable_reason(state).is_some() {
        return Err(request);
    }
    let (parts, body) = request.into_parts();
    // The body's announced length is within the bound: a failed read broke off midway, and
    // gets the full path's answer to an unreadable body.
    let Ok(bytes) = to_bytes(body, kind.max_bytes(state)).await else {
        let max = state.config.max_body_bytes;
        return Ok(crate::routes::payload_too_large(max));
    };
    match kind {
        Kind::Poll => {
            if let Some(fast) = state.fast_get.as_deref()
                && let Some(poll) = super::request::parse(&parts.headers, &bytes)
                && let Some(response) =
                    super::answer(state, fast, &identity.user, &poll, arrived).await
            {
                return Ok(response);
            }
        }
        Kind::Call => {
            if let Some(call) = crate::fastcall::parse(state, &parts.headers, &bytes) {
                let response = crate::fastcall::answer(state, identity, call, arrived).await;
                drop(permit);
                return Ok(response);
            }
        }
    }
    drop(permit);
    Err(Request::from_parts(parts, Body::from(bytes)))
}
