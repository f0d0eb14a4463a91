//! A warm pool of a tool admitted by Kueue (issue 38): a waiting pod is a Job like any other,
//! admitted within the queue's quota, and a call that waits for the quota comes before any
//! waiting pod. Real Kueue (`hack/kueue.sh start`, which `make integration` runs), a
//! ClusterQueue with the CPU of one task.

mod common;

use std::time::{Duration, Instant};

use common::wait_cancelled;
use k8s_openapi::api::batch::v1::Job;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;
use mcp_task_operator_harness::kueue::{cleanup, complete, queued_tool, queues, suspended};
use mcp_task_operator_harness::mcp_servers::bridge_image;
use mcp_task_operator_harness::operator::{
    Operator, WAIT, create_task, create_tool, poll_task, request_cancel, status_message,
    wait_terminal,
};
use mcp_task_operator_harness::warm_pools::wait_ready_pod;
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;

/// Says it started, then runs until cancelled.
const UNTIL_CANCELLED: &str = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;
const TOOL: &str = "quota-one";

/// The tool's Jobs that hold quota: admitted (not suspended), not finished, not being deleted.
async fn admitted(client: &Client, ns: &str) -> Vec<String> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    jobs.list(&ListParams::default())
        .await
        .expect("list Jobs")
        .items
        .into_iter()
        .filter(|j| !suspended(j) && !complete(j) && j.metadata.deletion_timestamp.is_none())
        .filter(|j| {
            let failed = j.status.as_ref().and_then(|s| s.failed).unwrap_or(0) > 0;
            !failed
        })
        .map(|j| j.name_any())
        .collect()
}

/// Polls until `check` holds of the admitted Jobs, asserting all along that at most one is.
async fn watch_quota(client: &Client, ns: &str, what: &str, check: impl Fn(&[String]) -> bool) {
    let begun = Instant::now();
    loop {
        let now = admitted(client, ns).await;
        assert!(now.len() <= 1, "two Jobs hold the quota of one: {now:?}");
        if check(&now) {
            return;
        }
        assert!(begun.elapsed() < WAIT, "{what}: admitted {now:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_pool_stays_within_its_queues_quota_and_yields_it_to_a_waiting_call() {
    with_temp_ns("warm-kueue", |client, ns| async move {
        ensure_crds(&client).await;
        queues(&client, &ns, json!({})).await;
        let bridge = bridge_image();
        let operator = Operator::start(
            &ns,
            &format!("{ns}-lease"),
            "operator-0",
            &[("BRIDGE_IMAGE", &bridge)],
        )
        .await;
        operator.wait_leading().await;
        let spec =
            json!({"warmPool": {"minReady": 1, "maxReady": 1}, "cancelGracePeriodSeconds": 5});
        create_tool(&client, &ns, &queued_tool(TOOL, UNTIL_CANCELLED, spec)).await;
        let pool = format!("{WARM_POOL_LABEL}={TOOL}");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);

        // The waiting pod is admitted like any Job: it holds the one task's quota.
        watch_quota(&client, &ns, "the pool's pod is not admitted", |a| {
            a.len() == 1
        })
        .await;
        wait_ready_pod(&client, &ns, TOOL).await;
        let first = create_task(&client, &ns, TOOL, json!({})).await.name_any();
        let running = poll_task(&client, &ns, &first, WAIT, |t| {
            status_message(t) == "started"
        })
        .await;
        let warm = running
            .status
            .as_ref()
            .and_then(|s| s.job_name.clone())
            .unwrap_or_default();
        assert_ne!(
            warm, first,
            "the first call claimed the admitted waiting pod"
        );

        // The pool's next pod waits for the quota the call holds.
        let begun = Instant::now();
        loop {
            let list = jobs
                .list(&ListParams::default().labels(&pool))
                .await
                .unwrap()
                .items;
            if list.iter().any(|j| j.name_any() != warm && suspended(j)) {
                break;
            }
            assert!(
                begun.elapsed() < WAIT,
                "no second pool Job waiting for admission"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // A second call finds no ready pod: its own Job waits for admission, and the pool
        // gives up its waiting Job so that the call, not a pod, gets the quota next.
        let second = create_task(&client, &ns, TOOL, json!({})).await.name_any();
        let begun = Instant::now();
        loop {
            let list = jobs
                .list(&ListParams::default().labels(&pool))
                .await
                .unwrap()
                .items;
            let waiting_pods = list
                .iter()
                .filter(|j| j.name_any() != warm && j.metadata.deletion_timestamp.is_none())
                .count();
            if waiting_pods == 0 {
                break;
            }
            assert!(
                begun.elapsed() < WAIT,
                "the pool keeps a Job while a call waits for the quota"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        request_cancel(&client, &ns, &first).await;
        wait_cancelled(&client, &ns, &first).await;
        watch_quota(&client, &ns, "the waiting call is not admitted", |a| {
            a == [second.clone()]
        })
        .await;
        poll_task(&client, &ns, &second, WAIT, |t| {
            status_message(t) == "started"
        })
        .await;
        request_cancel(&client, &ns, &second).await;
        let ended = wait_terminal(&client, &ns, &second).await;
        assert_eq!(ended.task_status(), TaskStatus::Cancelled);
        cleanup(&client, &ns).await;
    })
    .await;
}
