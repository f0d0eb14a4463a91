//! Bad tool output end to end, as one table: real busybox Jobs print binary bytes, endless
//! output without a newline, a result line far over the line and result bounds, garbage JSON,
//! and a result followed by more garbage. Each row states the task's terminal status and its
//! exact error or statusMessage; afterwards the operator is still healthy (/readyz, /healthz,
//! bounded memory) and a normal task still completes.
//!
//! `operator_contract.rs` covers the single cases (a 600 KB result, capped warnings); this table
//! is the bad-input section of docs/RELIABILITY.md.

mod common;

use std::time::Duration;

use common::new_task;
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    TaskRecorder, create_task, create_tool, ensure_example_images, events_for, failure_reason,
    result_is_error, result_text, shell_tool, status_message, wait_task, with_operator,
};
use serde_json::{Value, json};

/// Longest any row takes: the endless row ends by its 12 s deadline, the others at once.
const ROW_WAIT: Duration = Duration::from_secs(120);
/// Bytes of `a` in the giant result line: well over the 1 MiB line and 512 KiB result bounds.
const GIANT_TEXT: usize = 3_000_000;
const GIANT_PREFIX: &str = r#"{"mcp":"result","result":{"content":[{"type":"text","text":""#;
const GIANT_SUFFIX: &str = r#""}]}}"#;

/// How a row's task must end.
enum End {
    /// `completed`, not an error, with exactly this text and no statusMessage.
    Text(String),
    /// `completed`, not an error, with exactly this text and statusMessage.
    TextAndStatus(&'static str, &'static str),
    /// `completed`, not an error, text starting and ending like this, and a Warning Event.
    TextLike {
        start: &'static str,
        end: &'static str,
        warning: &'static str,
    },
    /// `failed` with code -32603, this `data.reason` and a statusMessage starting like this.
    Failed {
        reason: &'static str,
        message: String,
    },
}

/// One tool printing bad output.
struct Row {
    tool: &'static str,
    what: &'static str,
    script: String,
    spec: Value,
    /// The task's `spec.arguments`.
    arguments: Value,
    end: End,
}

fn rows() -> Vec<Row> {
    let giant_bytes = GIANT_PREFIX.len() + GIANT_TEXT + GIANT_SUFFIX.len();
    let garbage = [
        r#"{"mcp":"result","result":{"content":[{"type":"text","text":"cut"}]"#,
        r#"{"mcp":"status","message":42}"#,
        r#"{"mcp":null}"#,
        r#"{"mcp""#,
        r#"{"mcp":"input","requests":[]}"#,
        r#"{"mcp":"error","error":{"code":"x"}}"#,
        r#"{"not-mcp":true}"#,
        r#"[{"mcp":"result"}]"#,
    ];
    let echo_garbage: String = garbage.iter().map(|l| format!("echo '{l}'\n")).collect();
    vec![
        Row {
            tool: "binary",
            what: "binary bytes (control, ESC, invalid UTF-8) on every line, exit 0",
            script: r"i=0; while [ $i -lt 2000 ]; do printf '\377\376\001\033[31m\200 bin\n'; i=$((i+1)); done; printf 'tail\n'"
                .to_owned(),
            spec: json!({}),
            arguments: json!({}),
            end: End::TextLike {
                start: "\u{fffd}\u{fffd}\u{1}\u{1b}[31m\u{fffd} bin\n",
                end: "\u{fffd} bin\ntail",
                warning: "OutputNotUtf8",
            },
        },
        Row {
            tool: "random",
            what: "100 KB of /dev/urandom, exit 0",
            script: "head -c 100000 /dev/urandom; echo; echo the end".to_owned(),
            spec: json!({}),
            arguments: json!({}),
            end: End::TextLike {
                start: "",
                end: "\nthe end",
                warning: "OutputNotUtf8",
            },
        },
        Row {
            tool: "endless",
            what: "endless output without a newline (64 KiB every 0.1 s) until the deadline",
            script: "while :; do head -c 65536 /dev/zero | tr '\\0' x; sleep 0.1; done".to_owned(),
            spec: json!({"activeDeadlineSeconds": 12}),
            arguments: json!({}),
            end: End::Failed {
                reason: "DeadlineExceeded",
                message: "The task ran longer than the tool's deadline".to_owned(),
            },
        },
        Row {
            tool: "blob",
            what: "5,000,000 NUL bytes without a newline, exit 0",
            script: "head -c 5000000 /dev/zero".to_owned(),
            spec: json!({}),
            arguments: json!({}),
            end: End::TextLike {
                start: "[… ",
                end: "\u{0}\u{0} [line cut: 5000000 bytes]",
                warning: "OutputLineCut",
            },
        },
        Row {
            tool: "giant-result",
            what: "a result line of 3 MB (over the 1 MiB line bound)",
            script: format!(
                "printf '%s' '{GIANT_PREFIX}'; head -c {GIANT_TEXT} /dev/zero | tr '\\0' a; printf '%s\\n' '{GIANT_SUFFIX}'; sleep 2"
            ),
            spec: json!({}),
            arguments: json!({}),
            end: End::Failed {
                reason: "ResultTooLarge",
                message: format!(
                    "The tool's result is too large to store (the result is {giant_bytes} bytes; at most 524288 bytes can be stored)"
                ),
            },
        },
        Row {
            tool: "garbage",
            what: "lines that look like messages but are not, exit 0",
            script: echo_garbage,
            spec: json!({}),
            arguments: json!({}),
            end: End::Text(garbage.join("\n")),
        },
        Row {
            tool: "refused-chars",
            what: "DEL and C1 controls (refused by server-side apply) in a log line, a status and a result",
            script: r#"printf 'del \177 c1 \302\200 end\n'
echo '{"mcp":"status","message":"s\u007f"}'
echo '{"mcp":"result","result":{"content":[{"type":"text","text":"r\u0080\u009f"}]}}'"#
                .to_owned(),
            spec: json!({}),
            arguments: json!({}),
            end: End::TextAndStatus("r\u{fffd}\u{fffd}", "s\u{fffd}"),
        },
        Row {
            tool: "refused-args",
            what: "a DEL in the call's arguments, which the Job carries to the tool",
            script: r#"printf '%s\n' "$MCP_TOOL_ARGUMENTS""#.to_owned(),
            spec: json!({}),
            arguments: json!({"text": "a\u{7f}b"}),
            end: End::Text(r#"{"text":"a\u007fb"}"#.to_owned()),
        },
        Row {
            tool: "late-garbage",
            what: "a result, then binary bytes, a second result, an error and broken JSON, exit 3",
            script: r#"echo '{"mcp":"result","result":{"content":[{"type":"text","text":"first"}]}}'
head -c 50000 /dev/urandom; echo
echo '{"mcp":"result","result":{"content":[{"type":"text","text":"second"}]}}'
echo '{"mcp":"error","error":{"code":-32603,"message":"late"}}'
echo '{"mcp": broken'
exit 3"#
                .to_owned(),
            spec: json!({}),
            arguments: json!({}),
            end: End::Text("first".to_owned()),
        },
    ]
}

/// Asserts that `task` ended as `row` says; returns a summary line for the report.
async fn check(client: &kube::Client, ns: &str, row: &Row, task: &McpTask) -> String {
    let name = task.metadata.name.clone().expect("name");
    let tool = row.tool;
    match &row.end {
        End::Text(text) => {
            assert_eq!(
                task.task_status(),
                TaskStatus::Completed,
                "{tool}: {task:?}"
            );
            assert!(!result_is_error(task), "{tool}");
            assert_eq!(&result_text(task), text, "{tool}");
            assert_eq!(status_message(task), "", "{tool}");
            format!("completed, result text {text:?}")
        }
        End::TextAndStatus(text, status) => {
            assert_eq!(
                task.task_status(),
                TaskStatus::Completed,
                "{tool}: {task:?}"
            );
            assert!(!result_is_error(task), "{tool}");
            assert_eq!(result_text(task), *text, "{tool}");
            assert_eq!(status_message(task), *status, "{tool}");
            format!("completed, result text {text:?}, statusMessage {status:?}")
        }
        End::TextLike {
            start,
            end,
            warning,
        } => {
            assert_eq!(
                task.task_status(),
                TaskStatus::Completed,
                "{tool}: {task:?}"
            );
            assert!(!result_is_error(task), "{tool}");
            let text = result_text(task);
            assert!(
                text.starts_with(start) && text.ends_with(end),
                "{tool}: {:?} … {:?}",
                text.chars().take(80).collect::<String>(),
                text.chars().rev().take(80).collect::<String>()
            );
            // The plain output keeps a 16 KiB head and a 48 KiB tail, plus the omission marker.
            assert!(
                text.len() <= 64 * 1024 + 100,
                "{tool}: {} bytes",
                text.len()
            );
            wait_event(client, ns, &name, warning).await;
            format!(
                "completed, {} bytes of lossy text ending {end:?}, Warning {warning}",
                text.len()
            )
        }
        End::Failed { reason, message } => {
            assert_eq!(task.task_status(), TaskStatus::Failed, "{tool}: {task:?}");
            assert_eq!(failure_reason(task), *reason, "{tool}");
            let error = task
                .status
                .as_ref()
                .and_then(|s| s.error.clone())
                .expect("error");
            assert_eq!(error.code, -32603, "{tool}");
            let got = status_message(task);
            assert!(got.starts_with(message.as_str()), "{tool}: {got}");
            format!("failed -32603 {reason}: {got}")
        }
    }
}

/// Waits until the task has a Warning Event with `reason`.
async fn wait_event(client: &kube::Client, ns: &str, name: &str, reason: &str) {
    let started = std::time::Instant::now();
    loop {
        let events = events_for(client, ns, "McpTask", name).await;
        if events
            .iter()
            .any(|e| e.type_ == "Warning" && e.reason == reason)
        {
            return;
        }
        assert!(
            started.elapsed() < ROW_WAIT,
            "{name}: no Warning {reason}: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Resident memory of a process in KiB, from /proc.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn bad_tool_output_ends_each_task_as_the_contract_says_and_the_operator_stays_healthy() {
    with_operator("op-bad-output", async |client, ns, operator| {
        ensure_example_images();
        let recorder = TaskRecorder::start(&client, &ns).await;
        let rows = rows();
        let mut tasks = Vec::new();
        for row in &rows {
            create_tool(
                &client,
                &ns,
                &shell_tool(row.tool, &row.script, row.spec.clone()),
            )
            .await;
            let task = create_task(&client, &ns, row.tool, row.arguments.clone()).await;
            tasks.push(task.metadata.name.clone().expect("name"));
        }
        let mut report = Vec::new();
        for (row, name) in rows.iter().zip(&tasks) {
            let done = wait_task(&client, &ns, name, ROW_WAIT, McpTask::is_terminal).await;
            let summary = check(&client, &ns, row, &done).await;
            report.push(format!("| {} | {summary} |", row.what));
        }
        println!("{}", report.join("\n"));

        // Healthy: alive, ready, memory bounded, and a normal task still completes.
        assert!(operator.is_running(), "the operator survived");
        assert_eq!(operator.get("/readyz").await.map(|(c, _)| c), Some(200));
        assert_eq!(operator.get("/healthz").await.map(|(c, _)| c), Some(200));
        let rss = rss_kib(operator.pid());
        println!(
            "operator resident memory after the table: {} MiB",
            rss / 1024
        );
        assert!(rss < 512 * 1024, "operator RSS {rss} KiB");
        let ok = r#"echo '{"mcp":"result","result":{"content":[{"type":"text","text":"ok"}]}}'"#;
        create_tool(&client, &ns, &shell_tool("normal", ok, json!({}))).await;
        let name = new_task(&client, &ns, "normal").await;
        let done = wait_task(&client, &ns, &name, ROW_WAIT, McpTask::is_terminal).await;
        assert_eq!(done.task_status(), TaskStatus::Completed, "{done:?}");
        assert_eq!(result_text(&done), "ok");
        // No terminal status was ever rewritten (e.g. the late result, error or exit 3).
        tokio::time::sleep(Duration::from_secs(2)).await;
        recorder.assert_terminal_statuses_never_change();
    })
    .await;
}
