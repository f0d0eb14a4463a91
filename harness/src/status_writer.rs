//! A test-side stand-in for the operator: marks `McpTool`s Ready and plays a script per tool on
//! the `McpTask`s of one namespace, writing their status the way the operator would (server-side
//! apply on the status subresource, with its own field manager).
//!
//! The front end tests need task statuses to move without Jobs and pods; the real operator is
//! tested elsewhere. [`crate::fixture_tools`] has the script for the conformance suite's
//! fixture tools and marks tools Ready.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, RawJson, TaskStatus};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Field manager of every status the stand-in writes.
pub const STATUS_FIELD_MANAGER: &str = "mcp-task-operator-tests-status-writer";

/// How often every task is re-evaluated (time-driven steps such as "completes after 1 s").
const TICK: Duration = Duration::from_millis(100);

/// The status a script wants a task to have now.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The MCP status.
    pub status: TaskStatus,
    /// `statusMessage`.
    pub message: Option<String>,
    /// The `CallToolResult`, for `completed`.
    pub result: Option<Value>,
    /// The JSON-RPC error, for `failed`.
    pub error: Option<Value>,
    /// The input requests of the current round, for `input_required`.
    pub input_requests: Option<BTreeMap<String, Value>>,
}

impl Step {
    /// `working` with a message.
    pub fn working(message: &str) -> Self {
        Self {
            status: TaskStatus::Working,
            message: Some(message.to_owned()),
            result: None,
            error: None,
            input_requests: None,
        }
    }

    /// `completed` with a text result (`isError` as given).
    pub fn completed(text: &str, is_error: bool) -> Self {
        Self {
            status: TaskStatus::Completed,
            message: None,
            result: Some(json!({
                "content": [{ "type": "text", "text": text }],
                "isError": is_error,
            })),
            ..Self::working("")
        }
    }

    /// `failed` with a JSON-RPC error.
    pub fn failed(code: i64, message: &str) -> Self {
        Self {
            status: TaskStatus::Failed,
            message: Some(format!("Tool execution failed: {message}")),
            error: Some(json!({ "code": code, "message": message })),
            ..Self::working("")
        }
    }

    /// `cancelled`.
    pub fn cancelled() -> Self {
        Self {
            status: TaskStatus::Cancelled,
            message: Some("Cancelled by client".to_owned()),
            ..Self::working("")
        }
    }

    /// `input_required` with the given requests.
    pub fn input(requests: BTreeMap<String, Value>) -> Self {
        Self {
            status: TaskStatus::InputRequired,
            message: Some("Waiting for input".to_owned()),
            input_requests: Some(requests),
            ..Self::working("")
        }
    }
}

/// Decides a task's status from the task and the time since its creation.
pub type Script = Arc<dyn Fn(&McpTask, Duration) -> Step + Send + Sync>;

/// The running stand-in; stops when dropped.
pub struct StatusWriter {
    handle: JoinHandle<()>,
}

impl Drop for StatusWriter {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl StatusWriter {
    /// Starts playing `script` on every `McpTask` in `ns`.
    pub fn start(client: Client, ns: &str, script: Script) -> Self {
        let api: Api<McpTask> = Api::namespaced(client, ns);
        let (reader, writer) = reflector::store::<McpTask>();
        let events = reflector(writer, watcher(api.clone(), watcher::Config::default()))
            .default_backoff()
            .touched_objects();
        let handle = tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            let mut tick = tokio::time::interval(TICK);
            loop {
                tokio::select! {
                    event = events.next() => if event.is_none() { return },
                    _ = tick.tick() => {
                        for task in reader.state() {
                            play(&api, &script, &task).await;
                        }
                    }
                }
            }
        });
        Self { handle }
    }
}

/// Applies the step the script wants, unless the task is terminal or already there.
async fn play(api: &Api<McpTask>, script: &Script, task: &McpTask) {
    if task.is_terminal() {
        return;
    }
    let Some(created) = task.created_at() else {
        return;
    };
    let now = Timestamp::now();
    let elapsed = now.duration_since(created).try_into().unwrap_or_default();
    let step = script(task, elapsed);
    let current = task.status.as_ref();
    let same = current.is_some_and(|s| {
        s.status == step.status
            && s.status_message == step.message
            && s.result.as_ref().map(RawJson::to_value) == step.result
            && s.error
                .as_ref()
                .map(|e| serde_json::to_value(e).unwrap_or_default())
                == step.error
            && s.input_requests == step.input_requests
    });
    if same {
        return;
    }
    let mut status = json!({
        "status": step.status,
        "createdAt": created.to_string(),
        "lastUpdatedAt": now.max(created).to_string(),
        "observedGeneration": task.metadata.generation,
    });
    if let Some(ttl) = task.spec.ttl_ms
        && let Ok(expires) = created.checked_add(SignedDuration::from_millis(ttl))
    {
        status["expiresAt"] = json!(expires.to_string());
    }
    for (key, value) in [
        ("statusMessage", step.message.map(Value::String)),
        ("result", step.result),
        ("error", step.error),
        ("inputRequests", step.input_requests.map(|r| json!(r))),
    ] {
        if let Some(value) = value {
            status[key] = value;
        }
    }
    let patch =
        json!({ "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask", "status": status });
    let params = PatchParams::apply(STATUS_FIELD_MANAGER).force();
    // NB: a task deleted meanwhile, or a racing terminal write, is not an error for a stand-in.
    if let Err(error) = api
        .patch_status(&task.name_any(), &params, &Patch::Apply(&patch))
        .await
    {
        eprintln!("status writer: {} : {error}", task.name_any());
    }
}
