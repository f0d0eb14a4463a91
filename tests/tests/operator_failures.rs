//! Pod-level failures end to end: each ends the task `failed` with a JSON-RPC error whose
//! `data.reason` names it (image pull, OOM kill, deadline, deleted pod, eviction), and a
//! Warning Event says so.

mod common;

use common::{error_detail, name_of, new_task, start_operator};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, EvictParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, Operator, TaskRecorder, WAIT, create_task, create_tool, shell_tool,
    status_message, task_pods, tool, wait_job_stopped, wait_task, wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// Waits until the task ends; asserts it failed with `reason`, code -32603 and a Warning
/// `Failed` Event naming it. Returns the task.
async fn wait_failed_as(client: &Client, ns: &str, name: &str, reason: &str) -> McpTask {
    let done = wait_terminal(client, ns, name).await;
    let events = common::assert_failed_as(client, ns, &done, reason).await;
    let failed = events
        .iter()
        .find(|e| e.reason == "Failed")
        .expect("Failed event");
    assert!(failed.message.starts_with("Task failed: "), "{events:#?}");
    done
}

/// A script that reports a status and then sleeps, ignoring SIGTERM (it is PID 1).
const SLEEPER: &str = r#"echo '{"mcp":"status","message":"sleeping"}'; sleep 600"#;

/// Starts the operator, calls the [`SLEEPER`] tool and waits until it sleeps: the operator, the
/// task's name, its pod's name and the pods of the namespace.
async fn a_sleeping_task(client: &Client, ns: &str) -> (Operator, String, String, Api<Pod>) {
    let operator = start_operator(client, ns, &[]).await;
    create_tool(client, ns, &shell_tool("sleeper", SLEEPER, json!({}))).await;
    let name = new_task(client, ns, "sleeper").await;
    let pod = wait_sleeping(client, ns, &name).await;
    (
        operator,
        name,
        pod.name_any(),
        Api::namespaced(client.clone(), ns),
    )
}

/// Waits until the task's container runs and has said so.
async fn wait_sleeping(client: &Client, ns: &str, name: &str) -> Pod {
    wait_task(client, ns, name, WAIT, |t| status_message(t) == "sleeping").await;
    let pods = task_pods(client, ns, name).await;
    assert_eq!(pods.len(), 1, "{pods:?}");
    pods.into_iter().next().expect("one pod")
}

#[tokio::test]
async fn an_image_that_cannot_be_pulled_fails_the_task_and_stops_its_job() {
    with_temp_ns("op-pull", |client, ns| async move {
        // No grace for failed pulls: the first failure ends the task (operator_edges.rs checks
        // the grace period).
        let env = [("IMAGE_PULL_GRACE_SECONDS", "0")];
        let _operator = start_operator(&client, &ns, &env).await;
        // Never: the image is not on the node. IfNotPresent: there is no registry to pull from.
        for (name, policy) in [("never-pull", "Never"), ("pull-fails", "IfNotPresent")] {
            let missing = tool(
                name,
                "localhost/no-such-tool:v1",
                &[],
                json!({}),
                json!({"imagePullPolicy": policy}),
            );
            create_tool(&client, &ns, &missing).await;
        }
        let recorder = TaskRecorder::start(&client, &ns).await;
        let never = create_task(&client, &ns, "never-pull", json!({})).await;
        let fails = create_task(&client, &ns, "pull-fails", json!({})).await;
        for task in [never, fails] {
            let name = name_of(&task);
            let done = wait_failed_as(&client, &ns, &name, "ImagePullFailed").await;
            let detail = error_detail(&done);
            assert!(
                detail.contains("ErrImageNeverPull")
                    || detail.contains("ErrImagePull")
                    || detail.contains("ImagePullBackOff"),
                "{detail}"
            );
            // A pod stuck pulling would retry until its deadline: the operator deletes the Job.
            wait_job_stopped(&client, &ns, &name).await;
        }
        // Deleting the Job must not turn the outcome into another one (JobDeleted).
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        recorder.assert_terminal_statuses_never_change();
    })
    .await;
}

#[tokio::test]
async fn a_tool_over_its_memory_limit_fails_the_task_as_oom_killed() {
    with_temp_ns("op-oom", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        // tail keeps a whole "line" of 100 MiB of zeros in memory; the limit is 16 MiB.
        let hungry = tool(
            "hungry",
            BUSYBOX_IMAGE,
            &[
                "sh",
                "-c",
                "echo eating; head -c 104857600 /dev/zero | tail",
            ],
            json!({}),
            json!({"resources": {"limits": {"memory": "16Mi"}}}),
        );
        create_tool(&client, &ns, &hungry).await;
        let name = new_task(&client, &ns, "hungry").await;
        wait_failed_as(&client, &ns, &name, "OOMKilled").await;
    })
    .await;
}

#[tokio::test]
async fn a_tool_past_its_active_deadline_fails_the_task_as_deadline_exceeded() {
    with_temp_ns("op-deadline", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        let slow = shell_tool("slow", SLEEPER, json!({"activeDeadlineSeconds": 10}));
        create_tool(&client, &ns, &slow).await;
        let name = new_task(&client, &ns, "slow").await;
        wait_sleeping(&client, &ns, &name).await;
        wait_failed_as(&client, &ns, &name, "DeadlineExceeded").await;
    })
    .await;
}

#[tokio::test]
async fn deleting_the_pod_of_a_running_task_fails_it_as_pod_deleted() {
    with_temp_ns("op-poddel", |client, ns| async move {
        let (_operator, name, pod_name, pods) = a_sleeping_task(&client, &ns).await;
        pods.delete(&pod_name, &DeleteParams::default())
            .await
            .expect("delete the pod");
        wait_failed_as(&client, &ns, &name, "PodDeleted").await;
        // The Job never replaces the pod (backoffLimit 0): no second run of the call.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let left = task_pods(&client, &ns, &name).await;
        assert!(
            left.iter()
                .all(|p| p.metadata.name.as_deref() == Some(&pod_name)),
            "a replacement pod ran: {left:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn evicting_the_pod_of_a_running_task_fails_it_as_evicted() {
    with_temp_ns("op-evict", |client, ns| async move {
        let (_operator, name, pod_name, pods) = a_sleeping_task(&client, &ns).await;
        // The eviction API (pods/eviction), as `kubectl drain` uses it.
        pods.evict(&pod_name, &EvictParams::default())
            .await
            .expect("evict the pod");
        let done = wait_failed_as(&client, &ns, &name, "Evicted").await;
        let detail = error_detail(&done);
        assert!(detail.contains("EvictionByEvictionAPI"), "{detail}");
    })
    .await;
}
