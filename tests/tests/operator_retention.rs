//! Finished-Job retention on a real cluster: an ended task's Job (and its pod) is deleted
//! `MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS` after the task ended; the task keeps its
//! status and result until its own TTL.

mod common;

use std::time::{Duration, Instant};

use common::{new_task, start_operator};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::operator::{
    Operator, WAIT, assert_completed, create_tool, result_text, shell_tool, wait_completed,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// Starts the operator with a finished-Job retention of `retention` seconds and runs a task
/// that completes at once: the operator, the task's name and the completed task.
async fn a_completed_task(
    client: &Client,
    ns: &str,
    retention: &str,
) -> (Operator, String, McpTask) {
    let env = [("FINISHED_JOB_RETENTION_SECONDS", retention)];
    let operator = start_operator(client, ns, &env).await;
    let count = shell_tool("count", "echo 'all 64 SKUs'", json!({}));
    create_tool(client, ns, &count).await;
    let name = new_task(client, ns, "count").await;
    let done = wait_completed(client, ns, &name).await;
    (operator, name, done)
}

async fn job_and_pods(client: &Client, ns: &str, name: &str) -> (Option<Job>, usize) {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let job = jobs.get_opt(name).await.expect("get job");
    let selector = format!("batch.kubernetes.io/job-name={name}");
    let pods = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("list pods")
        .items
        .len();
    (job, pods)
}

#[tokio::test]
async fn a_finished_tasks_job_is_deleted_after_the_retention_and_the_task_keeps_its_result() {
    with_temp_ns("op-retain", |client, ns| async move {
        let (_operator, name, done) = a_completed_task(&client, &ns, "3").await;
        let started = Instant::now();
        loop {
            let (job, pods) = job_and_pods(&client, &ns, &name).await;
            if job.is_none() && pods == 0 {
                break;
            }
            assert!(
                started.elapsed() < WAIT,
                "the Job ({}) or its {pods} pods are still there after {WAIT:?}",
                job.is_some()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // Not before the retention: the Job was kept for about 3 s after the task ended.
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let kept = tasks.get(&name).await.expect("the task is still there");
        assert_completed(&kept);
        assert_eq!(result_text(&kept), "all 64 SKUs");
        assert_eq!(kept.status, done.status, "the status did not change");
    })
    .await;
}

#[tokio::test]
async fn a_finished_tasks_job_is_kept_within_the_retention() {
    with_temp_ns("op-retain-keep", |client, ns| async move {
        let (_operator, name, _) = a_completed_task(&client, &ns, "3600").await;
        // Several seconds on, the Job is still there: `kubectl logs job/<task>` works.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let (job, _) = job_and_pods(&client, &ns, &name).await;
        assert!(job.is_some(), "the Job was deleted within the retention");
    })
    .await;
}
