//! Client traffic for the fault suite (`tests/tests/chaos/`) and the load run
//! (`tests/tests/load.rs`): MCP requests through the front end Service that retry whatever fails
//! and record every attempt (latency per method, each failure and whether a retry cured it),
//! and `subscriptions/listen` streams that reopen whenever they end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use crate::mcp_client::{PROTOCOL_VERSION, framed, http_client, listen_request, sse_messages};

/// Longest one attempt may take; past it the attempt counts as hung (a failure) and is retried.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call keeps retrying before its failure counts as not cured.
pub const CALL_DEADLINE: Duration = Duration::from_secs(240);
/// A listen stream that sends nothing (not even a keep-alive, every 15 s) for this long is
/// dropped and reopened.
const LISTEN_IDLE: Duration = Duration::from_secs(45);

/// One failed attempt.
#[derive(Debug, Clone)]
pub struct Failure {
    /// When the attempt ended.
    pub at: SystemTime,
    /// The JSON-RPC method (`subscriptions/listen` for streams).
    pub method: String,
    /// What went wrong.
    pub what: String,
    /// How long the attempt took.
    pub took: Duration,
    /// Whether a later attempt of the same call succeeded.
    pub cured: bool,
}

#[derive(Default)]
struct Inner {
    /// Latencies of successful attempts, by method.
    ok: BTreeMap<String, Vec<Duration>>,
    /// Number of failed attempts, by method.
    failed: BTreeMap<String, u64>,
    failures: Vec<Failure>,
    /// Terminal and other statuses seen by listen streams, by task.
    notified: BTreeMap<String, Vec<String>>,
}

/// Every attempt of every client sharing it.
#[derive(Default, Clone)]
pub struct Record(Arc<Mutex<Inner>>);

impl Record {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Latencies of the successful attempts of each method.
    pub fn latencies(&self) -> BTreeMap<String, Vec<Duration>> {
        self.lock().ok.clone()
    }

    /// Failed attempts of each method.
    pub fn failed_counts(&self) -> BTreeMap<String, u64> {
        self.lock().failed.clone()
    }

    /// Every failed attempt so far.
    pub fn failures(&self) -> Vec<Failure> {
        self.lock().failures.clone()
    }

    /// Statuses of `task` that listen streams delivered, in order.
    pub fn notified(&self, task: &str) -> Vec<String> {
        self.lock().notified.get(task).cloned().unwrap_or_default()
    }

    fn failure(&self, method: &str, what: String, took: Duration) -> usize {
        let mut inner = self.lock();
        *inner.failed.entry(method.to_owned()).or_default() += 1;
        inner.failures.push(Failure {
            at: SystemTime::now(),
            method: method.to_owned(),
            what,
            took,
            cured: false,
        });
        inner.failures.len() - 1
    }

    fn cure(&self, indices: &[usize]) {
        let mut inner = self.lock();
        for &i in indices {
            inner.failures[i].cured = true;
        }
    }

    fn success(&self, method: &str, took: Duration) {
        self.lock()
            .ok
            .entry(method.to_owned())
            .or_default()
            .push(took);
    }
}

/// How one attempt ended.
enum Attempt {
    Ok(Value),
    Retry(String, Option<Duration>),
    Fatal(String),
}

/// An MCP client of one URL (the front end Service) that retries failed calls.
#[derive(Clone)]
pub struct Traffic {
    url: String,
    http: HttpClient<HttpConnector, Full<Bytes>>,
    token: Option<String>,
    /// Where attempts are recorded.
    pub record: Record,
}

impl Traffic {
    /// A client of `url` recording into `record`.
    pub fn new(url: &str, record: Record) -> Self {
        Self {
            url: url.to_owned(),
            http: http_client(),
            token: None,
            record,
        }
    }

    /// The same client sending `Authorization: Bearer <token>`.
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// Calls `method` (declaring the tasks extension) until it succeeds; returns its `result`.
    /// Transport errors, hung attempts, HTTP 5xx, -32603, -31001 (rate limited) and -31002 (the
    /// caller's active-task quota: another of its tasks will end) answers and
    /// "Task not found" are retried (after `data.retryAfterMs`, or a growing pause) for up to
    /// [`CALL_DEADLINE`]; `Err` says what was never cured or what cannot be retried.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let started = Instant::now();
        let mut failed = Vec::new();
        let mut pause = Duration::from_millis(250);
        loop {
            let begun = Instant::now();
            let outcome = self.attempt(method, params.clone()).await;
            let took = begun.elapsed();
            let (what, retry_after) = match outcome {
                Attempt::Ok(result) => {
                    self.record.success(method, took);
                    self.record.cure(&failed);
                    return Ok(result);
                }
                Attempt::Fatal(what) => {
                    self.record.failure(method, what.clone(), took);
                    return Err(format!("{method} failed and cannot be retried: {what}"));
                }
                Attempt::Retry(what, retry_after) => (what, retry_after),
            };
            failed.push(self.record.failure(method, what.clone(), took));
            if started.elapsed() > CALL_DEADLINE {
                return Err(format!(
                    "{method} still failing after {} attempts in {CALL_DEADLINE:?}: {what}",
                    failed.len()
                ));
            }
            tokio::time::sleep(retry_after.unwrap_or(pause)).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    async fn attempt(&self, method: &str, params: Value) -> Attempt {
        let (headers, body) = framed(method, params, true);
        let exchange = async {
            let response = self
                .http
                .request(self.request(&headers, &body))
                .await
                .map_err(|e| format!("connection: {e:?}"))?;
            let status = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("reading the body: {e}"))?
                .to_bytes();
            Ok::<_, String>((status, bytes))
        };
        let (status, bytes) = match tokio::time::timeout(ATTEMPT_TIMEOUT, exchange).await {
            Err(_) => return Attempt::Retry(format!("no answer in {ATTEMPT_TIMEOUT:?}"), None),
            Ok(Err(what)) => return Attempt::Retry(what, None),
            Ok(Ok(answer)) => answer,
        };
        let text = String::from_utf8_lossy(&bytes);
        let Ok(reply) = serde_json::from_str::<Value>(&text) else {
            let what = format!(
                "HTTP {status}: {}",
                text.chars().take(200).collect::<String>()
            );
            return if status >= 500 {
                Attempt::Retry(what, None)
            } else {
                Attempt::Fatal(what)
            };
        };
        if status == 200 && reply.get("result").is_some() {
            return Attempt::Ok(reply["result"].clone());
        }
        let error = &reply["error"];
        let code = error["code"].as_i64();
        let what = format!("HTTP {status}: {error}");
        let retry_after = error["data"]["retryAfterMs"]
            .as_u64()
            .map(Duration::from_millis);
        let not_found = code == Some(-32602) && error["message"] == "Task not found";
        if status >= 500 || matches!(code, Some(-32603 | -31001 | -31002)) || not_found {
            Attempt::Retry(what, retry_after)
        } else {
            Attempt::Fatal(what)
        }
    }

    fn request(&self, headers: &[(&str, String)], body: &Value) -> hyper::Request<Full<Bytes>> {
        let mut request = hyper::Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("valid request")
    }

    /// Starts a listener for `task_ids`: a `subscriptions/listen` stream through the Service
    /// that records every `notifications/tasks` status, and reopens (with the tasks not yet
    /// terminal) whenever the stream ends, fails, refuses a task or stays silent. Ends once
    /// every task was notified terminal.
    pub fn listen(&self, task_ids: Vec<String>) -> tokio::task::JoinHandle<()> {
        let traffic = self.clone();
        tokio::spawn(async move { traffic.listen_until_terminal(task_ids).await })
    }

    async fn listen_until_terminal(self, task_ids: Vec<String>) {
        let mut remaining: BTreeSet<String> = task_ids.into_iter().collect();
        let mut failed = Vec::new();
        while !remaining.is_empty() {
            let begun = Instant::now();
            let outcome = self.listen_once(&mut remaining).await;
            match outcome {
                Ok(()) => {
                    self.record.cure(&failed);
                    failed.clear();
                }
                Err(what) => {
                    let index = self
                        .record
                        .failure("subscriptions/listen", what, begun.elapsed());
                    failed.push(index);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
        self.record.cure(&failed);
    }

    /// One stream: `Ok` when it ended cleanly or every task is terminal, `Err` on a failure.
    async fn listen_once(&self, remaining: &mut BTreeSet<String>) -> Result<(), String> {
        let ids: Vec<&String> = remaining.iter().collect();
        let (headers, body) = listen_request("chaos-listen", &ids);
        let begun = Instant::now();
        let response = tokio::time::timeout(
            ATTEMPT_TIMEOUT,
            self.http.request(self.request(&headers, &body)),
        )
        .await
        .map_err(|_| format!("no listen answer in {ATTEMPT_TIMEOUT:?}"))?
        .map_err(|e| format!("connection: {e:?}"))?;
        if response.status() != 200 {
            return Err(format!("listen answered HTTP {}", response.status()));
        }
        let mut body = response.into_body();
        let mut buffer = String::new();
        loop {
            let frame = tokio::time::timeout(LISTEN_IDLE, body.frame())
                .await
                .map_err(|_| format!("listen stream silent for {LISTEN_IDLE:?}"))?;
            let data = match frame {
                None => return Ok(()),
                Some(Err(e)) => return Err(format!("listen stream broke: {e}")),
                Some(Ok(frame)) => frame.into_data().unwrap_or_default(),
            };
            buffer.push_str(&String::from_utf8_lossy(&data).replace("\r\n", "\n"));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                for message in sse_messages(&event) {
                    self.on_listen_message(&message, remaining)?;
                    if message["method"] == "notifications/subscriptions/acknowledged" {
                        // The latency of a listen is the time to its ack.
                        self.record.success("subscriptions/listen", begun.elapsed());
                    }
                    if remaining.is_empty() || message.get("id").is_some() {
                        return Ok(());
                    }
                }
            }
        }
    }

    fn on_listen_message(
        &self,
        message: &Value,
        remaining: &mut BTreeSet<String>,
    ) -> Result<(), String> {
        let params = &message["params"];
        match message["method"].as_str() {
            Some("notifications/subscriptions/acknowledged") => {
                let accepted = &params["notifications"]["taskIds"];
                let refused: Vec<&String> = remaining
                    .iter()
                    .filter(|id| !accepted.as_array().is_some_and(|a| a.contains(&json!(id))))
                    .collect();
                if !refused.is_empty() {
                    return Err(format!("listen refused tasks {refused:?}"));
                }
            }
            Some("notifications/tasks") => {
                let id = params["taskId"].as_str().unwrap_or_default().to_owned();
                let status = params["status"].as_str().unwrap_or_default().to_owned();
                if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
                    remaining.remove(&id);
                }
                self.record
                    .lock()
                    .notified
                    .entry(id)
                    .or_default()
                    .push(status);
            }
            _ => {
                if message.get("error").is_some() {
                    return Err(format!("listen answered an error: {}", message["error"]));
                }
            }
        }
        Ok(())
    }
}

/// Waits until `tools/list` through `traffic` names every tool in `names`, retrying while the
/// Service is not reachable yet (kube-proxy programs a new NodePort a moment after the install).
/// These calls are not recorded in `traffic.record`.
pub async fn wait_for_tools(traffic: &Traffic, names: &[&str]) {
    let traffic = Traffic {
        record: Record::default(),
        ..traffic.clone()
    };
    let started = Instant::now();
    loop {
        let listed = traffic
            .call("tools/list", json!({}))
            .await
            .unwrap_or_else(|e| panic!("tools/list: {e}"));
        let listed: Vec<&str> = listed["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        if names.iter().all(|n| listed.contains(n)) {
            return;
        }
        assert!(
            started.elapsed() < CALL_DEADLINE,
            "tools/list never showed {names:?}; it has {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `p`-th percentile (0–100) of `samples` (sorted here), by nearest rank.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    // Nearest rank: ceil(p/100 * n), 1-based.
    let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
    samples[rank.min(samples.len()) - 1]
}
