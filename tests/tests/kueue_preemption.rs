//! Kueue preempts a running task's Job (`hack/kueue.sh start`, which `make integration` runs): a
//! ClusterQueue with a quota of one task that preempts lower priorities within itself, a
//! low-priority call running, then a high-priority call. Kueue suspends the low one's Job, whose
//! pod is stopped; the high one runs to its result. A tool that does not retry on disruption
//! ends `failed` with reason `Preempted` and its Job is deleted, so the queue never runs the
//! call again; a tool with `retryOnDisruption` waits for admission again and then runs to its
//! own result.

mod common;

use std::time::Instant;

use common::{new_task, start_task_until, wait_failed};
use k8s_openapi::api::batch::v1::Job;
use kube::{Api, Client};
use mcp_task_operator_harness::kueue::{apply, cleanup, delete, queued_tool, queues};
use mcp_task_operator_harness::operator::{
    Operator, WAIT, create_tool, failure_reason, poll_task, result_text, status_message,
    wait_completed, wait_job_stopped,
};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::{Value, json};

/// Says it started, works eight seconds, then returns its task ID.
const SLOW: &str = r#"echo '{"mcp":"status","message":"started"}'; sleep 8; echo "{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done $MCP_TASK_ID\"}]}}""#;
/// Returns its task ID at once.
const BRIEF: &str = r#"echo "{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done $MCP_TASK_ID\"}]}}""#;

/// Queues that preempt lower priorities, the priority classes `<ns>-low` and `<ns>-high`, a
/// `low` tool of `script` (with `spec`) and a `high` tool of [`BRIEF`].
async fn set_up(client: &Client, ns: &str, script: &str, spec: Value) {
    ensure_crds(client).await;
    queues(client, ns, json!({"withinClusterQueue": "LowerPriority"})).await;
    for (class, value) in [("low", 10), ("high", 1000)] {
        let object = json!({"metadata": {"name": format!("{ns}-{class}")}, "value": value});
        apply(client, "WorkloadPriorityClass", None, object).await;
    }
    let priority = |class: &str| json!({"kueue.x-k8s.io/priority-class": format!("{ns}-{class}")});
    let mut low = spec;
    low["jobLabels"] = priority("low");
    create_tool(client, ns, &queued_tool("low", script, low)).await;
    let high = json!({"jobLabels": priority("high")});
    create_tool(client, ns, &queued_tool("high", BRIEF, high)).await;
}

async fn tear_down(client: &Client, ns: &str) {
    for class in ["low", "high"] {
        delete(client, "WorkloadPriorityClass", &format!("{ns}-{class}")).await;
    }
    cleanup(client, ns).await;
}

/// Starts a `low` call, waits until its tool runs, then makes a `high` call that takes its
/// slot; returns both names once the high one has completed with its own result.
async fn preempt(client: &Client, ns: &str) -> (String, String) {
    let low = start_task_until(client, ns, "low", "started").await;
    let high = new_task(client, ns, "high").await;
    let done = wait_completed(client, ns, &high).await;
    assert_eq!(result_text(&done), format!("done {high}"));
    (low, high)
}

#[tokio::test]
async fn a_preempted_task_that_does_not_retry_fails_preempted_and_never_runs_again() {
    with_temp_ns("kueue-preempt", |client, ns| async move {
        set_up(&client, &ns, SLOW, json!({})).await;
        let _operator = Operator::start_leader(&ns).await;
        let (low, _) = preempt(&client, &ns).await;

        let done = wait_failed(&client, &ns, &low).await;
        assert_eq!(failure_reason(&done), "Preempted", "{:?}", done.status);
        // Its Job goes, so the queue cannot admit the call a second time.
        wait_job_stopped(&client, &ns, &low).await;
        tear_down(&client, &ns).await;
    })
    .await;
}

#[tokio::test]
async fn a_preempted_task_that_retries_waits_for_admission_again_and_completes() {
    with_temp_ns("kueue-preempt-retry", |client, ns| async move {
        set_up(&client, &ns, SLOW, json!({"retryOnDisruption": 1})).await;
        let _operator = Operator::start_leader(&ns).await;
        let low = new_task(&client, &ns, "low").await;
        poll_task(&client, &ns, &low, WAIT, |t| status_message(t) == "started").await;
        let high = new_task(&client, &ns, "high").await;
        // The low one says it was preempted and waits, its Job suspended, while the high runs.
        poll_task(&client, &ns, &low, WAIT, |t| {
            status_message(t).starts_with("Preempted")
        })
        .await;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let job = jobs.get(&low).await.expect("the low task's Job");
        assert_eq!(job.spec.and_then(|s| s.suspend), Some(true));
        wait_completed(&client, &ns, &high).await;

        // Admitted again once the slot is free, it runs from the start to its own result.
        let begun = Instant::now();
        let done = wait_completed(&client, &ns, &low).await;
        assert_eq!(result_text(&done), format!("done {low}"));
        eprintln!("high done -> low done again: {:?}", begun.elapsed());
        tear_down(&client, &ns).await;
    })
    .await;
}
