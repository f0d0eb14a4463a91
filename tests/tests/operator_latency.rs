//! Measured latencies of the real operator on the local cluster, printed as figures (median and
//! worst of at least 20 runs), not asserted: how long after
//!
//! 1. the tool container's process exits the task's terminal status is visible to a watch,
//! 2. the tool prints a status line its `statusMessage` is visible to a watch,
//! 3. the cancel annotation is set a cooperative tool's task is `cancelled`.
//!
//! The Rust tool (`tests/src/bin/rust-tool.rs`) prints the wall-clock time with each line; the
//! node and the test share this machine's clock. Run it with
//!
//! ```sh
//! make integration   # once, or export MTO_OPERATOR_BIN and KUBECONFIG as it does
//! cargo test -p mcp-task-operator-tests --test operator_latency -- --ignored --nocapture
//! ```

use std::time::{Duration, SystemTime};

use kube::{Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_tests::operator::{
    Operator, RUST_TOOL_IMAGE, TaskRecorder, create_task, create_tool, ensure_rust_tool_image,
    printed_time, request_cancel, result_text, summarize, tool, wait_task, wait_terminal,
};
use mcp_task_operator_tests::{ensure_crds, with_temp_ns};
use serde_json::json;

/// Runs per figure (at least 20), and how many tasks run at once.
const RUNS: usize = 20;
const BATCH: usize = 4;

fn report(what: &str, samples: &mut [Duration]) {
    let (median, worst) = summarize(samples);
    println!(
        "{what}: median {median:.0} ms, worst {worst:.0} ms, n = {}",
        samples.len()
    );
}

fn since(earlier: SystemTime, later: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or_default()
}

#[tokio::test]
#[ignore = "a measurement, not a check: run with --ignored --nocapture"]
async fn operator_latencies() {
    ensure_rust_tool_image(env!("CARGO_BIN_EXE_rust-tool"));
    with_temp_ns("op-latency", |client, ns| async move {
        ensure_crds(&client).await;
        let _operator = Operator::start_leader(&ns).await;
        create_tool(
            &client,
            &ns,
            &tool("rust-tool", RUST_TOOL_IMAGE, &[], json!({}), json!({})),
        )
        .await;
        let recorder = TaskRecorder::start(&client, &ns).await;

        let mut exit = exit_to_terminal(&client, &ns, &recorder).await;
        let mut status = status_line_to_message(&client, &ns, &recorder).await;
        let mut cancel = cancel_to_cancelled(&client, &ns, &recorder).await;
        println!("\n==== operator latencies (watch delivery time minus event time) ====");
        report("pod exit -> terminal status visible", &mut exit);
        report("status line -> statusMessage visible", &mut status);
        report(
            "cancel annotation -> cancelled (cooperative tool)",
            &mut cancel,
        );
    })
    .await;
}

/// The tool prints `exiting at T` and exits 0 without a result: the operator must see the
/// container stop (and the log end) to complete the task.
async fn exit_to_terminal(client: &Client, ns: &str, recorder: &TaskRecorder) -> Vec<Duration> {
    let mut samples = Vec::new();
    while samples.len() < RUNS {
        let mut names = Vec::new();
        for _ in 0..BATCH {
            let args = json!({"steps": 0, "plain": true});
            names.push(create_task(client, ns, "rust-tool", args).await.name_any());
        }
        for name in names {
            let done = wait_terminal(client, ns, &name).await;
            assert_eq!(done.task_status(), TaskStatus::Completed, "{done:?}");
            recorder.wait_seen(&name, TaskStatus::Completed).await;
            let exited = printed_time(&result_text(&done), "exiting at ").expect("exit time");
            let seen = recorder
                .of(&name)
                .into_iter()
                .find(|t| t.status == Some(TaskStatus::Completed))
                .expect("completed transition")
                .seen_at;
            samples.push(since(exited, seen));
        }
    }
    samples
}

/// Two tools print a status line every 1.5 s (more than the 1 s coalescing interval), 11 each.
async fn status_line_to_message(
    client: &Client,
    ns: &str,
    recorder: &TaskRecorder,
) -> Vec<Duration> {
    let steps = RUNS.div_ceil(2) + 1;
    let args = json!({"steps": steps, "delayMs": 1500});
    let a = create_task(client, ns, "rust-tool", args.clone())
        .await
        .name_any();
    let b = create_task(client, ns, "rust-tool", args).await.name_any();
    let mut samples = Vec::new();
    for name in [a, b] {
        wait_terminal(client, ns, &name).await;
        recorder.wait_seen(&name, TaskStatus::Completed).await;
        for t in recorder.of(&name) {
            let Some(message) = t.message.as_deref() else {
                continue;
            };
            if message.starts_with("step ")
                && let Some(printed) = printed_time(message, " at ")
            {
                samples.push(since(printed, t.seen_at));
            }
        }
    }
    samples
}

/// A running tool (it has reported its first step) is cancelled; it checks every 20 ms.
async fn cancel_to_cancelled(client: &Client, ns: &str, recorder: &TaskRecorder) -> Vec<Duration> {
    let mut samples = Vec::new();
    while samples.len() < RUNS {
        let mut names = Vec::new();
        for _ in 0..BATCH {
            let args = json!({"steps": 10_000, "delayMs": 1000});
            names.push(create_task(client, ns, "rust-tool", args).await.name_any());
        }
        let mut requested = Vec::new();
        for name in &names {
            wait_task(client, ns, name, Duration::from_secs(60), |t| {
                t.status
                    .as_ref()
                    .and_then(|s| s.status_message.as_deref())
                    .is_some_and(|m| m.starts_with("step "))
            })
            .await;
            requested.push(SystemTime::now());
            request_cancel(client, ns, name).await;
        }
        for (name, at) in names.iter().zip(requested) {
            let done = wait_terminal(client, ns, name).await;
            assert_eq!(done.task_status(), TaskStatus::Cancelled, "{done:?}");
            recorder.wait_seen(name, TaskStatus::Cancelled).await;
            let seen = recorder
                .of(name)
                .into_iter()
                .find(|t| t.status == Some(TaskStatus::Cancelled))
                .expect("cancelled transition")
                .seen_at;
            samples.push(since(at, seen));
        }
    }
    samples
}
