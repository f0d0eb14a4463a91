//! The `McpTool` custom resource: one MCP tool, run as a container image for every call.
//!
//! Holds the spec (what `tools/list` shows and how a call becomes a Job), its defaults, the status
//! the operator reports, and the lookups the front end and the operator share.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{schema, start_input::StartInput};

/// Name of the container that runs the tool when the pod template has more than one.
pub const TOOL_CONTAINER_NAME: &str = "tool";
/// Default `spec.ttlMs`: tasks are kept for one hour after creation.
pub const DEFAULT_TTL_MS: i64 = 3_600_000;
/// Default `spec.pollIntervalMs`: clients are asked to poll every two seconds.
pub const DEFAULT_POLL_INTERVAL_MS: i64 = 2_000;
/// Smallest `spec.pollIntervalMs`: a tenth of a second, so that a client following the advice
/// sends at most ten `tasks/get` a second per task.
pub const MIN_POLL_INTERVAL_MS: i64 = 100;
/// Largest `spec.pollIntervalMs`, and the ceiling of the interval the front end advises as a
/// task runs longer: ten minutes, far below 2^31-1 ms (the largest delay a JavaScript timer
/// takes; a larger one fires at once).
pub const MAX_POLL_INTERVAL_MS: i64 = 600_000;
/// Largest `spec.immediateResultMs`: thirty seconds, inside the usual client timeouts (the
/// front end's own request timeout bounds the wait as well).
pub const MAX_IMMEDIATE_RESULT_MS: i64 = 30_000;
/// Default `spec.syncTimeoutSeconds`: a synchronous call waits up to one minute.
pub const DEFAULT_SYNC_TIMEOUT_SECONDS: i64 = 60;
/// Default `spec.cancelGracePeriodSeconds`: a cancelled container has 30 s to stop by itself.
pub const DEFAULT_CANCEL_GRACE_PERIOD_SECONDS: i64 = 30;
/// Largest `spec.maxConcurrentTasks`.
pub const MAX_CONCURRENT_TASKS: i64 = 10_000;
/// Most entries in `spec.jobLabels`, and in `spec.jobAnnotations`.
pub const MAX_JOB_METADATA_ENTRIES: usize = 16;
/// Largest value of a `spec.jobAnnotations` entry, in characters.
pub const MAX_JOB_ANNOTATION_VALUE: usize = 1024;
/// Label and annotation keys a tool may not set on its Jobs: the operator's own (its watches
/// select on `app.kubernetes.io/managed-by`) and Kueue's queue name (set by `spec.queueName`).
pub const RESERVED_JOB_KEY_PREFIX: &str = "mcptasks.io/";
/// See [`RESERVED_JOB_KEY_PREFIX`].
pub const RESERVED_JOB_KEYS: [&str; 2] =
    ["app.kubernetes.io/managed-by", "kueue.x-k8s.io/queue-name"];
/// Largest `spec.retryOnDisruption`.
pub const MAX_DISRUPTION_RETRIES: i64 = 10;
/// Largest `spec.idleTimeoutSeconds`: one day.
pub const MAX_IDLE_TIMEOUT_SECONDS: i64 = 86_400;
/// Type of the condition that says whether the front end offers the tool.
pub const READY_CONDITION: &str = "Ready";

/// One MCP tool: its description as `tools/list` shows it, and the pod that runs each call.
///
/// The front end lists the tool once the operator has validated it (condition `Ready`); every
/// `tools/call` of it becomes an `McpTask` and a Job built from `template`.
// NB: clippy reads the repeated `type_ = "string"` of the printcolumns as duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "mcptasks.io",
    version = "v1alpha1",
    kind = "McpTool",
    namespaced,
    status = "McpToolStatus",
    shortname = "mtool",
    category = "mcp",
    doc = "McpTool registers one MCP tool: its name, description and JSON Schemas as tools/list \
           shows them, and the pod template that runs each call of it as a Kubernetes Job.",
    printcolumn(
        name = "MCP Name",
        type_ = "string",
        description = "Name of the tool in MCP (spec.name, or metadata.name when unset)",
        json_path = ".status.mcpName"
    ),
    printcolumn(
        name = "Image",
        type_ = "string",
        description = "Image of the tool container",
        json_path = ".status.image"
    ),
    printcolumn(
        name = "Tasks",
        type_ = "string",
        description = "Whether calls run as MCP tasks: required, optional or forbidden",
        json_path = ".spec.taskSupport"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        description = "Whether the front end offers the tool",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct McpToolSpec {
    /// Name of the tool in MCP (`tools/list`, `tools/call`): 1 to 128 characters of letters,
    /// digits, `_`, `-` and `.`. Defaults to metadata.name; set it when the MCP name holds
    /// characters an object name cannot, such as `restock_report`. Must be unique in the
    /// namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]{1,128}$"))]
    pub name: Option<String>,

    /// Human-readable name shown to users instead of the MCP name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,

    /// What the tool does, for the model and the user: when to call it and what it returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,

    /// JSON Schema of the tool's arguments (draft 2020-12 unless $schema says otherwise). The
    /// root must be `type: object`. The front end refuses a call whose arguments do not match.
    #[schemars(schema_with = "schema::object_json_schema")]
    pub input_schema: Map<String, Value>,

    /// JSON Schema of the tool's structuredContent, when it returns any. The root must be
    /// `type: object`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::object_json_schema")]
    pub output_schema: Option<Map<String, Value>>,

    /// MCP tool annotations: hints to clients about the tool's behaviour. They are not
    /// enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,

    /// Pod template of the Job that runs each call. The tool runs in the container named
    /// `tool`, or in the only container when there is one; every container needs an image.
    /// The operator adds the task's environment (MCP_TASK_ID, MCP_TOOL_NAME,
    /// MCP_TOOL_ARGUMENTS, MCP_START_INPUTS) and the /var/run/mcp volume to the tool container.
    #[x_kube(
        validation = Rule::new("has(self.spec)").message("template.spec is required"),
        validation = Rule::new(
            "!has(self.spec) || size(self.spec.containers) == 1 || self.spec.containers.exists(c, c.name == 'tool')"
        ).message("a template with more than one container must have one named 'tool'"),
        validation = Rule::new(
            "!has(self.spec) || self.spec.containers.all(c, has(c.image) && size(c.image) > 0)"
        ).message("every container in template.spec.containers needs an image")
    )]
    pub template: PodTemplateSpec,

    /// How calls run: `required` (a client that declares the MCP tasks extension gets a task,
    /// any other gets error -32021), `optional` (declaring clients get a task, others wait for
    /// the result for up to syncTimeoutSeconds) or `forbidden` (every client waits for the
    /// result). Defaults to optional.
    #[serde(default)]
    pub task_support: TaskSupport,

    /// How long a synchronous call waits for its result, in seconds (1 to 3600; default 60).
    /// A call that takes longer ends with an error result.
    #[serde(default = "default_sync_timeout_seconds")]
    #[schemars(range(min = 1, max = 3600))]
    pub sync_timeout_seconds: i64,

    /// How long each task of this tool is kept, in milliseconds from its creation (default
    /// 3600000, one hour). The task and its Job are deleted afterwards. 0 means unlimited: the
    /// task is kept until someone deletes it.
    #[serde(default = "default_ttl_ms")]
    #[schemars(range(min = 0))]
    pub ttl_ms: i64,

    /// Polling interval suggested to clients, in milliseconds (100 to 600000; default 2000).
    /// It is the advice for a new task; after the task's first minute the front end raises it
    /// as the task runs longer (to a tenth of its age, at most 600000), and each answer carries
    /// the current value.
    #[serde(default = "default_poll_interval_ms")]
    #[schemars(range(min = 100, max = 600000))]
    pub poll_interval_ms: i64,

    /// How long a tools/call that becomes a task waits for the task to finish before it
    /// answers, in milliseconds (0 to 30000; default 0). A task that completes (or fails)
    /// within the wait is answered as a plain result (or error), as a synchronous call would
    /// be; any other gets its task handle when the wait ends. 0 answers with the handle at
    /// once. Set it for tools that usually finish in a moment but sometimes run long.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0, max = 30000))]
    pub immediate_result_ms: i64,

    /// Limit on the run time of each call's Job, in seconds (the Job's activeDeadlineSeconds).
    /// A task that runs longer fails. Unset means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub active_deadline_seconds: Option<i64>,

    /// How long a tool container may keep running after a cancel request before its pod is
    /// deleted, in seconds (default 30).
    #[serde(default = "default_cancel_grace_period_seconds")]
    #[schemars(range(min = 0))]
    pub cancel_grace_period_seconds: i64,

    /// Questions the front end asks the client before any task exists (MCP multi round-trip
    /// input requests, such as a confirmation), keyed by a name of your choice (at most 16).
    /// The answers reach the container as JSON in MCP_START_INPUTS, under the same keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 16))]
    #[x_kube(validation = Rule::new(
        "self.all(k, k.matches('^[A-Za-z0-9_.-]{1,64}$'))"
    ).message("startInputs keys must be 1 to 64 letters, digits, '_', '-' or '.'"))]
    pub start_inputs: Option<BTreeMap<String, StartInput>>,

    /// Whether the tool signs its contract messages with the task's nonce (default false).
    /// When true, each task gets a random nonce in the file /var/run/mcp/message-nonce, and a
    /// stdout line counts as a contract message only when it carries `"nonce": "<that value>"`;
    /// any other `{"mcp": ...}` line is an ordinary log line. Set it for tools that print
    /// content from elsewhere (a fetched page, a wrapped command's output), so that content
    /// cannot report a result, an error or an input request in the tool's name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub message_nonce: bool,

    /// Most tasks of this tool (in the namespace) whose Job exists at once (1 to 10000;
    /// unset means no limit). A task beyond it stays `working` with the status message
    /// "Queued: N ahead" and no Job, and is admitted as earlier tasks end, callers
    /// (spec.owner) taking turns: by the slots the caller holds plus its tasks queued before,
    /// then by when the caller last got a slot, then creation order (creationTimestamp, then
    /// name). A queued task can be cancelled, and expires as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub max_concurrent_tasks: Option<i64>,

    /// Labels added to each call's Job (not to its pod: set those in template.metadata), at
    /// most 16. Keys under `mcptasks.io/`, `app.kubernetes.io/managed-by` and
    /// `kueue.x-k8s.io/queue-name` (set it with queueName) are refused; the operator's own
    /// labels win over any other of the same key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 16))]
    #[x_kube(validation = Rule::new(
        "self.all(k, !k.startsWith('mcptasks.io/') && k != 'app.kubernetes.io/managed-by' && k != 'kueue.x-k8s.io/queue-name')"
    ).message("jobLabels may not set keys under mcptasks.io/, app.kubernetes.io/managed-by or kueue.x-k8s.io/queue-name (use queueName)"))]
    pub job_labels: Option<BTreeMap<String, String>>,

    /// Annotations added to each call's Job, at most 16, each value at most 1024 characters.
    /// Keys under `mcptasks.io/` are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 16))]
    #[x_kube(
        validation = Rule::new("self.all(k, !k.startsWith('mcptasks.io/'))")
            .message("jobAnnotations may not set keys under mcptasks.io/"),
        validation = Rule::new("self.all(k, size(self[k]) <= 1024)")
            .message("jobAnnotations values are at most 1024 characters")
    )]
    pub job_annotations: Option<BTreeMap<String, String>>,

    /// Name of the Kueue LocalQueue (in the tool's namespace) that admits each call's Job: the
    /// Job gets the label `kueue.x-k8s.io/queue-name` and is created suspended, and the task
    /// stays `working` with "Waiting for admission by queue <name>" until Kueue admits
    /// (resumes) it. A cancel or the TTL ends a waiting task as any other. Without Kueue
    /// installed, the Job stays suspended until its task ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"))]
    pub queue_name: Option<String>,

    /// For idempotent tools: how often a call's pod is started again after a disruption
    /// (eviction, preemption, a lost node), 1 to 10. Unset (the default) runs each call once.
    /// Only disruptions are retried (a Kubernetes podFailurePolicy): any non-zero exit of the
    /// tool container fails the Job at once, so a tool's own failure never runs twice. The
    /// task's status message shows the attempt (such as "Running (attempt 2 of 3)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub retry_on_disruption: Option<i64>,

    /// Ends a call whose tool container prints nothing (no stdout line, no message) for this
    /// many seconds, 1 to 86400: the task fails with data.reason IdleTimeout and its Job is
    /// stopped. Unset (the default) means no idle limit. Counted by the operator replica that
    /// follows the log: a failover starts the count again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub idle_timeout_seconds: Option<i64>,

    /// How long a call may wait for the client's answers (status input_required) before it
    /// fails with data.reason InputTimeout and its Job is stopped, 1 to 86400 seconds, counted
    /// from when the tool asked (a new question, or an answer to some of them, starts the
    /// count again). Unset (the default): the operator's default
    /// (MCP_OPERATOR_INPUT_TIMEOUT_SECONDS, one hour unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub input_timeout_seconds: Option<i64>,

    /// Pods started before any call, so that a call starts in milliseconds instead of a pod's
    /// start-up: each waits without task data until one call claims it, runs that call only,
    /// and ends. Unset (the default): every call starts its own pod. Needs the tool container
    /// to set `command` (the launcher that waits runs it once claimed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_pool: Option<crate::WarmPool>,
}

/// Whether calls of a tool run as MCP tasks.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Only clients that declare the tasks extension may call the tool; they get a task.
    Required,
    /// Declaring clients get a task; others get the result synchronously.
    #[default]
    Optional,
    /// Every call is answered synchronously.
    Forbidden,
}

/// MCP `ToolAnnotations`: hints about a tool's behaviour. Clients must not rely on them for
/// security decisions.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable title of the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// True if the tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// True if the tool may perform destructive updates (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// True if calling the tool again with the same arguments has no additional effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// True if the tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// What the operator last observed about an `McpTool`.
#[derive(Serialize, Deserialize, KubeSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct McpToolStatus {
    /// Conditions of the tool. `Ready` is True when the spec is valid and the MCP name is
    /// unique in the namespace; the front end lists only Ready tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The metadata.generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The tool's MCP name as resolved by the operator (spec.name or metadata.name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_name: Option<String>,
    /// Image of the tool container as resolved by the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

pub(crate) fn default_sync_timeout_seconds() -> i64 {
    DEFAULT_SYNC_TIMEOUT_SECONDS
}

pub(crate) fn default_ttl_ms() -> i64 {
    DEFAULT_TTL_MS
}

fn default_poll_interval_ms() -> i64 {
    DEFAULT_POLL_INTERVAL_MS
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

pub(crate) fn default_cancel_grace_period_seconds() -> i64 {
    DEFAULT_CANCEL_GRACE_PERIOD_SECONDS
}

/// Index of the container that runs the tool among a pod template's (or pod's) containers:
/// the only one, or the one named [`TOOL_CONTAINER_NAME`]. The one rule the operator, the CLI
/// and the schema's checks share (`docs/tool-contract.md`).
pub fn tool_container_index(containers: &[Container]) -> Option<usize> {
    match containers {
        [_] => Some(0),
        many => many.iter().position(|c| c.name == TOOL_CONTAINER_NAME),
    }
}

impl McpTool {
    /// The tool's MCP name: `spec.name`, or `metadata.name` when unset.
    pub fn mcp_name(&self) -> String {
        self.spec.name.clone().unwrap_or_else(|| self.name_any())
    }

    /// The container that runs the tool: the one named `tool`, or the only one.
    ///
    /// `None` when the template has no spec, no containers, or several containers none of
    /// which is named `tool` (the schema refuses such objects; old objects may still hold them).
    pub fn tool_container(&self) -> Option<&Container> {
        let containers = &self.spec.template.spec.as_ref()?.containers;
        containers.get(tool_container_index(containers)?)
    }

    /// The TTL given to new tasks of this tool, as the wire's `ttlMs`: `None` is unlimited.
    pub fn task_ttl_ms(&self) -> Option<i64> {
        (self.spec.ttl_ms > 0).then_some(self.spec.ttl_ms)
    }

    /// Whether the operator reports the current generation as `Ready`.
    pub fn is_ready(&self) -> bool {
        let Some(status) = &self.status else {
            return false;
        };
        let current = status.observed_generation == self.metadata.generation;
        current
            && status
                .conditions
                .iter()
                .any(|c| c.type_ == READY_CONDITION && c.status == "True")
    }
}

#[cfg(test)]
mod tests;
