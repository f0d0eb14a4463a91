//! Cancel and TTL end to end: a cooperative tool stops and the task is `cancelled`; one that
//! ignores the request is stopped by deleting its pod after `cancelGracePeriodSeconds`; a task
//! cancelled before its pod starts is `cancelled` at once; an ended task is deleted with its
//! Job and pod when its TTL passes.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{name_of, start_operator, start_operator_with_conformance_tools, wait_cancelled};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};
use mcp_task_operator_crds::wire::poll::readable_until;
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    TaskRecorder, WAIT, create_task, create_task_with, create_tool, request_cancel, shell_tool,
    status_message, task_pods, wait_task, wait_task_event, wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// The pods of the task's Job that are not being deleted.
async fn live_pods(client: &Client, ns: &str, task: &str) -> Vec<Pod> {
    task_pods(client, ns, task)
        .await
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// Waits until `check` holds, polling.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < WAIT,
            "{what} did not happen in {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_cooperative_tool_stops_on_cancel_and_the_task_is_cancelled() {
    with_temp_ns("op-cancel", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let args = json!({"seconds": 3600, "label": "long"});
        let task = create_task(&client, &ns, "slow_compute", args).await;
        let name = name_of(&task);
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t).starts_with("long: ")
        })
        .await;
        request_cancel(&client, &ns, &name).await;
        let done = wait_cancelled(&client, &ns, &name).await;
        // The tool's own last words ("cancelled: long stopped after N s") stay.
        let message = status_message(&done);
        assert!(
            message.starts_with("cancelled: long stopped after"),
            "{message}"
        );
        let status = done.status.as_ref().expect("status");
        assert!(status.result.is_none() && status.error.is_none());
        // The tool stopped by itself: its pod runs to the end (exit 0), nothing is deleted.
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let selector = format!("batch.kubernetes.io/job-name={name}");
        let list = || async {
            pods.list(&ListParams::default().labels(&selector))
                .await
                .expect("list pods")
                .items
        };
        eventually("pod success", || async {
            let found = list().await;
            found.len() == 1
                && found[0].metadata.deletion_timestamp.is_none()
                && found[0].status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
        })
        .await;
        let list = list().await;
        let logs = pods
            .logs(
                list[0].metadata.name.as_deref().expect("pod name"),
                &Default::default(),
            )
            .await
            .expect("logs");
        assert!(logs.contains("cancelled: long stopped after"), "{logs}");
        let events = wait_task_event(&client, &ns, &name, "Cancelled").await;
        let cancelled = events
            .iter()
            .find(|e| e.reason == "Cancelled")
            .expect("event");
        assert_eq!(cancelled.type_, "Normal");
    })
    .await;
}

#[tokio::test]
async fn a_tool_that_ignores_cancel_is_stopped_after_its_grace_period() {
    with_temp_ns("op-cancel-ignored", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        let script = r#"echo '{"mcp":"status","message":"not listening"}'
while true; do sleep 1; done"#;
        let stubborn = shell_tool("stubborn", script, json!({"cancelGracePeriodSeconds": 3}));
        create_tool(&client, &ns, &stubborn).await;
        let recorder = TaskRecorder::start(&client, &ns).await;
        let task = create_task(&client, &ns, "stubborn", json!({})).await;
        let name = name_of(&task);
        wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t) == "not listening"
        })
        .await;
        let requested = Instant::now();
        request_cancel(&client, &ns, &name).await;
        let waiting = wait_task(&client, &ns, &name, WAIT, |t| {
            status_message(t).starts_with("Cancel requested")
        })
        .await;
        assert_eq!(waiting.task_status(), TaskStatus::Working);
        assert_eq!(
            status_message(&waiting),
            "Cancel requested; waiting up to 3s for the tool to stop"
        );

        let done = wait_cancelled(&client, &ns, &name).await;
        let waited = requested.elapsed();
        assert_eq!(
            status_message(&done),
            "Cancelled; the tool did not stop within its grace period"
        );
        assert!(waited >= Duration::from_secs(2), "{waited:?}");
        // The Job is deleted, and its pod with it.
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        eventually("Job deletion", || async {
            jobs.get_opt(&name)
                .await
                .expect("get job")
                .is_none_or(|j| j.metadata.deletion_timestamp.is_some())
        })
        .await;
        eventually("pod deletion", || async {
            live_pods(&client, &ns, &name).await.is_empty()
        })
        .await;
        wait_task_event(&client, &ns, &name, "Cancelled").await;
        // Deleting the Job must not rewrite the outcome ("Cancelled before the tool started").
        recorder.assert_terminal_statuses_never_change();
    })
    .await;
}

#[tokio::test]
async fn a_task_cancelled_before_its_pod_starts_is_cancelled_at_once() {
    with_temp_ns("op-cancel-early", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        // No node has this label: the pod stays Pending (Unschedulable) for ever.
        let unschedulable = shell_tool(
            "unschedulable",
            "echo never",
            json!({"template": {"spec": {"nodeSelector": {"mcptasks.io/no-such-node": "true"}}}}),
        );
        create_tool(&client, &ns, &unschedulable).await;
        let recorder = TaskRecorder::start(&client, &ns).await;

        let pending = create_task(&client, &ns, "unschedulable", json!({})).await;
        let pending = name_of(&pending);
        let waiting = wait_task(&client, &ns, &pending, WAIT, |t| {
            status_message(t).contains("Unschedulable")
        })
        .await;
        assert_eq!(waiting.task_status(), TaskStatus::Working);
        request_cancel(&client, &ns, &pending).await;
        let done = wait_cancelled(&client, &ns, &pending).await;
        assert_eq!(status_message(&done), "Cancelled before the tool started");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        eventually("Job deletion", || async {
            jobs.get_opt(&pending)
                .await
                .expect("get job")
                .is_none_or(|j| j.metadata.deletion_timestamp.is_some())
        })
        .await;

        // Cancelled before the operator ever saw it: no Job is ever created.
        let cancel = BTreeMap::from([(
            CANCEL_REQUESTED_ANNOTATION.to_owned(),
            "2026-01-01T00:00:00Z".to_owned(),
        )]);
        let early = create_task_with(
            &client,
            &ns,
            "slow_compute",
            json!({"seconds": 5}),
            Some(3_600_000),
            cancel,
        )
        .await;
        let early = name_of(&early);
        let done = wait_cancelled(&client, &ns, &early).await;
        assert_eq!(status_message(&done), "Cancelled before the tool started");
        assert!(jobs.get_opt(&early).await.expect("get job").is_none());
        let events = wait_task_event(&client, &ns, &early, "Cancelled").await;
        assert!(
            events.iter().all(|e| e.reason != "JobCreated"),
            "{events:#?}"
        );
        recorder.assert_terminal_statuses_never_change();
    })
    .await;
}

#[tokio::test]
async fn an_expired_task_is_deleted_with_its_job_and_pod() {
    with_temp_ns("op-ttl", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let args = |seconds| json!({"seconds": seconds, "label": "ttl"});
        let ttl = Some(15_000);
        // It finishes before it expires (a task still running then is kept: see
        // operator_lifetimes.rs).
        let finished =
            create_task_with(&client, &ns, "slow_compute", args(1), ttl, BTreeMap::new());
        let finished = name_of(&finished.await);
        let done = wait_terminal(&client, &ns, &finished).await;
        assert_eq!(done.task_status(), TaskStatus::Completed);
        let expires = done
            .status
            .as_ref()
            .and_then(|s| s.expires_at.clone())
            .expect("expiresAt");
        let created = done.metadata.creation_timestamp.clone().expect("created");
        // createdAt + ttlMs, or later: readable for the interval advised at its end + 30 s
        // (docs/DESIGN.md#retention).
        let ended = done.last_updated_at().expect("lastUpdatedAt");
        let readable = readable_until(done.spec.poll_interval_ms, created.0, ended);
        let by_ttl = created.0 + std::time::Duration::from_millis(15_000);
        assert_eq!(
            expires.0,
            by_ttl.max(readable),
            "expiresAt = max(createdAt + ttlMs, end + advice + margin)"
        );

        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        {
            let name = &finished;
            eventually("task deletion", || async {
                tasks.get_opt(name).await.expect("get task").is_none()
            })
            .await;
            eventually("Job garbage collection", || async {
                jobs.get_opt(name).await.expect("get job").is_none()
            })
            .await;
            eventually("pod garbage collection", || async {
                live_pods(&client, &ns, name).await.is_empty()
            })
            .await;
            let events = wait_task_event(&client, &ns, name, "Expired").await;
            assert!(events.iter().any(|e| e.reason == "Expired"), "{events:#?}");
        }
        // Deleted no earlier than it expired.
        assert!(k8s_openapi::jiff::Timestamp::now() >= expires.0);
    })
    .await;
}
