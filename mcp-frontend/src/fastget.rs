//! The `tasks/get` fast path: a poll in the plain form ([`request`]) of a known task of the
//! caller is answered from bytes serialized once per task state ([`answers`]), with the
//! request's `id` spliced in, without rmcp's per-request service.
//!
//! It runs in front of the router ([`front`]), with the checks of its layer stack (Host/Origin,
//! timeout, concurrency limit, authentication) in one pass, and keeps the full path's rules: a terminal task is served from the cache; any other
//! state only once a confirm read shows it current ([`flight`], shared by concurrent polls),
//! so status never goes backwards (`docs/CONFORMANCE.md#status-never-backwards`); both poll
//! limits apply; the request and task-request metrics count it. Everything else (a task that
//! is unknown, another caller's, expired, deleted or not cached; a limit that refuses; a
//! failed read) returns `None` before anything is spent, and the request takes the full path,
//! which answers it exactly as without the fast path. A large answer is sent gzip-coded to a
//! client that accepts it ([`gzip`]); decoded, it is the same bytes.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::task_id;

use crate::state::AppState;

pub mod answers;
pub mod flight;
pub mod front;
pub mod gzip;
pub mod request;

use answers::{Answer, Answers};
use flight::Confirms;

/// The fast path's state: the serialized answers and the confirm reads under way.
pub struct FastGet {
    /// Answers by task ID.
    pub answers: Answers,
    /// Confirm reads under way.
    pub confirms: Confirms,
    /// The size from which an answer is sent gzip-coded to a client that accepts it; `None`:
    /// never.
    gzip_min: Option<usize>,
    /// Polls answered by the fast path.
    served: AtomicU64,
}

impl FastGet {
    /// A fast path keeping at most `budget` bytes of answers, and sending answers of at least
    /// `gzip_min` bytes gzip-coded to clients that accept it.
    pub fn new(budget: usize, gzip_min: Option<usize>) -> Self {
        Self {
            answers: Answers::new(budget),
            confirms: Confirms::default(),
            gzip_min,
            served: AtomicU64::new(0),
        }
    }

    /// Polls the fast path has answered so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

/// The response to `poll` by `caller` (the authenticated user), or `None` when the full path
/// must answer it.
pub async fn answer(
    state: &AppState,
    fast: &FastGet,
    caller: &str,
    poll: &request::Poll,
    arrived: std::time::Instant,
) -> Option<Response> {
    let id = poll.task_id.as_str();
    if !task_id::is_valid(id) {
        return None;
    }
    // Tokio's clock, as the full path's limits use it.
    let now = tokio::time::Instant::now().into_std();
    if let Some(limiter) = &state.poll_limiter
        && limiter.peek(caller, now).is_err()
    {
        return None;
    }
    let version = state.tasks.cached_version(id)?;
    let cached = match fast.answers.get(id, &version) {
        Some(answer) => answer,
        None => {
            let task = state.tasks.get(id).await.ok()??;
            fast.answers
                .keep(id, Answer::build(&task, fast.gzip_min).ok()??)
        }
    };
    let servable = |answer: &Answer| {
        answer.owner == caller && !answer.deleted && !answer.is_expired(Timestamp::now())
    };
    if !servable(&cached) {
        return None;
    }
    let answer = if cached.terminal {
        state.tasks.lookups().record("cache");
        cached
    } else {
        let current = fast
            .confirms
            .confirm(&state.tasks, id, arrived)
            .await
            .ok()??;
        let version = current.metadata.resource_version.as_deref();
        if version == Some(cached.version.as_str()) {
            cached
        } else {
            let answer = fast
                .answers
                .keep(id, Answer::build(&current, fast.gzip_min).ok()??);
            if !servable(&answer) {
                return None;
            }
            answer
        }
    };
    let interval_ms = answer.poll_interval_ms(Timestamp::now());
    if let Some(limiter) = &state.task_poll_limiter {
        // As the full path: at least 1 ms; an answer without an interval allows 1/s.
        let interval = interval_ms.unwrap_or(1000).max(1);
        if limiter.check_at(id, now, 1000.0 / interval as f64).is_err() {
            return None;
        }
    }
    state.metrics.served_poll(arrived.elapsed());
    fast.served.fetch_add(1, Ordering::Relaxed);
    let id_json = request::id_json(&poll.id);
    let gzipped = if poll.accepts_gzip {
        answer.render_gzip(&id_json).await
    } else {
        None
    };
    let coded = gzipped.is_some();
    let body = gzipped.unwrap_or_else(|| answer.render(&id_json, interval_ms));
    let mut response = (StatusCode::OK, axum::body::Body::new(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if coded {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    Some(response)
}
