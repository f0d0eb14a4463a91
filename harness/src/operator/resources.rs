//! Tools, tasks and their Events as a test makes, changes and reads them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, McpTool, TaskStatus};
use serde_json::{Value, json};

use super::{BUSYBOX_IMAGE, WAIT};
use crate::repo_dir;

/// An McpTool named `name` (MCP name the same) running `image` as its only container, named
/// `tool`, with `command` (none: the image's entrypoint). `spec` is merged over the defaults
/// (input schema `{type: object}`, TTL one hour); `container` over the container's fields.
pub fn tool(name: &str, image: &str, command: &[&str], spec: Value, container: Value) -> McpTool {
    let mut tool_container = json!({
        "name": "tool",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"memory": "128Mi"},
        },
    });
    if !command.is_empty() {
        tool_container["command"] = json!(command);
    }
    merge(&mut tool_container, container);
    let mut spec_value = json!({
        "inputSchema": {"type": "object"},
        "ttlMs": 3_600_000,
        "template": {"spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [tool_container],
        }},
    });
    merge(&mut spec_value, spec);
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTool",
        "metadata": {"name": name},
        "spec": spec_value,
    }))
    .expect("tool manifest is an McpTool")
}

/// A shell tool: `script` run by `sh -c` in the stock busybox image.
pub fn shell_tool(name: &str, script: &str, spec: Value) -> McpTool {
    tool(name, BUSYBOX_IMAGE, &["sh", "-c", script], spec, json!({}))
}

/// Merges `patch` into `base` (objects key by key, anything else replaced).
fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, patch) => *base = patch,
    }
}

/// Creates `tool` in `ns`.
pub async fn create_tool(client: &Client, ns: &str, tool: &McpTool) -> McpTool {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    tools
        .create(&PostParams::default(), tool)
        .await
        .unwrap_or_else(|e| panic!("cannot create McpTool {}: {e}", tool.name_any()))
}

/// Applies every McpTool in the YAML file `path` (relative to the repository) to `ns`.
pub async fn apply_example_tools(client: &Client, ns: &str, path: &str) {
    let text = std::fs::read_to_string(repo_dir().join(path))
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = <Value as serde::Deserialize>::deserialize(document).expect("YAML document");
        if value.is_null() {
            continue;
        }
        let tool: McpTool = serde_json::from_value(value).expect("an McpTool");
        create_tool(client, ns, &tool).await;
    }
}

/// Creates a task of the tool with MCP name `tool` with `arguments` and `annotations`; its
/// name is a fresh task ID.
pub async fn create_task_with(
    client: &Client,
    ns: &str,
    tool: &str,
    arguments: Value,
    ttl_ms: Option<i64>,
    annotations: BTreeMap<String, String>,
) -> McpTask {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let task: McpTask = serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "metadata": {"name": mcp_task_operator_crds::task_id::generate(), "annotations": annotations},
        "spec": {"tool": tool, "owner": "tests", "arguments": arguments, "ttlMs": ttl_ms},
    }))
    .expect("task manifest is an McpTask");
    tasks
        .create(&PostParams::default(), &task)
        .await
        .unwrap_or_else(|e| panic!("cannot create a task of {tool}: {e}"))
}

/// Creates a task of `tool` with `arguments` and a one-hour TTL.
pub async fn create_task(client: &Client, ns: &str, tool: &str, arguments: Value) -> McpTask {
    create_task_with(
        client,
        ns,
        tool,
        arguments,
        Some(3_600_000),
        BTreeMap::new(),
    )
    .await
}

/// Waits until the task satisfies `check`, or panics after `timeout`.
pub async fn wait_task(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
    check: impl Fn(&McpTask) -> bool + Send + 'static,
) -> McpTask {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    crate::wait_for(
        &tasks,
        name,
        move |t: Option<&McpTask>| t.is_some_and(&check),
        timeout,
    )
    .await
}

/// Polls the task (a get every 200 ms: no watch to expire over minutes on a busy cluster)
/// until `check` holds, for up to `limit`.
pub async fn poll_task(
    client: &Client,
    ns: &str,
    name: &str,
    limit: Duration,
    check: impl Fn(&McpTask) -> bool,
) -> McpTask {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let begun = Instant::now();
    loop {
        let task = tasks.get(name).await.expect("get task");
        if check(&task) {
            return task;
        }
        assert!(
            begun.elapsed() < limit,
            "not there in {limit:?}: {:?}",
            task.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the task has `status`, or panics after [`WAIT`].
pub async fn wait_status(client: &Client, ns: &str, name: &str, status: TaskStatus) -> McpTask {
    wait_task(client, ns, name, WAIT, move |t| {
        t.task_status() == status && t.status.is_some()
    })
    .await
}

/// Waits until the task is terminal and returns it.
pub async fn wait_terminal(client: &Client, ns: &str, name: &str) -> McpTask {
    wait_task(client, ns, name, WAIT, McpTask::is_terminal).await
}

/// Sets the task's cancel annotation (the time now, RFC 3339), as the front end does.
pub async fn request_cancel(client: &Client, ns: &str, name: &str) {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = json!({"metadata": {"annotations": {
        mcp_task_operator_crds::CANCEL_REQUESTED_ANNOTATION: now,
    }}});
    tasks
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("cannot request cancel of {name}: {e}"));
}

/// Merges `responses` into the task's `spec.inputResponses`, as the front end's tasks/update.
pub async fn answer(client: &Client, ns: &str, name: &str, responses: Value) {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let patch = json!({"spec": {"inputResponses": responses}});
    tasks
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("cannot answer {name}: {e}"));
}

/// One Event about an object, as `kubectl describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenEvent {
    /// `Normal` or `Warning`.
    pub type_: String,
    /// PascalCase reason.
    pub reason: String,
    /// The note (message).
    pub message: String,
    /// How often it happened (a series counts repeats).
    pub count: i32,
}

/// The Events about the object of `kind` named `name` in `ns`.
pub async fn events_for(client: &Client, ns: &str, kind: &str, name: &str) -> Vec<SeenEvent> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
    let list = events
        .list(&ListParams::default().fields(&selector))
        .await
        .unwrap_or_else(|e| panic!("cannot list Events of {kind} {name}: {e}"));
    let mut seen: Vec<(Option<_>, SeenEvent)> = list
        .items
        .into_iter()
        .map(|e| {
            let time = e
                .event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.first_timestamp.as_ref().map(|t| t.0));
            let series = e.series.as_ref().and_then(|s| s.count);
            let event = SeenEvent {
                type_: e.type_.unwrap_or_default(),
                reason: e.reason.unwrap_or_default(),
                message: e.message.unwrap_or_default(),
                count: series.or(e.count).unwrap_or(1),
            };
            (time, event)
        })
        .collect();
    seen.sort_by_key(|(time, _)| *time);
    seen.into_iter().map(|(_, e)| e).collect()
}

/// Waits until the task has an Event with `reason` and returns all its Events.
pub async fn wait_task_event(
    client: &Client,
    ns: &str,
    name: &str,
    reason: &str,
) -> Vec<SeenEvent> {
    let started = Instant::now();
    loop {
        let events = events_for(client, ns, "McpTask", name).await;
        if events.iter().any(|e| e.reason == reason) {
            return events;
        }
        assert!(
            started.elapsed() < WAIT,
            "task {name} got no {reason} Event in {WAIT:?}; it has {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `error.data.reason` of a failed task.
pub fn failure_reason(task: &McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.error.as_ref())
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The first text content of a completed task's result.
pub fn result_text(task: &McpTask) -> String {
    result_field(task, "content")
        .and_then(|c| c[0]["text"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Whether a completed task's result says `isError: true`.
pub fn result_is_error(task: &McpTask) -> bool {
    result_field(task, "isError")
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// The field `key` of a completed task's result.
fn result_field(task: &McpTask, key: &str) -> Option<Value> {
    task.status.as_ref()?.result.as_ref()?.member(key)
}

/// The task's `statusMessage`.
pub fn status_message(task: &McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.status_message.clone())
        .unwrap_or_default()
}

/// Waits until the tool's Ready condition is for its current generation (the operator has
/// validated what is stored now); returns (status, reason, message).
pub async fn tool_ready(client: &Client, ns: &str, name: &str) -> (String, String, String) {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let validated = |t: Option<&McpTool>| {
        t.is_some_and(|t| {
            t.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.observed_generation == t.metadata.generation)
            })
        })
    };
    let tool = crate::wait_for(&tools, name, validated, WAIT).await;
    let c = tool
        .status
        .expect("status")
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    (c.status, c.reason, c.message)
}

/// Waits until the tool has an Event with `reason` (published after its status is written);
/// returns its type and message.
pub async fn tool_event(client: &Client, ns: &str, name: &str, reason: &str) -> (String, String) {
    let started = Instant::now();
    loop {
        let events = events_for(client, ns, "McpTool", name).await;
        if let Some(e) = events.iter().find(|e| e.reason == reason) {
            return (e.type_.clone(), e.message.clone());
        }
        assert!(
            started.elapsed() < WAIT,
            "no {reason} Event on {name}: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The pods of the task's Job, found by the label the Job controller gives them (the Job, and
/// so the label, is named after the task).
pub async fn task_pods(client: &Client, ns: &str, task: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("{}={task}", mcp_task_operator_crds::JOB_NAME_LABEL);
    pods.list(&ListParams::default().labels(&selector))
        .await
        .unwrap_or_else(|e| panic!("cannot list the pods of {task}: {e}"))
        .items
}

/// Waits (polling) until the first pod of the task's Job is in `phase` (e.g. `Succeeded`).
pub async fn wait_pod_phase(client: &Client, ns: &str, task: &str, phase: &str) -> Pod {
    let started = std::time::Instant::now();
    loop {
        let pod = task_pods(client, ns, task).await.into_iter().next();
        let now = pod.as_ref().and_then(|p| p.status.as_ref()?.phase.clone());
        if now.as_deref() == Some(phase) {
            return pod.expect("a pod in the phase");
        }
        assert!(
            started.elapsed() < WAIT,
            "the pod of {task} is not {phase} after {WAIT:?}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the task's Job is gone or being deleted.
pub async fn wait_job_stopped(client: &Client, ns: &str, name: &str) {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let started = Instant::now();
    while jobs
        .get_opt(name)
        .await
        .expect("get job")
        .is_some_and(|j| j.metadata.deletion_timestamp.is_none())
    {
        assert!(
            started.elapsed() < WAIT,
            "Job {name} not deleted in {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the task is terminal and asserts it `completed`.
pub async fn wait_completed(client: &Client, ns: &str, name: &str) -> McpTask {
    let done = wait_terminal(client, ns, name).await;
    assert_completed(&done);
    done
}

/// Asserts the task `completed` (its status printed otherwise).
pub fn assert_completed(task: &McpTask) {
    assert_eq!(
        task.task_status(),
        TaskStatus::Completed,
        "{}: {:?}",
        task.metadata.name.as_deref().unwrap_or_default(),
        task.status
    );
}
