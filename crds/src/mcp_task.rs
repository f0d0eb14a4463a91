//! The `McpTask` custom resource: one MCP task, whose name is the task ID.
//!
//! The front end writes the spec once (then only `inputResponses`); the operator alone writes
//! the status. The schema refuses statuses that break the MCP task rules.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    RawJson, schema,
    task_status::{TaskError, TaskStatus},
};

/// Annotation that requests cancellation of a task; its value is an RFC 3339 time.
pub const CANCEL_REQUESTED_ANNOTATION: &str = "mcptasks.io/cancel-requested";
/// Annotation holding the task's W3C trace context (`traceparent`, 55 characters), written by
/// the front end at create: its `tools/call` span, or the client's when spans are not exported.
/// The operator's reconcile spans join that trace, and the tool container gets it as
/// `TRACEPARENT`; both re-validate it first (anyone who may edit the task may edit it).
pub const TRACEPARENT_ANNOTATION: &str = "mcptasks.io/traceparent";

/// One MCP task: a call of an `McpTool` running as a Job. `metadata.name` is the task ID.
// NB: clippy reads the repeated `type_ = "string"` of the printcolumns as duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "mcptasks.io",
    version = "v1alpha1",
    kind = "McpTask",
    namespaced,
    status = "McpTaskStatus",
    shortname = "mtask",
    category = "mcp",
    doc = "McpTask is one MCP task: a call of an McpTool that runs as a Kubernetes Job. Its \
           name is the task ID. The MCP front end creates it; the operator runs it and reports \
           its progress in status.",
    validation = Rule::new("size(self.metadata.name) <= 63")
        .message("metadata.name must be at most 63 characters: it is also the Job's name"),
    selectable = ".spec.tool",
    printcolumn(
        name = "Status",
        type_ = "string",
        description = "MCP task status",
        json_path = ".status.status"
    ),
    printcolumn(
        name = "Tool",
        type_ = "string",
        description = "MCP name of the tool",
        json_path = ".spec.tool"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        description = "Latest status message",
        json_path = ".status.statusMessage"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Expires",
        type_ = "string",
        description = "When the task is deleted (empty: never)",
        json_path = ".status.expiresAt"
    )
)]
#[x_kube(
    validation = Rule::new("has(self.ttlMs) == has(oldSelf.ttlMs) && (!has(self.ttlMs) || self.ttlMs == oldSelf.ttlMs)")
        .message("spec.ttlMs is immutable"),
    validation = Rule::new("has(self.pollIntervalMs) == has(oldSelf.pollIntervalMs) && (!has(self.pollIntervalMs) || self.pollIntervalMs == oldSelf.pollIntervalMs)")
        .message("spec.pollIntervalMs is immutable"),
    validation = Rule::new("has(self.arguments) == has(oldSelf.arguments)")
        .message("spec.arguments is immutable"),
    validation = Rule::new("has(self.toolUid) == has(oldSelf.toolUid) && (!has(self.toolUid) || self.toolUid == oldSelf.toolUid)")
        .message("spec.toolUid is immutable"),
    validation = Rule::new("has(self.toolGeneration) == has(oldSelf.toolGeneration) && (!has(self.toolGeneration) || self.toolGeneration == oldSelf.toolGeneration)")
        .message("spec.toolGeneration is immutable"),
)]
#[serde(rename_all = "camelCase")]
pub struct McpTaskSpec {
    /// MCP name of the tool called (an McpTool's spec.name, or its metadata.name). Immutable.
    /// Selectable: `kubectl get mcptasks --field-selector spec.tool=<name>`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]{1,128}$"))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("spec.tool is immutable"))]
    pub tool: String,

    /// metadata.uid of the McpTool the front end authorized the call on. The operator runs
    /// that object only: if the tool answering to spec.tool has another UID when the Job is
    /// created, the task fails (ToolChanged). Unset (tasks of earlier front ends): whichever
    /// McpTool answers to spec.tool. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub tool_uid: Option<String>,

    /// metadata.generation of that McpTool when the call was authorized. If its spec changed
    /// since (another generation) when the Job is created, the task fails (ToolChanged).
    /// Unset: any generation. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub tool_generation: Option<i64>,

    /// Arguments of the call, a JSON object valid against the tool's inputSchema. Set at
    /// creation; the container reads them from MCP_TOOL_ARGUMENTS.
    // NB: held as text, not a tree: every front end and the operator cache every task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::any_object")]
    pub arguments: Option<RawJson>,

    /// The authenticated caller that created the task; only this caller may read, update or
    /// cancel it through MCP. Immutable.
    #[schemars(length(min = 1))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("spec.owner is immutable"))]
    pub owner: String,

    /// Lifetime of the task in milliseconds, measured from its creation (at least 1); the
    /// task and its Job are deleted when it ends. A task still running then is not: the
    /// operator extends its lifetime (status.expiresAt) while it runs. Unset means unlimited
    /// (MCP `ttlMs: null`). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub ttl_ms: Option<i64>,

    /// Polling interval suggested to the client, in milliseconds (at least 1). Unset means no
    /// suggestion. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub poll_interval_ms: Option<i64>,

    /// Capabilities the client declared on the tools/call that created the task (MCP
    /// ClientCapabilities). Input requests of a kind the client did not declare are not shown
    /// to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::any_object")]
    pub client_capabilities: Option<Map<String, Value>>,

    /// Answers to the tool's startInputs, collected before the task was created, keyed like
    /// startInputs. The container reads them from MCP_START_INPUTS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::map_of_objects")]
    pub start_input_responses: Option<BTreeMap<String, RawJson>>,

    /// The client's answers to status.inputRequests (MCP InputResponses, e.g. ElicitResult
    /// objects), keyed like the requests. The only field that changes after creation: the
    /// front end merges in each tasks/update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::map_of_objects")]
    pub input_responses: Option<BTreeMap<String, RawJson>>,
}

/// The task's progress as the operator last observed it.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("self.status != 'completed' || has(self.result)")
        .message("status completed needs result"),
    validation = Rule::new("self.status != 'failed' || has(self.error)")
        .message("status failed needs error"),
    validation = Rule::new("self.status != 'input_required' || (has(self.inputRequests) && size(self.inputRequests) > 0)")
        .message("status input_required needs at least one inputRequests entry"),
    validation = Rule::new("!has(self.result) || self.status == 'completed'")
        .message("result is only allowed with status completed"),
    validation = Rule::new("!has(self.error) || self.status == 'failed'")
        .message("error is only allowed with status failed"),
    // Transition rules (with oldSelf): a writer that missed the end of the task (a leader
    // paused past its Lease) cannot rewrite what the client was told.
    validation = Rule::new("oldSelf.status == 'working' || oldSelf.status == 'input_required' || (has(self.result) == has(oldSelf.result) && (!has(self.result) || self.result == oldSelf.result))")
        .message("a terminal task's result never changes"),
    validation = Rule::new("oldSelf.status == 'working' || oldSelf.status == 'input_required' || (has(self.error) == has(oldSelf.error) && (!has(self.error) || self.error == oldSelf.error))")
        .message("a terminal task's error never changes"),
)]
pub struct McpTaskStatus {
    /// MCP status of the task: working, input_required, completed, failed or cancelled. The
    /// last three are terminal and never change.
    #[x_kube(validation = Rule::new("oldSelf == 'working' || oldSelf == 'input_required' || self == oldSelf")
        .message("a terminal status (completed, failed, cancelled) never changes"))]
    pub status: TaskStatus,

    /// Human-readable context for the status: progress, what the task waits for, why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,

    /// When the task was created (MCP createdAt); metadata.creationTimestamp until set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,

    /// When the task's MCP-visible state last changed (MCP lastUpdatedAt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<Time>,

    /// When the task expires and is deleted: createdAt + spec.ttlMs, moved later while the task
    /// still runs (so a running task is never deleted), and when it ends to at least the end +
    /// the pollIntervalMs advised then + 30 s (so a client that follows the advice reads the
    /// outcome). Unset for unlimited tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,

    /// The tool's result (an MCP CallToolResult) when the status is completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::any_object")]
    pub result: Option<RawJson>,

    /// The JSON-RPC error when the status is failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,

    /// Questions of the current input round (MCP InputRequests: key -> {method, params}). The
    /// keys not yet answered in spec.inputResponses are the outstanding ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::map_of_objects")]
    pub input_requests: Option<BTreeMap<String, Value>>,

    /// Name of the Job that runs the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,

    /// Conditions of the task, for kubectl and tooling; MCP clients see only `status`.
    /// `Succeeded` is Unknown while the task runs (reason Working or InputRequired), True when
    /// it completed (Completed), False when it failed (the failure's reason, such as
    /// DeadlineExceeded, or ToolFailed), was cancelled (Cancelled) or its tool reported an
    /// error (ToolError): `kubectl wait --for=condition=Succeeded mcptask/<id>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,

    /// The metadata.generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl McpTask {
    /// The task ID: `metadata.name`.
    pub fn task_id(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// The MCP status: `status.status`, or `working` before the operator has written status.
    pub fn task_status(&self) -> TaskStatus {
        self.status.as_ref().map(|s| s.status).unwrap_or_default()
    }

    /// Whether the task has reached a terminal status.
    pub fn is_terminal(&self) -> bool {
        self.task_status().is_terminal()
    }

    /// Whether a cancel has been requested (the cancel annotation is present).
    pub fn is_cancel_requested(&self) -> bool {
        self.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(CANCEL_REQUESTED_ANNOTATION))
    }

    /// When the task was created: `status.createdAt`, else `metadata.creationTimestamp`.
    pub fn created_at(&self) -> Option<Timestamp> {
        self.status
            .as_ref()
            .and_then(|s| s.created_at.as_ref())
            .or(self.metadata.creation_timestamp.as_ref())
            .map(|t| t.0)
    }

    /// When the task's state last changed: `status.lastUpdatedAt`, else its creation time.
    pub fn last_updated_at(&self) -> Option<Timestamp> {
        self.status
            .as_ref()
            .and_then(|s| s.last_updated_at.as_ref())
            .map(|t| t.0)
            .or_else(|| self.created_at())
    }

    /// When the task's requested TTL ends: creation time + `spec.ttlMs` (`None` when
    /// unlimited or not stored yet). [`Self::expires_at`] is this or later.
    pub fn requested_expiry(&self) -> Option<Timestamp> {
        let ttl = SignedDuration::from_millis(self.spec.ttl_ms?);
        self.created_at()?.checked_add(ttl).ok()
    }

    /// When the task expires: creation time + `spec.ttlMs`, or `status.expiresAt` when the
    /// operator has moved it later (it extends the TTL of a task still running when it would
    /// expire); `None` when unlimited (or when the object has never been stored and so has no
    /// creation time). Never earlier than creation + `spec.ttlMs`.
    pub fn expires_at(&self) -> Option<Timestamp> {
        let requested = self.requested_expiry()?;
        let extended = self
            .status
            .as_ref()
            .and_then(|s| s.expires_at.as_ref())
            .map(|t| t.0);
        Some(extended.map_or(requested, |e| e.max(requested)))
    }

    /// The task's current TTL in milliseconds, as MCP reports it (`ttlMs`): from its creation to
    /// [`Self::expires_at`], so at least `spec.ttlMs` and longer once the operator has extended
    /// it; `None` when unlimited.
    pub fn ttl_ms(&self) -> Option<i64> {
        let requested = self.spec.ttl_ms?;
        let lifetime = self
            .expires_at()
            .zip(self.created_at())
            .map(|(end, start)| end.duration_since(start).as_millis());
        Some(lifetime.map_or(requested, |ms| {
            i64::try_from(ms).unwrap_or(i64::MAX).max(requested)
        }))
    }

    /// Whether the task is gone for its client at `now`: it has ended and its expiry has
    /// passed. Expired tasks are answered as expired even before the operator deletes them. A
    /// task that has not ended never expires, whatever `expiresAt` says: the operator moves a
    /// running task's expiry ahead, and when it is away (restarting, failing over, cut off from
    /// the API server) the expiry stays behind while the task still runs.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.is_terminal() && self.expires_at().is_some_and(|at| at <= now)
    }

    /// The input requests still waiting for an answer: `status.inputRequests` minus the keys
    /// answered in `spec.inputResponses`. Empty unless the status is `input_required`.
    pub fn outstanding_input_requests(&self) -> BTreeMap<&str, &Value> {
        let Some(status) = &self.status else {
            return BTreeMap::new();
        };
        if status.status != TaskStatus::InputRequired {
            return BTreeMap::new();
        }
        let answered = self.spec.input_responses.as_ref();
        status
            .input_requests
            .iter()
            .flatten()
            .filter(|(key, _)| !answered.is_some_and(|a| a.contains_key(key.as_str())))
            .map(|(key, request)| (key.as_str(), request))
            .collect()
    }
}

#[cfg(test)]
mod tests;
