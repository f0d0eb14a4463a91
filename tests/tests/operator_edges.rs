//! The operator at the edges: every way a task can fail to start ends it with a terminal status,
//! a reason and a Warning Event within a bounded time, and a cancel never depends on a patch
//! that can fail for size. Each test prints the time to the terminal status it measured
//! (`--nocapture`), the numbers in docs/RELIABILITY.md.

mod common;

use std::time::{Duration, Instant};

use common::{
    assert_cancelled, assert_fails, error_detail, name_of, start_operator, wait_cancelled,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, Operator, WAIT, create_task, create_tool, failure_reason, request_cancel,
    result_text, shell_tool, status_message, tool, wait_completed, wait_job_stopped,
    wait_pod_phase, wait_status, wait_task, wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::{Value, json};

/// Creates a task of `tool` without arguments: its name and the time just before.
async fn timed_task(client: &Client, ns: &str, tool: &str) -> (String, Instant) {
    let started = Instant::now();
    let task = create_task(client, ns, tool, json!({})).await;
    (name_of(&task), started)
}

/// Creates a ResourceQuota with `hard` and waits until the quota controller has counted it
/// (only then does admission enforce it as written).
async fn quota(client: &Client, ns: &str, hard: Value) {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), ns);
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "none"},
        "spec": {"hard": hard},
    }))
    .expect("a ResourceQuota");
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("create quota");
    mcp_task_operator_harness::wait_for(
        &quotas,
        "none",
        |q: Option<&ResourceQuota>| {
            q.and_then(|q| q.status.as_ref())
                .and_then(|s| s.hard.as_ref())
                .is_some()
        },
        WAIT,
    )
    .await;
}

/// Asks for input, then waits until the cancel file says cancel, and stops (exit 0).
const ASKS_THEN_WAITS: &str = r#"echo '{"mcp":"input","requests":{"note":{"method":"elicitation/create","params":{"mode":"form","message":"Any note?","requestedSchema":{"type":"object","properties":{"note":{"type":"string"}}}}}}}'
while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done
echo 'stopping on cancel'"#;

/// A ~300 KB answer: more than a pod's annotations can hold (256 KiB).
fn huge_answer() -> Value {
    json!({"note": {"action": "accept", "content": {"note": "x".repeat(300 * 1024)}}})
}

#[tokio::test]
async fn an_answer_too_large_for_the_pod_fails_the_task_and_a_later_cancel_changes_nothing() {
    with_temp_ns("edge-answer", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        create_tool(
            &client,
            &ns,
            &shell_tool("asks", ASKS_THEN_WAITS, json!({})),
        )
        .await;
        let task = create_task(&client, &ns, "asks", json!({})).await;
        let name = name_of(&task);
        wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let answered = Instant::now();
        let patch = json!({"spec": {"inputResponses": huge_answer()}});
        tasks
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("the task takes the answer");
        let done = assert_fails(&client, &ns, &name, "InputTooLarge", answered).await;
        let detail = error_detail(&done);
        assert!(detail.contains("262144-byte limit"), "{detail}");
        wait_job_stopped(&client, &ns, &name).await;
        // The client's cancel after the failure finds a terminal task.
        request_cancel(&client, &ns, &name).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = tasks.get(&name).await.expect("task");
        assert_eq!(after.task_status(), TaskStatus::Failed);
        assert_eq!(failure_reason(&after), "InputTooLarge");
    })
    .await;
}

#[tokio::test]
async fn a_cancel_sent_with_an_answer_too_large_for_the_pod_still_reaches_the_tool() {
    with_temp_ns("edge-cancel", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        let spec = json!({"cancelGracePeriodSeconds": 30});
        create_tool(&client, &ns, &shell_tool("asks", ASKS_THEN_WAITS, spec)).await;
        let task = create_task(&client, &ns, "asks", json!({})).await;
        let name = name_of(&task);
        wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        // One patch, as a client that answers and cancels at once: the operator sees both.
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let patch = json!({
            "metadata": {"annotations": {CANCEL_REQUESTED_ANNOTATION: now}},
            "spec": {"inputResponses": huge_answer()},
        });
        let requested = Instant::now();
        tasks
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("the task takes the answer and the cancel");
        let done = wait_terminal(&client, &ns, &name).await;
        eprintln!(
            "cancel with a 300 KB answer: terminal {:?}",
            requested.elapsed()
        );
        // The tool saw the cancel (it stops only on it) well within its 30 s grace period.
        assert_cancelled(&done);
        assert_eq!(status_message(&done), "Cancelled; the tool stopped");
    })
    .await;
}

#[tokio::test]
async fn a_job_the_quota_refuses_fails_its_task_at_once() {
    with_temp_ns("edge-jobquota", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        quota(&client, &ns, json!({"count/jobs.batch": "0"})).await;
        create_tool(&client, &ns, &shell_tool("refused", "echo hi", json!({}))).await;
        let (name, started) = timed_task(&client, &ns, "refused").await;
        let done = assert_fails(&client, &ns, &name, "JobRefused", started).await;
        let detail = error_detail(&done);
        assert!(detail.contains("exceeded quota"), "{detail}");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        assert!(jobs.get_opt(&name).await.expect("get job").is_none());
    })
    .await;
}

#[tokio::test]
async fn pods_the_quota_refuses_fail_their_task_after_the_grace_period() {
    with_temp_ns("edge-podquota", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[("POD_REFUSED_GRACE_SECONDS", "3")]).await;
        quota(&client, &ns, json!({"pods": "0"})).await;
        create_tool(&client, &ns, &shell_tool("refused", "echo hi", json!({}))).await;
        let (name, started) = timed_task(&client, &ns, "refused").await;
        let done = assert_fails(&client, &ns, &name, "PodRefused", started).await;
        let detail = error_detail(&done);
        assert!(detail.contains("exceeded quota"), "{detail}");
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}

#[tokio::test]
async fn a_missing_secret_fails_its_task_after_the_grace_period() {
    with_temp_ns("edge-secret", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[("CONFIG_ERROR_GRACE_SECONDS", "5")]).await;
        let from_secret = json!({"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef":
            {"name": "no-such-secret", "key": "token"}}}]});
        let needs = tool(
            "needs-secret",
            BUSYBOX_IMAGE,
            &["sh", "-c", "echo hi"],
            json!({}),
            from_secret,
        );
        create_tool(&client, &ns, &needs).await;
        let (name, started) = timed_task(&client, &ns, "needs-secret").await;
        // Within the grace period the task says what it waits for.
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t).contains("CreateContainerConfigError")
                || t.task_status() == TaskStatus::Failed
        })
        .await;
        let done = assert_fails(&client, &ns, &name, "ContainerConfigError", started).await;
        let detail = error_detail(&done);
        // The kubelet names the Secret ("secret \"no-such-secret\" not found") or, when its
        // Secret cache has not synced yet, says only "failed to sync secret cache"; either is
        // its own words, passed on with the grace period.
        assert!(
            detail.starts_with("CreateContainerConfigError: ")
                && (detail.contains("no-such-secret") || detail.contains("secret cache"))
                && detail.ends_with("(for more than 5s)"),
            "{detail}"
        );
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}

#[tokio::test]
async fn a_pod_no_node_fits_fails_its_task_after_the_start_deadline() {
    with_temp_ns("edge-unsched", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[("UNSCHEDULABLE_SECONDS", "5")]).await;
        let spec =
            json!({"template": {"spec": {"nodeSelector": {"mcptasks.io/no-such-node": "x"}}}});
        create_tool(&client, &ns, &shell_tool("nowhere", "echo hi", spec)).await;
        let (name, started) = timed_task(&client, &ns, "nowhere").await;
        let done = assert_fails(&client, &ns, &name, "Unschedulable", started).await;
        assert!(
            error_detail(&done).ends_with("(for more than 5s)"),
            "{done:?}"
        );
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}

#[tokio::test]
async fn a_failing_image_pull_is_retried_for_the_grace_period_before_the_task_fails() {
    with_temp_ns("edge-pull", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[("IMAGE_PULL_GRACE_SECONDS", "15")]).await;
        // IfNotPresent with no registry to pull from: ErrImagePull, then ImagePullBackOff.
        let missing = tool(
            "pull-fails",
            "localhost/no-such-tool:v1",
            &[],
            json!({}),
            json!({"imagePullPolicy": "IfNotPresent"}),
        );
        create_tool(&client, &ns, &missing).await;
        let (name, started) = timed_task(&client, &ns, "pull-fails").await;
        // A failed pull is reported while the task keeps working: the kubelet retries it.
        let pulling = wait_task(&client, &ns, &name, WAIT, |t| {
            t.is_terminal()
                || status_message(t).contains("ErrImagePull")
                || status_message(t).contains("ImagePullBackOff")
        })
        .await;
        assert_eq!(
            pulling.task_status(),
            TaskStatus::Working,
            "{:?}",
            pulling.status
        );
        let done = assert_fails(&client, &ns, &name, "ImagePullFailed", started).await;
        assert!(
            error_detail(&done).ends_with("(for more than 15s)"),
            "{done:?}"
        );
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}

/// Says how far it got, then stops on the cancel with its own last words.
const COOPERATIVE: &str = r#"echo '{"mcp":"status","message":"recounting 64 SKUs"}'
while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done
echo '{"mcp":"status","message":"stopped after 2 of 64 SKUs"}'"#;

#[tokio::test]
async fn a_cancelled_task_keeps_the_tools_own_last_words() {
    with_temp_ns("edge-words", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        create_tool(&client, &ns, &shell_tool("recount", COOPERATIVE, json!({}))).await;
        let task = create_task(&client, &ns, "recount", json!({})).await;
        let name = name_of(&task);
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t) == "recounting 64 SKUs"
        })
        .await;
        request_cancel(&client, &ns, &name).await;
        let done = wait_cancelled(&client, &ns, &name).await;
        assert_eq!(status_message(&done), "stopped after 2 of 64 SKUs");
    })
    .await;
}

#[tokio::test]
async fn a_tool_that_finished_before_the_cancel_time_completes() {
    with_temp_ns("edge-race", |client, ns| async move {
        let mut operator = start_operator(&client, &ns, &[]).await;
        let script =
            r#"echo '{"mcp":"status","message":"recounting"}'; sleep 2; echo 'all 64 SKUs'"#;
        create_tool(&client, &ns, &shell_tool("recount", script, json!({}))).await;
        let task = create_task(&client, &ns, "recount", json!({})).await;
        let name = name_of(&task);
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t) == "recounting"
        })
        .await;
        // The operator is away while the tool exits 0 and the client cancels after that: the
        // cancel and the exit reach the next operator together.
        operator.kill().await;
        wait_pod_phase(&client, &ns, &name, "Succeeded").await;
        // finishedAt has whole seconds: cancel in a later second than the exit.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        request_cancel(&client, &ns, &name).await;
        let _next = Operator::start(&ns, &format!("{ns}-lease"), "operator-0", &[]).await;
        let done = wait_completed(&client, &ns, &name).await;
        assert_eq!(result_text(&done), "all 64 SKUs");
    })
    .await;
}
