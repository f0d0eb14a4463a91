//! A task's TTL while it waits for a slot: behind the tool's own limit
//! (`McpTool.spec.maxConcurrentTasks`) or for admission by a real Kueue queue
//! (`McpTool.spec.queueName`). A waiting task has not ended, so its TTL never deletes it:
//! its expiry moves ahead while it waits (as for any unfinished task), it runs once the slot
//! is free, and it is deleted once its expiry passes after it ended.

mod common;

use std::time::{Duration, Instant};

use common::{start_operator_with_queues, start_task_until};
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, McpTool, TaskStatus};
use mcp_task_operator_harness::kueue::{WAITING, cleanup, queued_tool};
use mcp_task_operator_harness::operator::{
    WAIT, create_task_with, create_tool, poll_task, request_cancel, shell_tool, status_message,
    wait_terminal, with_operator,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// Runs until cancelled.
const UNTIL_CANCELLED: &str = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;
/// The waiting task's TTL: far shorter than it waits.
const TTL_MS: i64 = 2_000;

/// With the slot of `tool` held by a first task, a second with a TTL of [`TTL_MS`] waits
/// (`waiting` is its status message) well past that TTL, then runs, ends, and is deleted.
async fn outlives_its_ttl_while_it_waits(client: &Client, ns: &str, tool: McpTool, waiting: &str) {
    let name = tool.name_any();
    create_tool(client, ns, &tool).await;
    let first = start_task_until(client, ns, &name, "started").await;
    let second = create_task_with(
        client,
        ns,
        &name,
        json!({}),
        Some(TTL_MS),
        Default::default(),
    )
    .await
    .name_any();
    poll_task(client, ns, &second, WAIT, |t| status_message(t) == waiting).await;

    // Three TTLs later it still waits, its expiry moved ahead.
    tokio::time::sleep(Duration::from_millis(3 * TTL_MS as u64)).await;
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let task = tasks
        .get(&second)
        .await
        .expect("the waiting task outlived its TTL");
    assert_eq!(task.task_status(), TaskStatus::Working);
    assert_eq!(status_message(&task), waiting);
    let created = task.metadata.creation_timestamp.clone().expect("created").0;
    let expires = task.expires_at().expect("an expiry");
    assert!(
        expires > created + Duration::from_millis(TTL_MS as u64),
        "expiry {expires} not moved past creation {created} + TTL"
    );
    assert!(expires > Timestamp::now(), "expiry {expires} has passed");

    // The slot freed, it runs; ended, it goes once its expiry passes.
    request_cancel(client, ns, &first).await;
    poll_task(client, ns, &second, WAIT, |t| {
        status_message(t) == "started"
    })
    .await;
    request_cancel(client, ns, &second).await;
    let ended = wait_terminal(client, ns, &second).await;
    assert_eq!(
        ended.task_status(),
        TaskStatus::Cancelled,
        "{:?}",
        ended.status
    );
    let begun = Instant::now();
    while tasks.get_opt(&second).await.expect("get").is_some() {
        assert!(begun.elapsed() < WAIT, "the ended task was not deleted");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!("{waiting}: deleted {:?} after it ended", begun.elapsed());
}

#[tokio::test]
async fn a_task_queued_behind_the_tools_limit_outlives_its_ttl_and_expires_after_it_ends() {
    with_operator("queue-ttl", async |client, ns, _| {
        let spec = json!({"maxConcurrentTasks": 1, "cancelGracePeriodSeconds": 5});
        let tool = shell_tool("held", UNTIL_CANCELLED, spec);
        outlives_its_ttl_while_it_waits(&client, &ns, tool, "Queued: 0 ahead").await;
    })
    .await;
}

#[tokio::test]
async fn a_task_waiting_for_kueue_admission_outlives_its_ttl_and_expires_after_it_ends() {
    with_temp_ns("kueue-ttl", |client, ns| async move {
        let _operator = start_operator_with_queues(&client, &ns).await;
        let tool = queued_tool(
            "held",
            UNTIL_CANCELLED,
            json!({"cancelGracePeriodSeconds": 5}),
        );
        outlives_its_ttl_while_it_waits(&client, &ns, tool, WAITING).await;
        cleanup(&client, &ns).await;
    })
    .await;
}
