//! A real tracing backend as a child process of a test: Jaeger v2 (`MTO_JAEGER_BIN`, built from
//! the Go module proxy by `hack/build-jaeger.sh`) with an OTLP/HTTP receiver, an in-memory
//! store and its query HTTP API, each on a free port of 127.0.0.1. Killed when dropped.

use std::process::Stdio;
use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::Value;
use tokio::process::{Child, Command};

use crate::frontend::free_port;
use crate::mcp_client::http_client;
use crate::operator::WAIT;

/// A running Jaeger; killed (SIGKILL) when dropped.
pub struct Jaeger {
    /// Base URL of the OTLP/HTTP receiver, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub otlp_endpoint: String,
    query: String,
    child: Child,
    dir: std::path::PathBuf,
}

/// One span of a trace as the query API returns it.
#[derive(Debug, Clone)]
pub struct Span {
    /// `spanID` (16 hex digits).
    pub span_id: String,
    /// `operationName`: the span's name.
    pub name: String,
    /// The service that sent it (`service.name`).
    pub service: String,
    /// The span ID of its `CHILD_OF` reference, if any.
    pub parent: Option<String>,
    /// Its tags, key to value.
    pub tags: serde_json::Map<String, Value>,
}

impl Jaeger {
    /// Starts Jaeger with only what the tests use (no UI, no other receivers, no metrics
    /// port) and waits until its query API answers.
    pub async fn start() -> Self {
        let bin = std::env::var("MTO_JAEGER_BIN").expect(
            "MTO_JAEGER_BIN is not set: run the integration tests through `make test` \
             (hack/build-jaeger.sh builds it)",
        );
        let (otlp, query, query_grpc) = (free_port(), free_port(), free_port());
        let dir = std::env::temp_dir().join(format!("mto-jaeger-{otlp}"));
        std::fs::create_dir_all(&dir).expect("jaeger dir");
        let config = dir.join("config.yaml");
        std::fs::write(&config, config_yaml(otlp, query, query_grpc)).expect("jaeger config");
        let log = std::fs::File::create(dir.join("log")).expect("jaeger log");
        let child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("the jaeger binary starts");
        let mut jaeger = Self {
            otlp_endpoint: format!("http://127.0.0.1:{otlp}"),
            query: format!("http://127.0.0.1:{query}"),
            child,
            dir,
        };
        let deadline = tokio::time::Instant::now() + WAIT;
        while jaeger.get("/api/services").await.is_none() {
            if let Ok(Some(status)) = jaeger.child.try_wait() {
                panic!("jaeger exited with {status}:\n{}", jaeger.log());
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "jaeger not ready in {WAIT:?}:\n{}",
                jaeger.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        jaeger
    }

    /// The spans of trace `trace_id` (32 hex digits) stored so far; empty when none are.
    pub async fn trace(&self, trace_id: &str) -> Vec<Span> {
        let Some(body) = self.get(&format!("/api/traces/{trace_id}")).await else {
            return Vec::new();
        };
        let Some(trace) = body["data"].as_array().and_then(|d| d.first()) else {
            return Vec::new();
        };
        let processes = &trace["processes"];
        let spans = trace["spans"].as_array().cloned().unwrap_or_default();
        spans
            .iter()
            .map(|span| {
                let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                let parent = span["references"].as_array().and_then(|refs| {
                    refs.iter()
                        .find(|r| r["refType"] == "CHILD_OF")
                        .map(|r| text(&r["spanID"]))
                });
                let process = span["processID"].as_str().unwrap_or_default();
                let tags = span["tags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| (text(&t["key"]), t["value"].clone()))
                    .collect();
                Span {
                    span_id: text(&span["spanID"]),
                    name: text(&span["operationName"]),
                    service: text(&processes[process]["serviceName"]),
                    parent,
                    tags,
                }
            })
            .collect()
    }

    /// Polls trace `trace_id` until `complete` holds for its spans; panics after [`WAIT`].
    pub async fn wait_trace(
        &self,
        trace_id: &str,
        complete: impl Fn(&[Span]) -> bool,
    ) -> Vec<Span> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let spans = self.trace(trace_id).await;
            if complete(&spans) {
                return spans;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "trace {trace_id} incomplete after {WAIT:?}: {spans:#?}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Jaeger's own log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// GETs `path` of the query API; `None` unless it answers 200 with JSON.
    async fn get(&self, path: &str) -> Option<Value> {
        let url = format!("{}{path}", self.query).parse().ok()?;
        let response = http_client().get(url).await.ok()?;
        if response.status() != 200 {
            return None;
        }
        let bytes = response.into_body().collect().await.ok()?.to_bytes();
        serde_json::from_slice(&bytes).ok()
    }
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("==== jaeger log ====\n{}", self.log());
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// OTLP/HTTP in, the in-memory store, the query API; every listener on loopback.
fn config_yaml(otlp: u16, query: u16, query_grpc: u16) -> String {
    format!(
        "service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_storage:
    backends:
      memory_store:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memory_store
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp}
exporters:
  jaeger_storage_exporter:
    trace_storage: memory_store
"
    )
}
