//! The production signals as metrics, read from the real binaries' /metrics while a test acts
//! on the real cluster: the front end counts `tasks/get` answers by outcome (a -32602 "not
//! found" counts exactly once) and `tools/call` by tool and outcome; the operator counts failed
//! tasks by reason (its own reasons apart from a tool's own error), observes how long work ran
//! after a cancel request, and reports stored tasks by status (every status, 0 included).

mod common;

use std::time::{Duration, Instant};

use common::{start_operator, wait_cancelled, wait_failed};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{
    Operator, WAIT, create_task, create_tool, failure_reason, request_cancel, shell_tool,
    wait_task, wait_terminal,
};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;

/// The value of the sample `series` (name and labels as /metrics prints them) in `text`; 0
/// when it is not there.
fn sample(text: &str, series: &str) -> f64 {
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or(0.0)
}

async fn operator_metrics(operator: &Operator) -> String {
    operator.get("/metrics").await.expect("operator /metrics").1
}

/// Waits until `series` reads `value` (the operator records a task's end just after the status
/// write that the test's watch may see first) and returns the whole text.
async fn wait_sample(operator: &Operator, series: &str, value: f64) -> String {
    let started = Instant::now();
    loop {
        let text = operator_metrics(operator).await;
        if sample(&text, series) == value {
            return text;
        }
        assert!(
            started.elapsed() < WAIT,
            "{series} never read {value}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Says it started, then ignores its cancel file.
const SLEEPER: &str = r#"echo '{"mcp":"status","message":"started"}'; sleep 3600"#;

const NOT_FOUND: &str =
    r#"mcp_frontend_task_requests_total{method="tasks/get",outcome="task_not_found"}"#;
const GET_OK: &str = r#"mcp_frontend_task_requests_total{method="tasks/get",outcome="ok"}"#;

#[tokio::test]
async fn the_front_end_counts_tasks_get_by_outcome_and_tool_calls_by_tool() {
    with_temp_ns("metrics-fe", |client, ns| async move {
        ensure_crds(&client).await;
        // The operator marks the tool valid; the front end offers only valid tools.
        let _operator = Operator::start_leader(&ns).await;
        create_tool(&client, &ns, &shell_tool("echo-m", "echo hi", json!({}))).await;
        let frontend = Frontend::start(&ns, &[]).await;
        let mcp = Mcp::new(&frontend.url);
        mcp.wait_for_tools(&["echo-m"]).await;
        // The series a ratio divides by exist before the first answer.
        let text = frontend.metrics().await;
        assert!(text.contains(&format!("{NOT_FOUND} 0")), "{text}");
        assert!(text.contains(&format!("{GET_OK} 0")), "{text}");

        let unknown = mcp_task_operator_crds::task_id::generate();
        let reply = mcp.get_task(&unknown).await;
        assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
        assert_eq!(frontend.counter(NOT_FOUND).await, 1);
        assert_eq!(frontend.counter(GET_OK).await, 0);

        let id = mcp.start_task("echo-m", json!({})).await;
        let calls = r#"mcp_frontend_tool_calls_total{tool="echo-m",outcome="task"}"#;
        assert_eq!(frontend.counter(calls).await, 1);
        let reply = mcp.get_task(&id).await;
        assert_eq!(reply.error_code(), None, "{}", reply.body);
        assert_eq!(frontend.counter(GET_OK).await, 1);
        assert_eq!(
            frontend.counter(NOT_FOUND).await,
            1,
            "a found task is not counted missing"
        );

        // A name the catalog does not have is labelled `other`, never with the client's string.
        let reply = mcp.call_tool("no_such_tool_xyz", json!({})).await;
        assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
        let other = r#"mcp_frontend_tool_calls_total{tool="other",outcome="unknown_tool"}"#;
        assert_eq!(frontend.counter(other).await, 1);
        assert!(!frontend.metrics().await.contains("no_such_tool_xyz"));

        let reply = mcp.cancel_task(&unknown).await;
        assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
        let cancel =
            r#"mcp_frontend_task_requests_total{method="tasks/cancel",outcome="task_not_found"}"#;
        assert_eq!(frontend.counter(cancel).await, 1);
    })
    .await;
}

#[tokio::test]
async fn the_operator_counts_failures_by_reason_work_after_cancel_and_tasks_by_status() {
    with_temp_ns("metrics-op", |client, ns| async move {
        let operator = start_operator(&client, &ns, &[]).await;
        let not_found = r#"mcp_operator_task_failures_total{reason="ToolNotFound"}"#;
        let tool_error = r#"mcp_operator_task_failures_total{reason="ToolError"}"#;
        let oom = r#"mcp_operator_task_failures_total{reason="OOMKilled"}"#;
        let cancels = "mcp_operator_cancel_stop_seconds_count";
        let text = operator_metrics(&operator).await;
        assert_eq!(sample(&text, not_found), 0.0, "{text}");
        assert_eq!(sample(&text, cancels), 0.0, "{text}");

        // The operator's own reason.
        let task = create_task(&client, &ns, "no_such_tool", json!({})).await;
        let name = task.metadata.name.clone().expect("name");
        let failed = wait_terminal(&client, &ns, &name).await;
        assert_eq!(failure_reason(&failed), "ToolNotFound");
        wait_sample(&operator, not_found, 1.0).await;

        // A tool's own error, even one naming an operator reason, is a tool error.
        let script = r#"echo '{"mcp":"error","error":{"code":-32000,"message":"no","data":{"reason":"OOMKilled"}}}'"#;
        create_tool(&client, &ns, &shell_tool("fails", script, json!({}))).await;
        let task = create_task(&client, &ns, "fails", json!({})).await;
        let name = task.metadata.name.clone().expect("name");
        wait_failed(&client, &ns, &name).await;
        let text = wait_sample(&operator, tool_error, 1.0).await;
        assert_eq!(sample(&text, oom), 0.0, "{text}");
        assert_eq!(sample(&text, not_found), 1.0, "{text}");

        // A tool that ignores its cancel runs until its grace period ends: one observation.
        let spec = json!({"cancelGracePeriodSeconds": 2});
        create_tool(&client, &ns, &shell_tool("sleeper", SLEEPER, spec)).await;
        let task = create_task(&client, &ns, "sleeper", json!({})).await;
        let name = task.metadata.name.clone().expect("name");
        wait_task(&client, &ns, &name, WAIT, |t| {
            mcp_task_operator_harness::operator::status_message(t).contains("started")
        })
        .await;
        request_cancel(&client, &ns, &name).await;
        wait_cancelled(&client, &ns, &name).await;
        let text = wait_sample(&operator, cancels, 1.0).await;
        // It ran at least its grace period after the request.
        let ran = sample(&text, "mcp_operator_cancel_stop_seconds_sum");
        assert!(ran >= 2.0, "{text}");
        assert_eq!(
            sample(&text, r#"mcp_operator_cancel_stop_seconds_bucket{le="1.0"}"#),
            0.0,
            "{text}"
        );
        assert_eq!(sample(&text, oom) + sample(&text, tool_error), 1.0);

        // Stored tasks by status, from the operator's task cache (refreshed every sweep).
        let started = Instant::now();
        let expected = [("failed", 2.0), ("cancelled", 1.0), ("working", 0.0), ("completed", 0.0)];
        loop {
            let text = operator_metrics(&operator).await;
            let now: Vec<f64> = expected
                .iter()
                .map(|(s, _)| sample(&text, &format!("mcp_operator_tasks{{status=\"{s}\"}}")))
                .collect();
            if expected.iter().map(|(_, n)| *n).eq(now.iter().copied())
                && text.contains(r#"mcp_operator_tasks{status="input_required"} 0"#)
            {
                break;
            }
            assert!(started.elapsed() < WAIT, "tasks by status never became {expected:?}:\n{text}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await;
}
