//! Reconcile tests against a mocked API server: the exact calls, in order, and what they carry.

use std::collections::BTreeMap;

use axum::http::Method;
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTaskStatus, McpTool, TaskStatus};
use serde_json::{Value, json};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;

use super::*;
use crate::controller::mcp_task::build::build_job;
use crate::controller::mcp_task::status::START_NOTE_SETTLE;
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

/// The lookup (GET) of the namespace's tools, answered with `items`.
fn tool_lookup(items: Vec<McpTool>) -> Call {
    let list = json!({"apiVersion": "mcptasks.io/v1alpha1", "kind": "McpToolList",
                      "metadata": {}, "items": items});
    Call::ok(Method::GET, TOOLS, list)
}

/// The reads of a task whose Job does not exist: its tools (`items`), then its Job (404).
fn no_job_yet(items: Vec<McpTool>) -> Vec<Call> {
    vec![tool_lookup(items), Call::not_found(JOB)]
}

/// The reads of a task whose Job exists: its tool, then its Job (`job`).
fn job_found(job: Value) -> Vec<Call> {
    vec![tool_lookup(vec![tool()]), Call::ok(Method::GET, JOB, job)]
}

/// The reads of a task whose Job exists: its tool, its Job (`job`), then its pods (`pods`).
fn job_and_pods(job: Value, pods: Value) -> Vec<Call> {
    let mut calls = job_found(job);
    calls.push(Call::ok(Method::GET, PODS, pods));
    calls
}

/// Where a task's Job is created (POST).
const JOBS: &str = "/apis/batch/v1/namespaces/tools/jobs";

/// The fresh read (GET) of the task before a terminal status is written.
fn fresh_read(task: &McpTask) -> Call {
    Call::ok(Method::GET, TASK, json!(task))
}

/// A write (merge patch) of the task's status: the record of its Job, its expiry or its state.
fn status_call(task: &McpTask) -> Call {
    Call::ok(
        Method::PATCH,
        &format!("{TASK}/status"),
        serde_json::to_value(task).unwrap(),
    )
}

/// A terminal status write: the fresh read of `task`, the status write, then its Event.
fn terminal_write(task: &McpTask) -> Vec<Call> {
    vec![fresh_read(task), status_call(task), Call::event("tools")]
}

/// A working status write (`task`) and its Event.
fn working_write(task: &McpTask) -> Vec<Call> {
    vec![status_call(task), Call::event("tools")]
}

/// `task` with the status `status` and, if any, the Job `job_name` recorded.
fn with_status(mut task: McpTask, status: TaskStatus, job_name: Option<&str>) -> McpTask {
    task.status = Some(McpTaskStatus {
        status,
        job_name: job_name.map(Into::into),
        ..Default::default()
    });
    task
}

/// The fixture task (see [`live_task`]), working, whose Job was recorded and its creation
/// confirmed.
fn confirmed_task() -> McpTask {
    let mut task = with_status(live_task(), TaskStatus::Working, Some(ID));
    crate::controller::mcp_task::job_record::confirm(
        &mut task.status.as_mut().unwrap().conditions,
        ID,
        "job-uid",
        Timestamp::now(),
    );
    task
}

/// `task` with a cancel requested (at 12:00:01, a second after the fixture was created).
fn with_cancel(mut task: McpTask) -> McpTask {
    task.metadata.annotations = Some(BTreeMap::from([(
        CANCEL_REQUESTED_ANNOTATION.into(),
        "2026-08-01T12:00:01Z".into(),
    )]));
    task
}

/// The creation (POST) of the task's Job (answered with the Job and its UID, as the API server
/// does), its Event, then the list of its pods (none yet).
fn job_created() -> Vec<Call> {
    vec![
        Call::ok(Method::POST, JOBS, job_json()),
        Call::event("tools"),
        Call::ok(Method::GET, PODS, no_pods()),
    ]
}

/// An empty list of pods.
fn no_pods() -> Value {
    json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []})
}

/// Runs the task reconcile once on `task` against a mock serving `calls`: its action and the
/// request bodies.
async fn run(task: McpTask, calls: Vec<Call>) -> (Action, Vec<Value>) {
    crate::fixtures::api::run(reconcile, task, calls).await
}

/// Like [`run`], at the clock `now` (RFC 3339) instead of the wall clock.
async fn run_at(task: McpTask, calls: Vec<Call>, now: &str) -> (Action, Vec<Value>) {
    let (ctx, server, _triggers) = crate::fixtures::api::context(calls);
    let now = now.parse().expect("an RFC 3339 time");
    let action = super::reconcile_task(&task, &ctx, now)
        .await
        .expect("reconcile succeeds");
    (action, server.await.expect("every expected call was made"))
}

/// Reconciles `task`, whose Job does not exist, with the namespace's tools `items`, to a
/// terminal status: the request bodies (the status write at 3, its Event at 4).
async fn end_without_job(task: McpTask, items: Vec<McpTool>) -> Vec<Value> {
    let calls = [no_job_yet(items), terminal_write(&task)].concat();
    run(task, calls).await.1
}

#[tokio::test]
async fn new_task_gets_one_job_and_a_working_status() {
    let task = live_task();
    let calls = [
        no_job_yet(vec![tool()]),
        // The Job's record.
        vec![status_call(&task)],
        job_created(),
        working_write(&task),
    ]
    .concat();
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
    let task = with_status(live_task(), TaskStatus::Completed, None);
    let (action, bodies) = run(task, vec![]).await;
    assert_eq!(action, Action::await_change());
    assert!(bodies.is_empty());
}

#[tokio::test]
async fn expired_task_is_deleted() {
    // The fixture was created at 2026-08-01T12:00:00Z with a one-hour TTL: at 13:00 it has
    // expired, whatever the wall clock says.
    let ended = with_status(task(), TaskStatus::Completed, None);
    let calls = vec![
        Call::event("tools"),
        Call::ok(Method::DELETE, TASK, serde_json::to_value(task()).unwrap()),
    ];
    let (action, _) = run_at(ended, calls, "2026-08-01T13:00:00Z").await;
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn cancel_before_the_job_exists_cancels_without_creating_one() {
    let bodies = end_without_job(with_cancel(live_task()), vec![tool()]).await;
    assert_eq!(bodies[3]["status"]["status"], "cancelled");
    assert_eq!(bodies[4]["reason"], "Cancelled");
}

#[tokio::test]
async fn recorded_job_that_vanished_fails_the_task_and_is_not_recreated() {
    // Its creation was confirmed: someone deleted it.
    let bodies = end_without_job(confirmed_task(), vec![tool()]).await;
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
    let stale = with_status(live_task(), TaskStatus::Working, Some(ID));
    let stored = with_status(stale.clone(), TaskStatus::Failed, Some(ID));
    let mut calls = no_job_yet(vec![tool()]);
    calls.push(fresh_read(&stored));
    let (action, bodies) = run(stale, calls).await;
    assert_eq!(bodies.len(), 3, "no status write, no Event: {bodies:?}");
    assert_eq!(action, Action::requeue(STALE_RETRY));
}

#[tokio::test]
async fn unknown_tool_fails_the_task() {
    let bodies = end_without_job(live_task(), vec![]).await;
    assert_eq!(
        bodies[3]["status"]["error"]["data"]["reason"],
        "ToolNotFound"
    );
    assert_eq!(bodies[4]["type"], "Warning");
}

#[tokio::test]
async fn a_tool_the_policy_refuses_fails_the_task_without_a_job() {
    // Ready or not, the Job is checked as built: no PATCH of the Job is expected.
    let mut privileged = tool();
    let spec = privileged.spec.template.spec.as_mut().unwrap();
    spec.containers[0].security_context =
        Some(serde_json::from_value(json!({"privileged": true})).unwrap());
    let bodies = end_without_job(live_task(), vec![privileged]).await;
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

/// An update (PATCH) of the annotations of the pod in `pods` (a list of one).
fn pod_patch(pods: &Value) -> Call {
    Call::ok(
        Method::PATCH,
        &format!("{PODS}/job-pod"),
        pods["items"][0].clone(),
    )
}

/// A terminal status write that stops the task's Job first: the fresh read of `task`, the
/// DELETE of the Job, the status write, then its Event.
fn stop_and_write(task: &McpTask) -> Vec<Call> {
    vec![
        fresh_read(task),
        Call::ok(Method::DELETE, JOB, job_json()),
        status_call(task),
        Call::event("tools"),
    ]
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

/// The annotations of a pod that has every answer and no cancel pending.
fn settled_annotations() -> Value {
    json!({"mcptasks.io/cancel-requested": "", "mcptasks.io/input-responses": "{}"})
}

fn no_events() -> Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "EventList", "metadata": {}, "items": []})
}

/// When `action` requeues, in seconds (kube's `Action` shows it only in its `Debug`, as whole
/// or fractional seconds for the waits of these tests).
fn requeue_secs(action: &Action) -> f64 {
    let shown = format!("{action:?}");
    let secs = shown
        .split("Some(")
        .nth(1)
        .and_then(|rest| rest.split("s)").next())
        .unwrap_or_else(|| panic!("no requeue in {shown}"));
    secs.parse()
        .unwrap_or_else(|_| panic!("no seconds in {shown}"))
}

mod cached;
mod edges;
mod jobs;
mod pods;

#[tokio::test]
async fn a_copy_older_than_the_operators_own_last_write_is_not_acted_on() {
    // The operator wrote the task's status, which left it at version 8; a Job's watch event
    // brings the task's reconcile before the task's own watch brings that write back.
    let (ctx, server, _triggers) = crate::fixtures::api::context(vec![]);
    ctx.record_written("task-uid", Some("8".into()));
    let action = super::reconcile_task(&live_task(), &ctx, Timestamp::now())
        .await
        .expect("reconcile succeeds");
    assert_eq!(action, Action::requeue(super::BEHIND_RETRY));
    assert!(server.await.unwrap().is_empty(), "no call at all");
    // The write seen (or anything newer, or a version that cannot be compared) ends the wait.
    assert!(ctx.cache_behind("task-uid", Some("7")));
    assert!(!ctx.cache_behind("task-uid", Some("8")));
    assert!(
        !ctx.cache_behind("task-uid", Some("7")),
        "forgotten once seen"
    );
    for seen in [Some("12"), Some("not-a-number"), None] {
        ctx.record_written("task-uid", Some("8".into()));
        assert!(!ctx.cache_behind("task-uid", seen), "{seen:?}");
    }
}

#[tokio::test]
async fn a_start_note_stands_counted_from_the_first_since_the_last_write() {
    let ctx = crate::fixtures::api::context(vec![]).0;
    let first = ctx.start_note_wait("task-uid");
    assert!(first > Duration::from_millis(1900) && first <= START_NOTE_SETTLE);
    // Counted from the first note since the last write, whatever the notes say meanwhile.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(ctx.start_note_wait("task-uid") < first);
    // A write starts the count again.
    ctx.record_write("task-uid", false);
    assert!(ctx.start_note_wait("task-uid") > first - Duration::from_millis(10));
}
