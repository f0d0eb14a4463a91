//! Bad input to the real front end binary against the real API server, as one table: each row
//! is a raw HTTP request (any bytes, any headers), the exact answer it must get (HTTP status,
//! JSON-RPC error code and message, or the plain-text answer of the transport layer), and after
//! every row no `McpTask` exists in the namespace. A row that hangs fails after [`ROW_WAIT`].
//!
//! docs/RELIABILITY.md's bad-input table is this one; `mcp-frontend/src/tests` checks the
//! protocol rules one by one without a cluster.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use kube::Api;
use kube::api::ListParams;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::fixture_tools::{FIXTURE_TOOLS, serve_fixtures};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::{Mcp, PROTOCOL_VERSION, TASKS_EXTENSION};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod http;
mod rows;

use http::{Answer, send};
use rows::rows;

/// Longest a row may take to be answered: every bad request is refused at once.
const ROW_WAIT: Duration = Duration::from_secs(30);
/// The front end's default `MAX_BODY_BYTES`.
const MAX_BODY: usize = 1024 * 1024;

/// What a row must be answered with.
enum Expect {
    /// A JSON-RPC error: HTTP status, code and message.
    Rpc(u16, i64, Msg),
    /// A plain-text answer of the transport layer (no JSON-RPC body).
    Text(u16, &'static str),
    /// `202 Accepted` with an empty body (a notification).
    Accepted,
    /// A `subscriptions/listen` stream that accepts no task and ends after its final result.
    ListenAcceptsNothing,
}

/// How the JSON-RPC error message must read.
enum Msg {
    /// Exactly this.
    Exact(String),
    /// Starting with the first part and containing the second.
    Like(&'static str, &'static str),
}

fn exact(message: impl Into<String>) -> Msg {
    Msg::Exact(message.into())
}

/// One bad request.
struct Row {
    name: String,
    headers: Vec<(&'static str, Vec<u8>)>,
    body: Vec<u8>,
    /// Send the body chunked, without Content-Length.
    chunked: bool,
    expect: Expect,
}

impl Row {
    fn new(
        name: impl Into<String>,
        headers: Vec<(&'static str, Vec<u8>)>,
        body: Vec<u8>,
        expect: Expect,
    ) -> Self {
        Self {
            name: name.into(),
            headers,
            body,
            chunked: false,
            expect,
        }
    }
}

/// Asserts that `answer` is what `row` expects; returns a one-line summary for the report.
fn check(row: &Row, answer: &Answer) -> String {
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    let name = &row.name;
    match &row.expect {
        Expect::Rpc(status, code, message) => {
            let body: Value = serde_json::from_str(&text)
                .unwrap_or_else(|_| panic!("{name}: not JSON: HTTP {} {text}", answer.status));
            assert_eq!(
                (answer.status, body["error"]["code"].as_i64()),
                (*status, Some(*code)),
                "{name}: {text}"
            );
            let got = body["error"]["message"].as_str().unwrap_or_default();
            match message {
                Msg::Exact(want) => assert_eq!(got, want, "{name}"),
                Msg::Like(start, part) => assert!(
                    got.starts_with(start) && got.contains(part),
                    "{name}: {got}"
                ),
            }
            assert!(
                answer.content_type.starts_with("application/json"),
                "{name}: {}",
                answer.content_type
            );
            format!("{} {code} {}", answer.status, shorten(got))
        }
        Expect::Text(status, want) => {
            assert_eq!((answer.status, text.as_str()), (*status, *want), "{name}");
            format!("{} {want}", answer.status)
        }
        Expect::Accepted => {
            assert_eq!((answer.status, text.as_str()), (202, ""), "{name}");
            "202 (no body)".to_owned()
        }
        Expect::ListenAcceptsNothing => {
            assert_eq!(answer.status, 200, "{name}: {text}");
            assert!(
                answer.content_type.starts_with("text/event-stream"),
                "{name}"
            );
            let messages: Vec<Value> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect();
            assert_eq!(
                messages.len(),
                2,
                "{name}: ack and final result only: {text}"
            );
            assert_eq!(
                messages[0]["method"], "notifications/subscriptions/acknowledged",
                "{name}"
            );
            assert_eq!(
                messages[0]["params"]["notifications"]["taskIds"],
                json!([]),
                "{name}"
            );
            assert_eq!(messages[1]["result"]["resultType"], "complete", "{name}");
            "200 SSE: ack with taskIds [] then the final result".to_owned()
        }
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() > 140 {
        format!("{}…", text.chars().take(140).collect::<String>())
    } else {
        text.to_owned()
    }
}

#[tokio::test]
async fn every_bad_request_gets_its_exact_error_and_stores_nothing() {
    with_temp_ns("bad-input", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        let mcp = Mcp::new(&frontend.url);
        mcp.wait_for_tools(&FIXTURE_TOOLS).await;
        let port: u16 = frontend
            .url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("port");
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);

        let rows = rows();
        let mut report = Vec::new();
        let mut failed = Vec::new();
        for row in &rows {
            let answer = tokio::time::timeout(ROW_WAIT, send(port, row))
                .await
                .unwrap_or_else(|_| panic!("{}: no answer in {ROW_WAIT:?}", row.name));
            // Every row runs; the failures are listed together at the end.
            match std::panic::catch_unwind(AssertUnwindSafe(|| check(row, &answer))) {
                Ok(summary) => report.push(format!("| {} | {summary} |", row.name)),
                Err(_) => failed.push(row.name.clone()),
            }
            let stored = tasks
                .list(&ListParams::default())
                .await
                .expect("list McpTasks");
            if !stored.items.is_empty() {
                failed.push(format!(
                    "{}: stored {} McpTask(s)",
                    row.name,
                    stored.items.len()
                ));
            }
        }
        println!("{}", report.join("\n"));
        assert!(failed.is_empty(), "rows failed (see above): {failed:#?}");

        // The list above sees what a good call stores, and the front end is still serving.
        let id = mcp
            .start_task("slow_compute", json!({ "seconds": 0 }))
            .await;
        let stored = tasks
            .list(&ListParams::default())
            .await
            .expect("list McpTasks");
        assert_eq!(
            stored
                .items
                .iter()
                .filter_map(|t| t.metadata.name.as_deref())
                .collect::<Vec<_>>(),
            [id.as_str()]
        );
        assert!(rows.len() >= 50, "{} rows", rows.len());
    })
    .await;
}
