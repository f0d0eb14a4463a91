//! Retries of disruptions only (`McpTool.spec.retryOnDisruption`) and the idle timeout
//! (`spec.idleTimeoutSeconds`) on the real cluster: a pod evicted through the eviction API runs
//! again and the task completes, showing its attempt; a tool that exits 1 runs once; a tool
//! silent for longer than its idle timeout fails `IdleTimeout` and its Job goes, while one that
//! keeps printing runs to its end.

mod common;

use std::time::{Duration, Instant};

use common::{new_task, start_task_until, wait_failed};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{EvictParams, ListParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_harness::operator::{
    WAIT, assert_completed, create_tool, failure_reason, poll_task, result_text, shell_tool,
    status_message, wait_completed, wait_terminal, with_operator,
};
use serde_json::json;

/// Says it started, works 20 seconds, returns. The test evicts the pod once it sees "started":
/// the 20 s are for that eviction to land while the pod still works, on a loaded machine too (with
/// 5 s, a cold `make test`, building in the background, evicted a pod that had already finished).
const WORKS: &str = r#"echo '{"mcp":"status","message":"started"}'; sleep 20; echo '{"mcp":"result","result":{"content":[{"type":"text","text":"finished"}]}}'"#;

async fn pods_of(client: &Client, ns: &str, job: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("batch.kubernetes.io/job-name={job}");
    let list = pods.list(&ListParams::default().labels(&selector)).await;
    list.expect("list pods").items
}

#[tokio::test]
async fn an_evicted_pod_runs_again_and_the_task_completes() {
    with_operator("retry-evict", async |client, ns, _| {
        let spec = json!({"retryOnDisruption": 2});
        create_tool(&client, &ns, &shell_tool("idempotent", WORKS, spec)).await;
        let name = start_task_until(&client, &ns, "idempotent", "started").await;
        let first = pods_of(&client, &ns, &name).await;
        assert_eq!(first.len(), 1, "{first:?}");
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        pods.evict(&first[0].name_any(), &EvictParams::default())
            .await
            .expect("evict the pod");

        // The second pod runs, and the task says which attempt it is on.
        let again = poll_task(&client, &ns, &name, 2 * WAIT, |t| {
            t.is_terminal() || status_message(t).contains("(attempt 2 of 3)")
        })
        .await;
        assert!(
            !again.is_terminal(),
            "ended on the eviction: {:?}",
            again.status
        );
        let done = wait_completed(&client, &ns, &name).await;
        assert_eq!(result_text(&done), "finished");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let job = jobs.get(&name).await.expect("the Job");
        let failed = job.status.and_then(|s| s.failed).unwrap_or(0);
        assert_eq!(failed, 1, "one disrupted pod counted");
    })
    .await;
}

#[tokio::test]
async fn a_tool_that_exits_1_is_not_run_again() {
    with_operator("retry-exit", async |client, ns, _| {
        let spec = json!({"retryOnDisruption": 2});
        let script = "echo 'no luck'; exit 1";
        create_tool(&client, &ns, &shell_tool("exits-1", script, spec)).await;
        let name = new_task(&client, &ns, "exits-1").await;
        let done = wait_terminal(&client, &ns, &name).await;
        // The tool's own exit is its answer (an error result), never a retry.
        assert_completed(&done);
        assert_eq!(status_message(&done), "The tool exited with code 1");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let begun = Instant::now();
        let job = loop {
            let job = jobs.get(&name).await.expect("the Job");
            let failed_by_policy = job
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter().any(|c| {
                        c.type_ == "Failed" && c.reason.as_deref() == Some("PodFailurePolicy")
                    })
                });
            if failed_by_policy {
                break job;
            }
            assert!(
                begun.elapsed() < WAIT,
                "Job not failed by its policy: {:?}",
                job.status
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(job.status.and_then(|s| s.failed), Some(1));
        assert_eq!(pods_of(&client, &ns, &name).await.len(), 1, "one pod only");
    })
    .await;
}

#[tokio::test]
async fn a_silent_tool_fails_idle_timeout_and_a_chatty_one_completes() {
    with_operator("idle", async |client, ns, _| {
        let silent = r#"echo '{"mcp":"status","message":"started"}'; sleep 600"#;
        let chatty = r#"for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "line $i"; sleep 0.5; done"#;
        let spec = json!({"idleTimeoutSeconds": 4});
        create_tool(&client, &ns, &shell_tool("silent", silent, spec.clone())).await;
        create_tool(&client, &ns, &shell_tool("chatty", chatty, spec)).await;
        let quiet = new_task(&client, &ns, "silent").await;
        let talks = new_task(&client, &ns, "chatty").await;

        let done = wait_failed(&client, &ns, &quiet).await;
        assert_eq!(failure_reason(&done), "IdleTimeout");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let begun = Instant::now();
        while jobs.get_opt(&quiet).await.expect("get Job").is_some() {
            assert!(
                begun.elapsed() < WAIT,
                "the silent task's Job was not stopped"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        let done = wait_completed(&client, &ns, &talks).await;
        assert!(result_text(&done).contains("line 12"), "{:?}", done.status);
    })
    .await;
}
