//! What one cached `tasks/get` costs inside the front end, step by step, timed in-process on
//! the stored task itself: the figures behind "what stands between the front end and the bare
//! axum ceiling" in the report; and what one `tools/call` costs the front end without the API
//! server, beside rmcp's share of it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, to_bytes};
use axum::http::Request;
use mcp_task_operator_crds::{McpTask, McpTool};
use mcp_task_operator_harness::frontend::UNLIMITED;
use mcp_task_operator_harness::mcp_client::{Mcp, PROTOCOL_VERSION, framed};
use mcp_task_operator_mcp_frontend::config::Config;
use mcp_task_operator_mcp_frontend::fastget::front::Front;
use mcp_task_operator_mcp_frontend::state::{AppState, server_info_meta};
use mcp_task_operator_mcp_frontend::store::memory::MemoryStore;
use mcp_task_operator_mcp_frontend::tools::{CatalogSnapshot, StaticCatalog};
use mcp_task_operator_mcp_frontend::wire;
use rmcp::model::GetTaskResult;
use serde_json::{Value, json};
use tower::ServiceExt;

/// Iterations per step.
const ITERATIONS: u32 = 20_000;

/// Times each step of answering `tasks/get` from a cache hit of `task`; one line per step.
pub fn measure(task: &McpTask) -> Vec<String> {
    let mut stripped = task.clone();
    stripped.metadata.managed_fields = None;
    let managed = serde_json::to_vec(&task.metadata.managed_fields)
        .map(|v| v.len())
        .unwrap_or_default();
    let detailed = wire::detailed_task(task).ok();
    let mut lines = vec![
        step(
            "clone the cached McpTask (as stored, with managedFields)",
            || drop(std::hint::black_box(task.clone())),
        ),
        step("clone the cached McpTask without managedFields", || {
            drop(std::hint::black_box(stripped.clone()))
        }),
        step(
            "map it to rmcp's DetailedTask (crds::wire + JSON round trip)",
            || drop(std::hint::black_box(wire::detailed_task(task))),
        ),
        step("build the serverInfo _meta", || {
            drop(std::hint::black_box(server_info_meta()))
        }),
    ];
    if let Some(detailed) = detailed {
        let mut result = GetTaskResult::new(detailed);
        result.meta = Some(server_info_meta());
        lines.push(step("serialize the GetTaskResult", || {
            drop(std::hint::black_box(serde_json::to_vec(&result)))
        }));
    }
    lines.push(format!(
        "managedFields of the stored task: {managed} B of JSON"
    ));
    lines
}

fn step(what: &str, mut f: impl FnMut()) -> String {
    for _ in 0..ITERATIONS / 10 {
        f();
    }
    let started = Instant::now();
    for _ in 0..ITERATIONS {
        f();
    }
    let each: Duration = started.elapsed() / ITERATIONS;
    format!("{what}: {:.1} µs", each.as_secs_f64() * 1e6)
}

/// Requests per kind and round of [`call_in_process`].
const IN_PROCESS_REQUESTS: u32 = 2_000;

/// What one `tools/call` costs the front end itself, without an API server: the whole app
/// over an in-memory task store, one request at a time, with the `tools/call` fast path (the
/// default) and without it (`FAST_CALL=false`: the layer stack, rmcp's stateless service, the
/// call path), beside a `tools/list` through the same app, which runs nothing of the call
/// path: the share of rmcp and the layers alone. Each is measured twice: called in process
/// (`oneshot`), and over loopback HTTP as the section's client sends it (hyper on both sides,
/// keep-alive). Rounds interleave the six; each figure is the median of the rounds' means
/// (min–max).
pub async fn call_in_process(tool: &McpTool, rounds: usize) -> Result<String, String> {
    let mut ready = serde_json::to_value(tool).map_err(|e| e.to_string())?;
    ready["status"] = json!({"conditions": [{"type": "Ready", "status": "True",
        "reason": "Valid", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let ready: McpTool = serde_json::from_value(ready).map_err(|e| e.to_string())?;
    // The front end with its default fast path and without it (`FAST_CALL=false`), each also
    // served over loopback HTTP.
    let fast = serve(&ready, "true").await?;
    let full = serve(&ready, "false").await?;
    let name = ready.mcp_name();
    // tools/call on both, then tools/list; in process, then over HTTP.
    let series = [(&fast, true), (&full, true), (&fast, false)];
    let mut means: [Vec<Duration>; 6] = Default::default();
    for _ in 0..rounds {
        for (kind, means) in means.iter_mut().enumerate() {
            let ((served, call), http) = (series[kind % 3], kind >= 3);
            let started = Instant::now();
            for n in 0..IN_PROCESS_REQUESTS {
                let (method, params) = if call {
                    ("tools/call", json!({"name": name, "arguments": {"n": n}}))
                } else {
                    ("tools/list", json!({}))
                };
                let reply = if http {
                    served.http.request(method, params, true).await.body
                } else {
                    in_process(&served.app, method, params).await?
                };
                if call && reply["result"]["resultType"] != "task" {
                    return Err(format!("{method} made no task: {reply}"));
                }
            }
            means.push(started.elapsed() / IN_PROCESS_REQUESTS);
        }
    }
    let span = |samples: &mut Vec<Duration>| {
        let mut micros = |q| crate::stats::quantile(samples, q).as_secs_f64() * 1e6;
        let (median, low, high) = (micros(0.5), micros(0.0), micros(1.0));
        format!("{median:.0} µs ({low:.0}–{high:.0})")
    };
    let [
        mut call,
        mut full_call,
        mut list,
        mut http_call,
        mut http_full_call,
        mut http_list,
    ] = means;
    Ok(format!(
        "without the API server (the app over the in-memory store, one request at a time, \
         {rounds} rounds of {IN_PROCESS_REQUESTS} each; tools/list is rmcp's per-request service \
         and the layers, none of the call path): in process tools/call {} (full path, \
         FAST_CALL=false: {}), tools/list {}; over loopback HTTP tools/call {} (full path {}), \
         tools/list {}",
        span(&mut call),
        span(&mut full_call),
        span(&mut list),
        span(&mut http_call),
        span(&mut http_full_call),
        span(&mut http_list)
    ))
}

/// The front end's app in this process and served on a loopback port; the server stops when
/// this is dropped.
struct Served {
    app: Front<axum::Router>,
    http: Mcp,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The app serving `tool` over an in-memory store with the settings of the section's
/// front-end process (no auth, no rate limit, no quota; no API server to ask for
/// authorization either) and `FAST_CALL=fast_call`.
async fn serve(tool: &McpTool, fast_call: &str) -> Result<Served, String> {
    let config = Config::from_lookup(|name| {
        UNLIMITED
            .iter()
            .chain(&[("AUTHORIZATION_MODE", "none"), ("FAST_CALL", fast_call)])
            .find(|(n, _)| *n == name)
            .map(|(_, value)| (*value).to_owned())
    })
    .map_err(|e| e.to_string())?;
    let catalog = StaticCatalog(Arc::new(CatalogSnapshot::from_tools([tool])));
    let state = AppState::new(config, Arc::new(MemoryStore::default()), Arc::new(catalog));
    let app = mcp_task_operator_mcp_frontend::app(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let url = format!(
        "http://{}/mcp",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let served = axum::serve(
        listener,
        axum::ServiceExt::<Request<Body>>::into_make_service(app.clone()),
    );
    Ok(Served {
        app,
        http: Mcp::new(&url),
        server: tokio::spawn(async move { served.await }),
    })
}

/// One request through `app` as [`framed`] makes it (a 2026-07-28 client declaring the tasks
/// extension); the JSON-RPC answer.
async fn in_process(
    app: &Front<axum::Router>,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let (headers, body) = framed(method, params, true);
    let mut request = Request::post("/mcp")
        .header("host", "localhost:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Body::from(body.to_string()))
        .map_err(|e| e.to_string())?;
    let Ok(response) = app.clone().oneshot(request).await;
    let bytes = to_bytes(response.into_body(), 1 << 20)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&bytes)))
}
