//! Real Kueue (`hack/kueue.sh start`, which `make integration` runs) admits the Jobs of a tool
//! that names a LocalQueue (`McpTool.spec.queueName`): a ClusterQueue with a quota of one
//! task's CPU, three calls: the 2nd and 3rd wait ("Waiting for admission by queue tasks") with
//! suspended Jobs, then run in turn, each ending with its own result; a waiting task can be
//! cancelled.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{new_task, start_operator_with_queues, start_task_until, wait_cancelled};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::JOB_NAME_LABEL;
use mcp_task_operator_harness::kueue::{QUEUE, WAITING, cleanup, complete, queued_tool, suspended};
use mcp_task_operator_harness::operator::{
    WAIT, create_tool, poll_task, request_cancel, result_text, status_message, wait_completed,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// Runs about two seconds, then returns its task ID.
const BRIEF: &str = r#"sleep 2; echo "{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done $MCP_TASK_ID\"}]}}""#;

#[tokio::test]
async fn kueue_admits_three_calls_in_turn_each_with_its_own_result() {
    with_temp_ns("kueue-order", |client, ns| async move {
        let _operator = start_operator_with_queues(&client, &ns).await;
        create_tool(
            &client,
            &ns,
            &queued_tool("kueued", BRIEF, json!({"jobLabels": {"team": "tests"}})),
        )
        .await;
        let mut names = Vec::new();
        for _ in 0..3 {
            names.push(new_task(&client, &ns, "kueued").await);
        }
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);

        // Two of them wait for admission, their Jobs suspended, labelled for the queue.
        let begun = Instant::now();
        loop {
            let list = jobs.list(&ListParams::default()).await.expect("Jobs").items;
            let waiting = list.iter().filter(|j| suspended(j)).count();
            if list.len() == 3 && waiting >= 2 {
                for job in &list {
                    assert_eq!(
                        job.labels()
                            .get("kueue.x-k8s.io/queue-name")
                            .map(String::as_str),
                        Some(QUEUE)
                    );
                    assert_eq!(job.labels().get("team").map(String::as_str), Some("tests"));
                }
                break;
            }
            assert!(
                begun.elapsed() < WAIT,
                "not queued: {} Jobs, {waiting} suspended",
                list.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut seen_waiting = 0;
        for name in &names {
            let job = jobs.get(name).await.expect("Job");
            if suspended(&job) {
                poll_task(&client, &ns, name, WAIT, |t| status_message(t) == WAITING).await;
                seen_waiting += 1;
            }
        }
        assert!(seen_waiting >= 2, "{seen_waiting} tasks said they wait");

        // In turn: never two admitted Jobs running at once; the time from one Job's end to
        // the next Job's pod.
        let mut slot_to_pod = Vec::new();
        let mut freed: Option<Instant> = None;
        let mut done_jobs = BTreeMap::new();
        let mut with_pod = std::collections::BTreeSet::new();
        let begun = Instant::now();
        while done_jobs.len() < 3 {
            assert!(begun.elapsed() < 3 * WAIT, "not all ran: {done_jobs:?}");
            let list = jobs.list(&ListParams::default()).await.expect("Jobs").items;
            let running = list
                .iter()
                .filter(|j| !suspended(j) && !complete(j))
                .count();
            assert!(running <= 1, "{running} admitted Jobs run at once");
            for job in &list {
                if complete(job) && done_jobs.insert(job.name_any(), ()).is_none() {
                    freed = Some(Instant::now());
                }
            }
            let pod_list = pods.list(&ListParams::default()).await.expect("pods").items;
            for pod in pod_list {
                let job = pod
                    .labels()
                    .get(JOB_NAME_LABEL)
                    .cloned()
                    .unwrap_or_default();
                if with_pod.insert(job)
                    && let Some(at) = freed.take()
                {
                    slot_to_pod.push(at.elapsed());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for name in &names {
            let done = wait_completed(&client, &ns, name).await;
            assert_eq!(result_text(&done), format!("done {name}"));
        }
        eprintln!("Kueue: Job complete -> next Job's pod (polled every 50 ms): {slot_to_pod:?}");
        cleanup(&client, &ns).await;
    })
    .await;
}

#[tokio::test]
async fn a_task_waiting_for_admission_can_be_cancelled() {
    with_temp_ns("kueue-cancel", |client, ns| async move {
        let _operator = start_operator_with_queues(&client, &ns).await;
        let until_cancelled = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;
        create_tool(&client, &ns, &queued_tool("held", until_cancelled, json!({}))).await;
        let first = start_task_until(&client, &ns, "held", "started").await;
        let waiting = start_task_until(&client, &ns, "held", WAITING).await;

        request_cancel(&client, &ns, &waiting).await;
        wait_cancelled(&client, &ns, &waiting).await;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let begun = Instant::now();
        while jobs.get_opt(&waiting).await.expect("get Job").is_some() {
            assert!(begun.elapsed() < WAIT, "the waiting task's Job was not deleted");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        request_cancel(&client, &ns, &first).await;
        wait_cancelled(&client, &ns, &first).await;
        cleanup(&client, &ns).await;
    })
    .await;
}
