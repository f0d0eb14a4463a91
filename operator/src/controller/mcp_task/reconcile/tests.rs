//! Reconcile tests against a mocked API server: the exact calls, in order, and what they carry.

use std::collections::BTreeMap;

use axum::http::Method;
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTaskStatus, McpTool, TaskStatus};
use serde_json::{Value, json};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;

use super::*;
use crate::controller::mcp_task::build::build_job;
use crate::fixtures::api::{Call, context};
use crate::fixtures::{task, tool};

const ID: &str = "abcdefghijklmnopqrstuvwxyz234567";
const TOOLS: &str = "/apis/mcptasks.io/v1alpha1/namespaces/tools/mcptools";
const JOB: &str = "/apis/batch/v1/namespaces/tools/jobs/abcdefghijklmnopqrstuvwxyz234567";
const PODS: &str = "/api/v1/namespaces/tools/pods";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/tools/events";
const TASK: &str =
    "/apis/mcptasks.io/v1alpha1/namespaces/tools/mcptasks/abcdefghijklmnopqrstuvwxyz234567";

/// The fixture task without a TTL, so that it is not already expired in real time.
fn live_task() -> McpTask {
    let mut t = task();
    t.spec.ttl_ms = None;
    t.metadata.resource_version = Some("7".into());
    t
}

fn tool_list(items: Vec<McpTool>) -> Value {
    json!({"apiVersion": "mcptasks.io/v1alpha1", "kind": "McpToolList", "metadata": {}, "items": items})
}

/// Where a task's Job is created (POST).
const JOBS: &str = "/apis/batch/v1/namespaces/tools/jobs";

/// The record of the Job in the task's status (a merge patch) before the Job is created.
fn claim_call(task: &McpTask) -> Call {
    Call::ok(
        Method::PATCH,
        &format!("{TASK}/status"),
        serde_json::to_value(task).unwrap(),
    )
}

/// The fresh read (GET) of the task before a terminal status is written.
fn fresh_read(task: &McpTask) -> Call {
    Call::ok(Method::GET, TASK, json!(task))
}

fn status_call(task: &McpTask) -> Call {
    Call::ok(
        Method::PATCH,
        &format!("{TASK}/status"),
        serde_json::to_value(task).unwrap(),
    )
}

async fn run(task: McpTask, calls: Vec<Call>) -> (Action, Vec<Value>) {
    let (ctx, server, _triggers) = context(calls);
    let action = reconcile(Arc::new(DeserializeGuard(Ok(task))), ctx)
        .await
        .expect("reconcile succeeds");
    (action, server.await.expect("every expected call was made"))
}

#[tokio::test]
async fn new_task_gets_one_job_and_a_working_status() {
    let task = live_task();
    let pods = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []});
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![tool()])),
        Call::not_found(JOB),
        claim_call(&task),
        Call::echo(Method::POST, JOBS),
        Call::event("tools"),
        Call::ok(Method::GET, PODS, pods),
        status_call(&task),
        Call::event("tools"),
    ];
    let (action, bodies) = run(task, calls).await;
    // The Job is recorded before it is created, if the task is as read.
    assert_eq!(bodies[2]["status"]["jobName"], ID);
    assert_eq!(bodies[2]["metadata"]["resourceVersion"], "7");
    let bodies = &bodies[1..];
    let job = &bodies[2];
    assert_eq!(job["metadata"]["name"], ID);
    assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "task-uid");
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let status = &bodies[5]["status"];
    assert_eq!(bodies[5]["kind"], "McpTask");
    assert_eq!(status["status"], "working");
    assert_eq!(status["jobName"], ID);
    assert_eq!(
        status["statusMessage"],
        "Waiting for the Job to create a pod"
    );
    assert_eq!(status["createdAt"], "2026-08-01T12:00:00Z");
    assert_eq!(bodies[6]["reason"], "Working");
    assert!(action != Action::await_change(), "a live task is resynced");
}

#[tokio::test]
async fn terminal_task_without_ttl_makes_no_calls() {
    let mut task = live_task();
    task.status = Some(McpTaskStatus {
        status: TaskStatus::Completed,
        ..Default::default()
    });
    let (action, bodies) = run(task, vec![]).await;
    assert_eq!(action, Action::await_change());
    assert!(bodies.is_empty());
}

#[tokio::test]
async fn expired_task_is_deleted() {
    // The fixture was created on 2026-08-01 with a one-hour TTL.
    let mut ended = task();
    ended.status = Some(McpTaskStatus {
        status: TaskStatus::Completed,
        ..Default::default()
    });
    let calls = vec![
        Call::event("tools"),
        Call::ok(Method::DELETE, TASK, serde_json::to_value(task()).unwrap()),
    ];
    let (action, _) = run(ended, calls).await;
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn cancel_before_the_job_exists_cancels_without_creating_one() {
    let mut task = live_task();
    task.metadata.annotations = Some(BTreeMap::from([(
        CANCEL_REQUESTED_ANNOTATION.into(),
        "2026-08-01T12:00:01Z".into(),
    )]));
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![tool()])),
        Call::not_found(JOB),
        fresh_read(&task),
        status_call(&task),
        Call::event("tools"),
    ];
    let (_, bodies) = run(task, calls).await;
    assert_eq!(bodies[3]["status"]["status"], "cancelled");
    assert_eq!(bodies[4]["reason"], "Cancelled");
}

#[tokio::test]
async fn recorded_job_that_vanished_fails_the_task_and_is_not_recreated() {
    let mut task = live_task();
    let mut conditions = vec![];
    // Its creation was confirmed: someone deleted it.
    crate::controller::mcp_task::job_record::confirm(
        &mut conditions,
        ID,
        "job-uid",
        Timestamp::now(),
    );
    task.status = Some(McpTaskStatus {
        job_name: Some(ID.into()),
        conditions,
        ..Default::default()
    });
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![tool()])),
        Call::not_found(JOB),
        fresh_read(&task),
        status_call(&task),
        Call::event("tools"),
    ];
    let (_, bodies) = run(task, calls).await;
    let status = &bodies[3]["status"];
    assert_eq!(status["status"], "failed");
    assert_eq!(status["error"]["code"], -32603);
    assert_eq!(status["error"]["data"]["reason"], "JobDeleted");
}

/// Found end to end: the operator deleted the Job of a task whose image could not be pulled
/// and wrote `failed` (ImagePullFailed); the Job's deletion reached the controller before the
/// status write did, so a reconcile of the stale cached task (Job recorded, now missing) wrote
/// `failed` again with `data.reason: JobDeleted` over it.
#[tokio::test]
async fn a_terminal_decision_on_a_stale_task_does_not_overwrite_the_stored_outcome() {
    let mut stale = live_task();
    stale.status = Some(McpTaskStatus {
        job_name: Some(ID.into()),
        ..Default::default()
    });
    let mut stored = stale.clone();
    stored.status = Some(McpTaskStatus {
        status: TaskStatus::Failed,
        job_name: Some(ID.into()),
        ..Default::default()
    });
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![tool()])),
        Call::not_found(JOB),
        fresh_read(&stored),
    ];
    let (action, bodies) = run(stale, calls).await;
    assert_eq!(bodies.len(), 3, "no status write, no Event: {bodies:?}");
    assert_eq!(action, Action::requeue(STALE_RETRY));
}

#[tokio::test]
async fn unknown_tool_fails_the_task() {
    let task = live_task();
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![])),
        Call::not_found(JOB),
        fresh_read(&task),
        status_call(&task),
        Call::event("tools"),
    ];
    let (_, bodies) = run(task, calls).await;
    assert_eq!(
        bodies[3]["status"]["error"]["data"]["reason"],
        "ToolNotFound"
    );
    assert_eq!(bodies[4]["type"], "Warning");
}

#[tokio::test]
async fn a_tool_the_policy_refuses_fails_the_task_without_a_job() {
    let task = live_task();
    // Ready or not, the Job is checked as built: no PATCH of the Job is expected.
    let mut privileged = tool();
    let spec = privileged.spec.template.spec.as_mut().unwrap();
    spec.containers[0].security_context =
        Some(serde_json::from_value(json!({"privileged": true})).unwrap());
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![privileged])),
        Call::not_found(JOB),
        fresh_read(&task),
        status_call(&task),
        Call::event("tools"),
    ];
    let (_, bodies) = run(task, calls).await;
    let status = &bodies[3]["status"];
    assert_eq!(status["status"], "failed");
    assert_eq!(status["error"]["data"]["reason"], "TemplateNotAllowed");
    let detail = "spec.template.spec.containers[0].securityContext.privileged is not allowed";
    assert!(
        status["statusMessage"].as_str().unwrap().contains(detail),
        "{status}"
    );
    assert!(
        bodies[4]["note"].as_str().unwrap().contains(detail),
        "{}",
        bodies[4]
    );
    assert_eq!(bodies[4]["type"], "Warning");
}

#[tokio::test]
async fn unparsable_task_gets_a_warning_and_waits_for_a_change() {
    let invalid = kube::core::error_boundary::InvalidObject {
        error: "missing field `owner`".into(),
        metadata: task().metadata,
    };
    let (ctx, server, _triggers) = context(vec![Call::event("tools")]);
    let action = reconcile(Arc::new(DeserializeGuard(Err(invalid))), ctx)
        .await
        .unwrap();
    assert_eq!(action, Action::await_change());
    let bodies = server.await.unwrap();
    assert_eq!(bodies[0]["reason"], "InvalidObject");
    assert_eq!(bodies[0]["type"], "Warning");
}

fn job_json() -> Value {
    let config = crate::config::Config::from_lookup(|_| None).unwrap();
    let mut job = serde_json::to_value(build_job(&live_task(), &tool(), &config).unwrap()).unwrap();
    job["metadata"]["uid"] = json!("job-uid");
    job["status"] = json!({"active": 1});
    job
}

/// A reference to the task's Job as its pods' controller.
fn controlled_by_job() -> Value {
    json!([{"apiVersion": "batch/v1", "kind": "Job", "name": ID, "uid": "job-uid",
            "controller": true}])
}

fn pod_list(phase: &str, state: Value, annotations: Value) -> Value {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-pod", "namespace": "tools", "uid": "pod-uid",
                     "labels": {"batch.kubernetes.io/job-name": ID}, "annotations": annotations,
                     "ownerReferences": controlled_by_job()},
        "spec": {"containers": [{"name": "main", "image": "example.com/report:1"}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "image": "i",
                   "imageID": "", "ready": true, "restartCount": 0, "state": state}]},
    });
    json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [pod]})
}

fn no_events() -> Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "EventList", "metadata": {}, "items": []})
}

mod cached;
mod edges;
mod jobs;
mod pods;
