//! The claim channel of a warm pod (`docs/tool-contract.md`, "Warm pods"): a small HTTP/1.1
//! listener that answers the readiness probe and takes exactly one task's claim (`--serve`:
//! one at a time, again after each call). Bounded in connections, time and body size, so
//! nobody but the operator can hold or take the pod.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};

use crate::claim::{self, Claim};

/// Port the listener binds when `MCP_WARM_PORT` is unset.
const DEFAULT_PORT: u16 = 7474;
/// Unclaimed for this long when `MCP_WARM_MAX_WAIT_SECONDS` is unset: the pod ends.
const DEFAULT_MAX_WAIT_SECONDS: u64 = 3600;
/// Largest `MCP_WARM_MAX_WAIT_SECONDS`.
const MAX_WAIT_SECONDS: u64 = 86_400;
/// Largest claim body.
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 32;
/// For a request's headers, and then for its body.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// For a whole connection (one request: no keep-alive).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(25);
/// Tasks a `--serve` pod remembers having run: a late retry of their claim is not run again.
const RAN_REMEMBERED: usize = 64;

/// The prefix of the env vars that configure a warm pod (never passed to what it runs).
pub const ENV_PREFIX: &str = "MCP_WARM_";

/// A warm pod's settings, from its env.
#[derive(Debug, Clone)]
pub struct Config {
    /// SHA-256 of the claim secret (`MCP_WARM_CLAIM_KEY_SHA256`).
    pub key_hash: [u8; 32],
    /// TCP port on 0.0.0.0 (`MCP_WARM_PORT`).
    pub port: u16,
    /// Unclaimed for this long: the pod ends (`MCP_WARM_MAX_WAIT_SECONDS`).
    pub max_wait: Duration,
}

impl Config {
    /// Reads the settings; the error says which one is wrong.
    pub fn from_env() -> Result<Self, String> {
        let key = std::env::var("MCP_WARM_CLAIM_KEY_SHA256").unwrap_or_default();
        let key_hash = claim::hex32(&key).ok_or(
            "MCP_WARM_CLAIM_KEY_SHA256 must be the claim secret's SHA-256 as 64 lowercase hex \
             characters",
        )?;
        let port = match std::env::var("MCP_WARM_PORT") {
            Err(_) => DEFAULT_PORT,
            Ok(text) => text.parse::<u16>().ok().filter(|p| *p > 0).ok_or(format!(
                "MCP_WARM_PORT must be a port from 1 to 65535, got {text:?}"
            ))?,
        };
        let max_wait = match std::env::var("MCP_WARM_MAX_WAIT_SECONDS") {
            Err(_) => DEFAULT_MAX_WAIT_SECONDS,
            Ok(text) => text
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=MAX_WAIT_SECONDS).contains(s))
                .ok_or(format!(
                    "MCP_WARM_MAX_WAIT_SECONDS must be a whole number from 1 to \
                     {MAX_WAIT_SECONDS}, got {text:?}"
                ))?,
        };
        Ok(Self {
            key_hash,
            port,
            max_wait: Duration::from_secs(max_wait),
        })
    }
}

/// The running listener, as the waiting pod sees it.
pub struct Channel {
    shared: Arc<Shared>,
    claims: mpsc::Receiver<Claim>,
}

struct Shared {
    key_hash: [u8; 32],
    /// A `--serve` pod: claimed again once [`Channel::release`]d.
    reusable: bool,
    state: Mutex<State>,
}

struct State {
    /// Where the pod is while nobody holds it.
    phase: Phase,
    /// The task that holds the pod (for good unless `reusable`).
    claimed_by: Option<String>,
    /// The tasks released, newest last (at most [`RAN_REMEMBERED`]).
    ran: VecDeque<String>,
    /// Hands a claim to the pod; holds at most one, since a claim is taken only when the
    /// pod is free and the pod takes it before it releases itself.
    deliver: mpsc::Sender<Claim>,
}

/// Where an unclaimed pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not ready: a bridged server has not answered `initialize` yet. Claims are refused.
    Starting,
    /// Ready to be claimed.
    Waiting,
    /// Ending unclaimed (its wait is over, or its server died). Claims are refused.
    Ending,
}

impl Channel {
    /// Binds 0.0.0.0:`config.port` and serves until the process ends; `/ready` answers 200
    /// once `ready` is (or [`Channel::set_ready`] made it) true. A `reusable` pod takes
    /// another claim after each [`Channel::release`].
    pub async fn listen(config: &Config, ready: bool, reusable: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("0.0.0.0", config.port)).await?;
        let (deliver, claims) = mpsc::channel(1);
        let shared = Arc::new(Shared {
            key_hash: config.key_hash,
            reusable,
            state: Mutex::new(State {
                phase: if ready {
                    Phase::Waiting
                } else {
                    Phase::Starting
                },
                claimed_by: None,
                ran: VecDeque::new(),
                deliver,
            }),
        });
        tokio::spawn(serve(listener, Arc::clone(&shared)));
        Ok(Self { shared, claims })
    }

    /// `/ready` answers 200 from now on (until claimed); after [`Channel::close`], claims are
    /// taken again.
    pub fn set_ready(&self) {
        if let Ok(mut state) = self.shared.state.lock() {
            state.phase = Phase::Waiting;
        }
    }

    /// Refuses claims from now on; the claim that came first if one did (the pod then serves
    /// it: the operator was told it has the pod).
    pub fn close(&mut self) -> Option<Claim> {
        if let Ok(mut state) = self.shared.state.lock() {
            state.phase = Phase::Ending;
        }
        // A claim is handed over under the lock, so after it nothing more can come.
        self.claims.try_recv().ok()
    }

    /// Waits for the next valid claim.
    pub async fn claimed(&mut self) -> Claim {
        match self.claims.recv().await {
            Some(claim) => claim,
            // The sender lives in `shared`, which this channel holds: it is never dropped.
            None => std::future::pending().await,
        }
    }

    /// What frees a reusable pod from `task` once its call is over; see [`Release`].
    pub fn release_of(&self, task: &str) -> Release {
        Release {
            shared: Arc::clone(&self.shared),
            task: task.to_owned(),
        }
    }
}

/// Frees a reusable pod from one task: it is remembered as run and the pod takes the next
/// claim. Only while that task holds the pod, so a late release never frees the next task.
pub struct Release {
    shared: Arc<Shared>,
    task: String,
}

impl Release {
    /// Frees the pod (once: later calls do nothing).
    pub fn release(&self) {
        let Ok(mut state) = self.shared.state.lock() else {
            return;
        };
        if state.claimed_by.as_deref() != Some(self.task.as_str()) {
            return;
        }
        state.claimed_by = None;
        if state.ran.len() == RAN_REMEMBERED {
            state.ran.pop_front();
        }
        state.ran.push_back(self.task.clone());
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors and the like: try again shortly rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            continue; // dropping the stream closes it
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let shared = Arc::clone(&shared);
                async move { Ok::<_, Infallible>(answer(request, &shared).await) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(REQUEST_TIMEOUT)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, connection).await;
            drop(slot);
        });
    }
}

async fn answer(request: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    match (request.uri().path(), request.method()) {
        ("/ready", &Method::GET) => ready(shared),
        ("/claim", &Method::POST) => claim(request, shared).await,
        ("/ready" | "/claim", _) => error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
        _ => error(
            StatusCode::NOT_FOUND,
            "no such path (only /ready and /claim)",
        ),
    }
}

fn ready(shared: &Shared) -> Response<Full<Bytes>> {
    let (status, text) = match shared.state.lock() {
        Ok(state) if state.claimed_by.is_some() => (StatusCode::SERVICE_UNAVAILABLE, "claimed"),
        Ok(state) => match state.phase {
            Phase::Starting => (StatusCode::SERVICE_UNAVAILABLE, "starting"),
            Phase::Waiting => (StatusCode::OK, "waiting"),
            Phase::Ending => (StatusCode::SERVICE_UNAVAILABLE, "ending"),
        },
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "broken"),
    };
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}

async fn claim(request: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    let header = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    if !claim::authorized(header, &shared.key_hash) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong claim secret (Authorization: Bearer <64 lowercase hex>)",
        );
    }
    let body = Limited::new(request.into_body(), MAX_BODY_BYTES).collect();
    let body = match tokio::time::timeout(REQUEST_TIMEOUT, body).await {
        Err(_) => return error(StatusCode::REQUEST_TIMEOUT, "the claim body took too long"),
        Ok(Err(e))
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            let why = format!("the claim body is over {MAX_BODY_BYTES} bytes");
            return error(StatusCode::PAYLOAD_TOO_LARGE, &why);
        }
        Ok(Err(_)) => return error(StatusCode::BAD_REQUEST, "the claim body could not be read"),
        Ok(Ok(body)) => body.to_bytes(),
    };
    let claim = match claim::parse(&body) {
        Ok(claim) => claim,
        Err(why) => return error(StatusCode::BAD_REQUEST, &why),
    };
    let Ok(mut state) = shared.state.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "the pod is broken");
    };
    match &state.claimed_by {
        // The operator retries a claim whose answer it lost: the same task gets the same answer,
        // even once its call is over (it is not run again).
        Some(task) if *task == claim.task_id => claimed(task),
        _ if state.ran.contains(&claim.task_id) => claimed(&claim.task_id),
        Some(task) if shared.reusable => {
            error(StatusCode::CONFLICT, &format!("busy with task {task}"))
        }
        Some(task) => error(StatusCode::CONFLICT, &format!("claimed by task {task}")),
        None if state.phase == Phase::Starting => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the MCP server has not answered initialize yet",
        ),
        None if state.phase == Phase::Ending => {
            error(StatusCode::SERVICE_UNAVAILABLE, "this pod is ending")
        }
        None => {
            let task = claim.task_id.clone();
            // The buffer is empty: the pod took the last claim before it released itself.
            if state.deliver.try_send(claim).is_err() {
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the pod is not taking claims",
                );
            }
            state.claimed_by = Some(task.clone());
            claimed(&task)
        }
    }
}

fn claimed(task: &str) -> Response<Full<Bytes>> {
    json_response(StatusCode::OK, &json!({ "claimed": task }))
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    json_response(status, &json!({ "error": message }))
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
