//! The load generator: N keep-alive HTTP/1.1 connections, each sending one POST after another
//! for a fixed time, with per-request latency, throughput and a count of failed answers.
//!
//! Deliberately lean (one hyper connection per task, no pool, no JSON parsing) so that on a
//! 2-core machine the client costs every server the same.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::stats::quantile;

/// One kind of request to send: where, which headers and which bodies (cycled through).
#[derive(Clone, Debug)]
pub struct Target {
    /// The server's address.
    pub addr: SocketAddr,
    /// Request path, e.g. `/mcp`.
    pub path: String,
    /// Headers of every request besides `host`, `content-type` and `content-length`.
    pub headers: Vec<(String, String)>,
    /// The requests, each sent in turn; every connection starts at a different one.
    pub requests: Vec<Request>,
}

/// One request of a [`Target`]: its own headers and body.
#[derive(Clone, Debug)]
pub struct Request {
    /// Headers of this request only (e.g. `Mcp-Name`).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

/// What one load point measured.
#[derive(Clone, Debug, Default)]
pub struct LoadResult {
    /// Answers that were 200 and not a JSON-RPC error.
    pub ok: u64,
    /// Answers that were not (or failed connections).
    pub failed: u64,
    /// Successful requests per second.
    pub rps: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th-percentile latency.
    pub p99: Duration,
    /// Size of the last answer's body, bytes.
    pub body_bytes: usize,
}

/// Drives `target` with `connections` connections: `warmup` unrecorded, then `duration`
/// recorded.
pub async fn run(
    target: &Target,
    connections: usize,
    warmup: Duration,
    duration: Duration,
) -> LoadResult {
    let target = Arc::new(target.clone());
    let started = Instant::now();
    let record_from = started + warmup;
    let stop = record_from + duration;
    let workers: Vec<_> = (0..connections)
        .map(|n| tokio::spawn(connection(target.clone(), n, record_from, stop)))
        .collect();
    let mut result = LoadResult::default();
    let mut latencies = Vec::new();
    for worker in workers {
        let Ok(done) = worker.await else {
            result.failed += 1;
            continue;
        };
        result.ok += done.ok;
        result.failed += done.failed;
        result.body_bytes = result.body_bytes.max(done.body_bytes);
        latencies.extend(done.latencies);
    }
    result.rps = result.ok as f64 / duration.as_secs_f64();
    result.p50 = quantile(&mut latencies, 0.50);
    result.p99 = quantile(&mut latencies, 0.99);
    result
}

/// One answer, exactly as sent: status, `content-type` and body.
#[derive(Clone, Debug)]
pub struct Answer {
    /// HTTP status code.
    pub status: u16,
    /// The `content-type` header ("" when none).
    pub content_type: String,
    /// The `content-encoding` header ("" when none).
    pub content_encoding: String,
    /// The body, as sent (not decoded).
    pub body: Bytes,
}

/// Sends the first request of `target` once, on a fresh connection.
pub async fn once(target: &Target) -> Result<Answer, String> {
    let failed = |what: &str, e: &dyn std::fmt::Display| format!("{what} {}: {e}", target.addr);
    let stream = TcpStream::connect(target.addr)
        .await
        .map_err(|e| failed("cannot connect to", &e))?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| failed("no HTTP/1.1 handshake with", &e))?;
    tokio::spawn(conn);
    let one = target
        .requests
        .first()
        .ok_or_else(|| format!("no request for {}", target.addr))?;
    let mut request = hyper::Request::post(target.path.as_str())
        .header("host", target.addr.to_string())
        .header("content-type", "application/json");
    for (name, value) in target.headers.iter().chain(&one.headers) {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request
        .body(Full::new(one.body.clone()))
        .map_err(|e| failed("invalid request for", &e))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| failed("no answer from", &e))?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        let value = response.headers().get(name).and_then(|v| v.to_str().ok());
        value.unwrap_or_default().to_owned()
    };
    let (content_type, content_encoding) = (header("content-type"), header("content-encoding"));
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| failed("cut answer from", &e))?
        .to_bytes();
    Ok(Answer {
        status,
        content_type,
        content_encoding,
        body,
    })
}

#[derive(Default)]
struct Connection {
    ok: u64,
    failed: u64,
    body_bytes: usize,
    latencies: Vec<Duration>,
}

/// One connection's loop; reconnects when the server closes it.
async fn connection(
    target: Arc<Target>,
    n: usize,
    record_from: Instant,
    stop: Instant,
) -> Connection {
    let mut done = Connection::default();
    let host = target.addr.to_string();
    let mut next = n;
    'connect: while Instant::now() < stop {
        let Ok(stream) = TcpStream::connect(target.addr).await else {
            done.failed += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok((mut sender, conn)) = http1::handshake(TokioIo::new(stream)).await else {
            done.failed += 1;
            continue;
        };
        tokio::spawn(conn);
        while Instant::now() < stop {
            let one = &target.requests[next % target.requests.len()];
            next += 1;
            let mut request = hyper::Request::post(target.path.as_str())
                .header("host", host.as_str())
                .header("content-type", "application/json");
            for (name, value) in target.headers.iter().chain(&one.headers) {
                request = request.header(name.as_str(), value.as_str());
            }
            let Ok(request) = request.body(Full::new(one.body.clone())) else {
                done.failed += 1;
                continue;
            };
            let sent = Instant::now();
            let Ok(response) = sender.send_request(request).await else {
                done.failed += 1;
                continue 'connect;
            };
            let status = response.status();
            let Ok(collected) = response.into_body().collect().await else {
                done.failed += 1;
                continue 'connect;
            };
            let elapsed = sent.elapsed();
            if sent < record_from {
                continue;
            }
            let bytes = collected.to_bytes();
            if status.is_success() && !is_jsonrpc_error(&bytes) {
                done.ok += 1;
                done.body_bytes = bytes.len();
                done.latencies.push(elapsed);
            } else {
                done.failed += 1;
            }
        }
    }
    done
}

/// Whether a JSON-RPC answer carries an error object (a byte search; the load generator does
/// not parse JSON).
fn is_jsonrpc_error(body: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"error\":{";
    body.windows(NEEDLE.len()).any(|w| w == NEEDLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_are_told_from_results() {
        assert!(is_jsonrpc_error(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}"#
        ));
        assert!(!is_jsonrpc_error(
            br#"{"jsonrpc":"2.0","id":1,"result":{"status":"failed"}}"#
        ));
    }
}
