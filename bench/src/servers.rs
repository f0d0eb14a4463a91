//! The baselines for `tasks/get`, each run as a child process of the harness (like the real
//! front end), with the front end's transport settings (`TCP_NODELAY` on every connection, the
//! same tracing subscriber at the same level):
//!
//! - `serve-axum`: a bare axum handler that reads the body and answers every POST with fixed
//!   bytes (the HTTP ceiling);
//! - `serve-jsonrpc`: an axum handler that parses the JSON-RPC body with serde_json and answers
//!   from a map of results serialized at start, the request's `id` spliced in (the realistic
//!   ceiling of a `tasks/get` server);
//! - `serve-rmcp` ([`crate::rmcp_server`]): a plain rmcp server with its own `TaskManager`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use bytes::Bytes;
use serde::Deserialize;
use tokio::process::{Child, Command};
use tracing_subscriber::EnvFilter;

/// A baseline server running as a child process; killed when dropped.
pub struct ServerProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
}

impl ServerProcess {
    /// Starts this binary with `args` (a `serve-*` subcommand and its arguments; the port is
    /// appended) with `RUST_LOG=info`, as the harness starts the front end, and waits until it
    /// accepts connections.
    pub async fn start(args: &[&str]) -> Result<Self, String> {
        let port = mcp_task_operator_harness::frontend::free_port();
        let exe = std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))?;
        let child = Command::new(exe)
            .args(args)
            .arg(port.to_string())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {args:?}: {e}"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                return Err(format!("{args:?} does not listen on {addr}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Self { addr, child })
    }

    /// The process ID.
    pub fn pid(&self) -> Result<u32, String> {
        self.child
            .id()
            .ok_or_else(|| format!("the server on {} has exited", self.addr))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// `serve-axum CONTENT_TYPE BODY_FILE PORT`: reads each POST /mcp body and answers with the
/// file's bytes.
pub async fn serve_axum(content_type: String, body_file: &str, port: u16) -> Result<(), String> {
    let body =
        Bytes::from(std::fs::read(body_file).map_err(|e| format!("cannot read {body_file}: {e}"))?);
    let app = Router::new().route(
        "/mcp",
        post(move |request: Bytes| {
            let body = body.clone();
            let content_type = content_type.clone();
            async move {
                std::hint::black_box(request);
                ([(header::CONTENT_TYPE, content_type)], body)
            }
        }),
    );
    serve(app, port).await
}

/// `serve-jsonrpc MAP_FILE PORT`: the file is a JSON object of task ID → `tasks/get` result;
/// each result is serialized once, at start.
pub async fn serve_jsonrpc(map_file: &str, port: u16) -> Result<(), String> {
    let text = std::fs::read(map_file).map_err(|e| format!("cannot read {map_file}: {e}"))?;
    let map: HashMap<String, serde_json::Value> = serde_json::from_slice(&text)
        .map_err(|e| format!("{map_file} is not a JSON object of results: {e}"))?;
    let results: HashMap<String, Bytes> = map
        .into_iter()
        .map(|(id, result)| (id, Bytes::from(result.to_string())))
        .collect();
    let results = Arc::new(results);
    let app = Router::new().route(
        "/mcp",
        post(move |body: Bytes| {
            let results = results.clone();
            async move {
                match answer_jsonrpc(&results, &body) {
                    Ok(answer) => {
                        ([(header::CONTENT_TYPE, "application/json")], answer).into_response()
                    }
                    Err(refusal) => refusal.into_response(),
                }
            }
        }),
    );
    serve(app, port).await
}

#[derive(Deserialize)]
struct Call<'a> {
    jsonrpc: &'a str,
    id: serde_json::Value,
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(rename = "taskId")]
    task_id: &'a str,
}

/// The JSON-RPC answer to one `tasks/get` body, or the HTTP refusal of anything else.
fn answer_jsonrpc(
    results: &HashMap<String, Bytes>,
    body: &[u8],
) -> Result<Vec<u8>, (StatusCode, &'static str)> {
    let call = serde_json::from_slice::<Call<'_>>(body)
        .map_err(|_| (StatusCode::BAD_REQUEST, "not a tasks/get request"))?;
    if call.jsonrpc != "2.0" || call.method != "tasks/get" {
        return Err((StatusCode::NOT_FOUND, "method not found"));
    }
    let result = results
        .get(call.params.task_id)
        .ok_or((StatusCode::NOT_FOUND, "task not found"))?;
    let id = call.id.to_string();
    let mut out = Vec::with_capacity(result.len() + id.len() + 40);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.push(b'}');
    Ok(out)
}

/// Serves `app` on 127.0.0.1:`port` as the front end serves: its tracing subscriber and
/// filter (`RUST_LOG`, rmcp's per-request lines held to `warn`) and `TCP_NODELAY`.
pub async fn serve(app: Router, port: u16) -> Result<(), String> {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info".into())
        .add_directive(
            "rmcp::service=warn"
                .parse()
                .map_err(|e| format!("bad filter directive: {e}"))?,
        );
    let _telemetry = mcp_task_operator_telemetry::init("mto-bench-baseline", filter, true)
        .map_err(|e| format!("cannot install tracing: {e}"))?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot bind 127.0.0.1:{port}: {e}"))?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, app)
        .await
        .map_err(|e| format!("serving on port {port} failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jsonrpc_baseline_splices_the_id_into_the_stored_result() {
        let results = HashMap::from([("t1".to_owned(), Bytes::from_static(b"{\"a\":1}"))]);
        let body = br#"{"jsonrpc":"2.0","id":"x7","method":"tasks/get","params":{"taskId":"t1","_meta":{}}}"#;
        assert_eq!(
            answer_jsonrpc(&results, body).map(String::from_utf8),
            Ok(Ok(
                r#"{"jsonrpc":"2.0","id":"x7","result":{"a":1}}"#.to_owned()
            ))
        );
        let unknown = br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t2"}}"#;
        assert_eq!(
            answer_jsonrpc(&results, unknown),
            Err((StatusCode::NOT_FOUND, "task not found"))
        );
    }
}
