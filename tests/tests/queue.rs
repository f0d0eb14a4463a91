//! Per-tool concurrency (`McpTool.spec.maxConcurrentTasks`) on the real cluster: with a limit of
//! one, three calls run one after the other, each ending with its own result; those waiting are
//! `working` with "Queued: N ahead" and no Job, in queue order (creationTimestamp, then name),
//! across an operator failover; a queued task can be cancelled and never gets a Job.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{start_task_until, wait_cancelled};
use k8s_openapi::api::batch::v1::Job;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    Operator, WAIT, create_task, create_tool, poll_task, request_cancel, result_text, shell_tool,
    status_message, wait_completed, with_operator,
};
use serde_json::json;

/// Runs about ten seconds (long enough for a loaded test to see the others queued), then returns
/// its task ID.
const BRIEF: &str = r#"sleep 10; echo "{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done $MCP_TASK_ID\"}]}}""#;
/// Runs until cancelled.
const UNTIL_CANCELLED: &str = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;

/// The tasks' names in queue order: creationTimestamp, then name.
fn queue_order(tasks: &[McpTask]) -> Vec<String> {
    let mut keyed: Vec<_> = tasks
        .iter()
        .map(|t| {
            (
                t.metadata.creation_timestamp.clone().map(|c| c.0),
                t.name_any(),
            )
        })
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, name)| name).collect()
}

async fn job_names(client: &Client, ns: &str) -> Vec<String> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let list = jobs.list(&ListParams::default()).await.expect("list Jobs");
    list.items.iter().map(ResourceExt::name_any).collect()
}

#[tokio::test]
async fn a_limit_of_one_runs_three_calls_in_turn_each_with_its_own_result() {
    with_operator("queue-order", async |client, ns, operator| {
        let spec = json!({"maxConcurrentTasks": 1});
        create_tool(&client, &ns, &shell_tool("one-at-a-time", BRIEF, spec)).await;
        let tasks_api: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let mut created = Vec::new();
        for _ in 0..3 {
            created.push(create_task(&client, &ns, "one-at-a-time", json!({})).await);
        }
        // The first admitted is the first the operator saw: a task created in the same second
        // with a smaller name sorts before it, but comes too late to take its slot. The others
        // wait in queue order.
        let begun = Instant::now();
        let first = loop {
            if let [job] = job_names(&client, &ns).await.as_slice() {
                break job.clone();
            }
            assert!(begun.elapsed() < WAIT, "no Job for any of the three");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let waiting: Vec<McpTask> = created
            .into_iter()
            .filter(|t| t.name_any() != first)
            .collect();
        let order: Vec<String> = std::iter::once(first)
            .chain(queue_order(&waiting))
            .collect();

        // The 2nd and 3rd wait, with their place in the queue, and no Job.
        for (ahead, name) in order.iter().enumerate().skip(1) {
            let want = format!("Queued: {} ahead", ahead - 1);
            let t = poll_task(&client, &ns, name, WAIT, |t| status_message(t) == want).await;
            assert_eq!(t.task_status(), TaskStatus::Working);
        }
        let jobs = job_names(&client, &ns).await;
        assert_eq!(jobs, [order[0].clone()], "only the first has a Job");

        // The queue is in the tasks: a new operator (the old one killed) goes on with it.
        operator.kill().await;
        let _operator = Operator::start(&ns, &format!("{ns}-lease-2"), "operator-1", &[]).await;
        _operator.wait_leading().await;

        // In turn: never two Jobs at once; each Job comes after the one before ended.
        let mut slot_to_job = Vec::new();
        let mut ended_at: Option<Instant> = None;
        let mut next = 1;
        let mut ended = std::collections::BTreeSet::new();
        let begun = Instant::now();
        while ended.len() < order.len() {
            assert!(begun.elapsed() < 3 * WAIT, "not all ended: {ended:?}");
            let jobs = job_names(&client, &ns).await;
            let list = tasks_api.list(&ListParams::default()).await.expect("tasks");
            let by_name: BTreeMap<String, McpTask> =
                list.items.into_iter().map(|t| (t.name_any(), t)).collect();
            let running: Vec<&String> = jobs
                .iter()
                .filter(|j| by_name.get(*j).is_some_and(|t| !t.is_terminal()))
                .collect();
            assert!(running.len() <= 1, "two tasks run at once: {running:?}");
            for name in &order {
                if by_name[name].is_terminal() && ended.insert(name.clone()) {
                    ended_at = Some(Instant::now());
                }
            }
            if next < order.len() && jobs.contains(&order[next]) {
                let earlier = &order[next - 1];
                assert!(
                    ended.contains(earlier),
                    "{} got its Job before {earlier} ended",
                    order[next]
                );
                if let Some(at) = ended_at.take() {
                    slot_to_job.push(at.elapsed());
                }
                next += 1;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for name in &order {
            let done = wait_completed(&client, &ns, name).await;
            assert_eq!(result_text(&done), format!("done {name}"));
        }
        eprintln!("slot freed -> next Job (polled every 50 ms): {slot_to_job:?}");
    })
    .await;
}

#[tokio::test]
async fn a_queued_task_can_be_cancelled_and_never_gets_a_job() {
    with_operator("queue-cancel", async |client, ns, _| {
        let spec = json!({"maxConcurrentTasks": 1, "cancelGracePeriodSeconds": 5});
        create_tool(&client, &ns, &shell_tool("held", UNTIL_CANCELLED, spec)).await;
        let first = start_task_until(&client, &ns, "held", "started").await;
        let queued = start_task_until(&client, &ns, "held", "Queued: 0 ahead").await;

        request_cancel(&client, &ns, &queued).await;
        let done = wait_cancelled(&client, &ns, &queued).await;
        assert!(done.status.as_ref().is_some_and(|s| s.job_name.is_none()));
        assert!(!job_names(&client, &ns).await.contains(&queued));
        // The running one is untouched by it.
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let running = tasks.get(&first).await.expect("get");
        assert_eq!(running.task_status(), TaskStatus::Working);
        request_cancel(&client, &ns, &first).await;
        wait_cancelled(&client, &ns, &first).await;
    })
    .await;
}
