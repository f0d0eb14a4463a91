//! Tool output past the kubelet's log rotation on the real cluster. The kubelet rotates a running
//! container's log once it passes `containerLogMaxSize` (10 MiB by default, which this cluster
//! keeps) and serves only the newest file: a tool's plain output of more than that must not cost
//! its last status line, its result, or (across an operator failover) its `input_required`
//! state and the answer to it.

mod common;

use std::time::{Duration, Instant};

use common::{new_task, prepare_examples};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use kube::{Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_harness::operator::{
    Operator, TaskRecorder, answer, create_tool, result_text, shell_tool, status_message,
    wait_status, wait_task,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// 13,000,000 bytes of plain output in 65-byte lines: about 20 MiB in the kubelet's log format,
/// past its 10 MiB rotation size.
const PLAIN_OUTPUT: &str =
    "yes 'plain output of the tool, line after line, sixty-four bytes.' | head -c 13000000; echo";

/// How long a tool stays alive after its plain output: the kubelet looks at log sizes every
/// 10 s, so the log is rotated while it runs.
const STAY_ALIVE: &str = "sleep 25";

/// Until the kubelet has rotated the log of the one tool pod of `ns`: the log it serves no longer
/// holds `marker`, which the tool printed (before its plain output) before this is called.
async fn wait_rotated(client: &Client, ns: &str, marker: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let started = Instant::now();
    loop {
        let pod = pods
            .list(&ListParams::default())
            .await
            .expect("list pods")
            .items
            .into_iter()
            .find(|p| p.metadata.deletion_timestamp.is_none());
        if let Some(pod) = pod {
            let params = LogParams {
                limit_bytes: Some(64 * 1024),
                ..LogParams::default()
            };
            // Empty once the rotation came after the tool's last line.
            if let Ok(log) = pods.logs(&pod.name_any(), &params).await
                && !log.contains(marker)
            {
                eprintln!("log rotated {:?} after the wait began", started.elapsed());
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "the kubelet did not rotate the tool's log within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Before the fix, the stopped container's log was read again and compared with the first read,
/// which had followed the log through its rotation: the second read returned only the newest
/// file, no two reads agreed, and the task failed `OutputUnavailable`.
#[tokio::test]
async fn plain_output_past_the_log_rotation_completes_with_the_last_status() {
    with_temp_ns("op-rotate", |client, ns| async move {
        prepare_examples(&client).await;
        let script = format!(
            "{PLAIN_OUTPUT}\necho '{{\"mcp\":\"status\",\"message\":\"printed it all\"}}'\n\
             {STAY_ALIVE}\necho 'the last plain line'"
        );
        create_tool(&client, &ns, &shell_tool("chatty", &script, json!({}))).await;
        let operator = Operator::start_leader(&ns).await;
        let started = Instant::now();
        let name = new_task(&client, &ns, "chatty").await;
        let done = wait_task(&client, &ns, &name, Duration::from_secs(180), |t| {
            t.is_terminal()
        })
        .await;
        eprintln!(
            "13 MB of plain output: terminal after {:?}",
            started.elapsed()
        );
        assert_eq!(
            done.task_status(),
            TaskStatus::Completed,
            "{:?}\n{}",
            done.status,
            operator.log()
        );
        assert_eq!(status_message(&done), "printed it all");
        let text = result_text(&done);
        assert!(
            text.ends_with("the last plain line"),
            "{}",
            &text[text.len().saturating_sub(200)..]
        );
    })
    .await;
}

/// Asks for input, prints plain output past the rotation size, waits for the answer, then
/// reports and returns its result.
const ASKING_SCRIPT: &str = r#"
echo '{"mcp":"status","message":"asking"}'
echo '{"mcp":"input","requests":{"go":{"method":"roots/list"}}}'
yes 'plain output of the tool, line after line, sixty-four bytes.' | head -c 13000000; echo
until grep -q '"go"' /var/run/mcp/input-responses; do sleep 0.2; done
echo '{"mcp":"status","message":"answered"}'
echo '{"mcp":"result","result":{"content":[{"type":"text","text":"the answer arrived"}]}}'
sleep 5
"#;

/// Before the fix, the new operator read only the newest log file, which lacked the input
/// request: once past the checkpoint's byte count it showed the task `working`, and the answer
/// never reached the tool.
#[tokio::test]
async fn a_new_operator_keeps_input_required_and_the_answer_after_the_log_rotated() {
    with_temp_ns("op-rotate-ha", |client, ns| async move {
        prepare_examples(&client).await;
        create_tool(
            &client,
            &ns,
            &shell_tool("asking", ASKING_SCRIPT, json!({})),
        )
        .await;
        let mut first = Operator::start(&ns, &format!("{ns}-a"), "operator-a", &[]).await;
        first.wait_leading().await;
        let recorder = TaskRecorder::start(&client, &ns).await;
        let name = new_task(&client, &ns, "asking").await;
        wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        wait_rotated(&client, &ns, "\"mcp\":\"input\"").await;
        first.kill().await;

        let second = Operator::start(&ns, &format!("{ns}-b"), "operator-b", &[]).await;
        second.wait_leading().await;
        // Long enough for the new leader to have read the rotated log and decided from it.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let shown = wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        assert_eq!(status_message(&shown), "asking");
        let answered = Instant::now();
        answer(&client, &ns, &name, json!({"go": {"roots": []}})).await;
        let done = wait_task(&client, &ns, &name, Duration::from_secs(120), |t| {
            t.is_terminal()
        })
        .await;
        eprintln!(
            "answer to completed after failover: {:?}",
            answered.elapsed()
        );
        assert_eq!(
            done.task_status(),
            TaskStatus::Completed,
            "{:?}\n{}",
            done.status,
            second.log()
        );
        assert_eq!(result_text(&done), "the answer arrived");
        assert_eq!(status_message(&done), "answered");
        recorder.wait_seen(&name, TaskStatus::Completed).await;
        assert_eq!(
            recorder.statuses(&name),
            [
                TaskStatus::Working,
                TaskStatus::InputRequired,
                TaskStatus::Working,
                TaskStatus::Completed
            ],
            "input_required never flips to working before the answer:\n{}",
            second.log()
        );
    })
    .await;
}
