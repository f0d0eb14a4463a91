//! Every non-terminal state of a task ends (docs/DESIGN.md, "Every state has a bound"): a
//! pod whose Secret volume does not exist, and a question nobody answers, each fail the task
//! with a reason the client sees, within the bound the operator's settings give (short ones
//! here), and its Job is deleted so that the caller's quota frees up; so does a Job its queue
//! never admits. The start timeout is a unit test with a fixed clock
//! (`operator/src/controller/mcp_task/observe/tests_bounds.rs`): a real run would take half an
//! hour, and every start failure this cluster can make has a shorter bound of its own.

mod common;

use std::time::Instant;

use common::{assert_fails, error_detail, name_of, start_operator};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, WAIT, create_task, create_tool, shell_tool, status_message, tool,
    wait_job_stopped, wait_status, wait_task,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

#[tokio::test]
async fn a_secret_volume_that_does_not_exist_fails_its_task_as_volume_mount_failed() {
    with_temp_ns("bound-volume", |client, ns| async move {
        let env = [("VOLUME_MOUNT_GRACE_SECONDS", "5")];
        let _operator = start_operator(&client, &ns, &env).await;
        // The kubelet keeps the pod ContainerCreating, with FailedMount Events, until the
        // Secret exists: the container never gets as far as CreateContainerConfigError.
        let volume = json!({"template": {"spec": {"volumes": [{"name": "token",
            "secret": {"secretName": "no-such-secret"}}]}}});
        let mount = json!({"volumeMounts": [{"name": "token", "mountPath": "/token"}]});
        let needs = tool(
            "needs-volume",
            BUSYBOX_IMAGE,
            &["sh", "-c", "echo hi"],
            volume,
            mount,
        );
        create_tool(&client, &ns, &needs).await;
        let started = Instant::now();
        let task = create_task(&client, &ns, "needs-volume", json!({})).await;
        let name = name_of(&task);
        // Within the grace period the task says what it waits for.
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t).contains("ContainerCreating") || t.task_status() == TaskStatus::Failed
        })
        .await;
        let done = assert_fails(&client, &ns, &name, "VolumeMountFailed", started).await;
        let detail = error_detail(&done);
        assert!(
            detail.starts_with("FailedMount: ")
                && detail.contains("no-such-secret")
                && detail.ends_with("(for more than 5s)"),
            "{detail}"
        );
        // The task's own status message says it too, for a client that reads only that.
        assert!(status_message(&done).contains("no-such-secret"), "{done:?}");
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}

#[tokio::test]
async fn a_job_its_queue_never_admits_fails_its_task_as_not_admitted() {
    with_temp_ns("bound-queue", |client, ns| async move {
        let env = [("ADMISSION_TIMEOUT_SECONDS", "5")];
        let _operator = start_operator(&client, &ns, &env).await;
        // No LocalQueue of the name (nor, as a rule here, Kueue): the Job stays suspended.
        let queued = shell_tool("queued", "echo hi", json!({"queueName": "no-such-queue"}));
        create_tool(&client, &ns, &queued).await;
        let started = Instant::now();
        let task = create_task(&client, &ns, "queued", json!({})).await;
        let name = name_of(&task);
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t).contains("Waiting for admission by queue no-such-queue")
                || t.task_status() == TaskStatus::Failed
        })
        .await;
        let done = assert_fails(&client, &ns, &name, "NotAdmitted", started).await;
        let detail = error_detail(&done);
        assert!(
            detail.contains("queue no-such-queue for more than 5s"),
            "{detail}"
        );
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}

/// Asks one question, then waits for its answer for ever.
const ASKS_FOREVER: &str = r#"echo '{"mcp":"input","requests":{"go":{"method":"elicitation/create","params":{"mode":"form","message":"Go on?","requestedSchema":{"type":"object","properties":{"go":{"type":"boolean"}}}}}}}'
while ! grep -q '"go"' /var/run/mcp/input-responses 2>/dev/null; do sleep 0.2; done
echo never"#;

#[tokio::test]
async fn an_input_request_nobody_answers_fails_its_task_as_input_timeout() {
    with_temp_ns("bound-input", |client, ns| async move {
        // The operator's default stays an hour: the tool's own timeout is the one that counts.
        let _operator = start_operator(&client, &ns, &[]).await;
        let asks = shell_tool("asks", ASKS_FOREVER, json!({"inputTimeoutSeconds": 4}));
        create_tool(&client, &ns, &asks).await;
        let task = create_task(&client, &ns, "asks", json!({})).await;
        let name = name_of(&task);
        let waiting = wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        let started = Instant::now();
        let conditions = &waiting.status.as_ref().expect("status").conditions;
        assert!(
            conditions.iter().any(|c| c.type_ == "AwaitingInput"),
            "the status records since when it waits: {conditions:?}"
        );
        let done = assert_fails(&client, &ns, &name, "InputTimeout", started).await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "4 s timeout, ended after {:?}",
            started.elapsed()
        );
        assert_eq!(error_detail(&done), "no answer to go for 4s");
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}
