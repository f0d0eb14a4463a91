//! The per-tool queue is fair across callers (issue 36 item 7): with `maxConcurrentTasks: 1`,
//! one caller that queued five tasks first does not make another caller's task wait behind all
//! of them; callers take turns (round by slots held plus tasks queued before, then creation
//! order). On the old operator the queue was first come, first served, so the second caller's
//! task got its Job only after the first caller's fifth.

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::operator::{
    WAIT, create_tool, poll_task, request_cancel, shell_tool, status_message, wait_terminal,
    with_operator,
};
use serde_json::json;

/// Runs until cancelled.
const UNTIL_CANCELLED: &str = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;
const TOOL: &str = "one-at-a-time";

/// Creates a task of [`TOOL`] owned by `owner` (as the front end records the caller).
async fn create_owned(client: &Client, ns: &str, owner: &str) -> String {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let task: McpTask = serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "metadata": {"name": mcp_task_operator_crds::task_id::generate()},
        "spec": {"tool": TOOL, "owner": owner, "arguments": {}, "ttlMs": 3_600_000},
    }))
    .expect("an McpTask");
    let created = tasks
        .create(&PostParams::default(), &task)
        .await
        .unwrap_or_else(|e| panic!("cannot create a task of {owner}: {e}"));
    created.name_any()
}

async fn job_names(client: &Client, ns: &str) -> Vec<String> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let list = jobs.list(&ListParams::default()).await.expect("list Jobs");
    list.items.iter().map(ResourceExt::name_any).collect()
}

/// Waits until exactly `count` Jobs exist; returns the one not in `known`.
async fn next_job(client: &Client, ns: &str, known: &[String]) -> String {
    let begun = Instant::now();
    loop {
        let jobs = job_names(client, ns).await;
        let new: Vec<&String> = jobs.iter().filter(|j| !known.contains(j)).collect();
        assert!(new.len() <= 1, "two Jobs at once after {known:?}: {new:?}");
        if let [job] = new.as_slice() {
            return (*job).clone();
        }
        assert!(begun.elapsed() < WAIT, "no Job after {known:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_second_callers_task_runs_before_the_first_callers_fifth() {
    with_operator("queue-fair", async |client, ns, _| {
        let spec = json!({"maxConcurrentTasks": 1, "cancelGracePeriodSeconds": 5});
        create_tool(&client, &ns, &shell_tool(TOOL, UNTIL_CANCELLED, spec)).await;
        let mut alice = Vec::new();
        alice.push(create_owned(&client, &ns, "alice").await);
        let first = next_job(&client, &ns, &[]).await;
        assert_eq!(first, alice[0]);
        for _ in 1..5 {
            alice.push(create_owned(&client, &ns, "alice").await);
        }
        // Bob's one task comes after all of Alice's (`creationTimestamp` counts seconds: let
        // it be a later one, so that the old first-come order is unambiguous).
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let bob = create_owned(&client, &ns, "bob").await;

        // Alice holds the slot, Bob holds none: his task is at the head of the queue.
        let t = poll_task(&client, &ns, &bob, WAIT, |t| {
            status_message(t).starts_with("Queued")
        })
        .await;
        eprintln!(
            "bob's task while alice's first runs: {}",
            status_message(&t)
        );
        let mut jobs = vec![first];
        // End the running task until Bob's has a Job; at most five rounds.
        let mut bob_ran_after = None;
        for round in 1..=5 {
            let running = jobs.last().expect("a Job").clone();
            request_cancel(&client, &ns, &running).await;
            wait_terminal(&client, &ns, &running).await;
            let job = next_job(&client, &ns, &jobs).await;
            jobs.push(job.clone());
            if job == bob {
                bob_ran_after = Some(round);
                break;
            }
        }
        let order: Vec<String> = jobs
            .iter()
            .map(|j| match alice.iter().position(|a| a == j) {
                Some(i) => format!("alice-{}", i + 1),
                None => "bob".to_owned(),
            })
            .collect();
        eprintln!("Job order: {order:?}");
        assert!(
            bob_ran_after.is_some() && !jobs.contains(&alice[4]),
            "bob's task got its Job only after alice's fifth: {order:?}"
        );
        // Alice's remaining tasks still wait (the queue goes on); end Bob's and the rest.
        for name in jobs.iter().skip(1).chain(alice.iter()) {
            request_cancel(&client, &ns, name).await;
        }
    })
    .await;
}
