//! The pure rules from an `McpTask` to the MCP Tasks extension (2026-07-28): the `Task`
//! handle and the `DetailedTask` that `tasks/get` and `notifications/tasks` carry. The front
//! end moves them into rmcp's types (its `wire` module), which add `resultType` and `_meta`.
//! See `docs/DESIGN.md` and the Tasks extension (https://modelcontextprotocol.github.io/ext-tasks/specification/2026-07-28/tasks.html).
//!
//! Rules applied here, so that no caller has to remember them:
//! - the handle is flat; `ttlMs` is always present (`null` = unlimited), `pollIntervalMs` only
//!   when the spec sets it;
//! - a task whose status the operator has not written yet is `working`, created at
//!   `metadata.creationTimestamp`;
//! - `input_required` lists only the requests not yet answered in `spec.inputResponses`; once
//!   every request is answered the task is reported `working` (it is about to resume);
//! - a completed task inlines its `CallToolResult` with `"resultType": "complete"`; a failed one
//!   inlines its JSON-RPC `error` (a reserved code from the tool becomes -32603, see
//!   [`tool_error`]); other statuses inline nothing.

use std::collections::BTreeMap;

use k8s_openapi::jiff::{Timestamp, fmt::strtime};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{McpTask, RawJson, TaskError, TaskStatus};

/// Reads `crds/tests/fixtures/wire/<name>` for a test of any crate of this workspace, from the
/// checkout whose tests run: `cargo test` sets `CARGO_MANIFEST_DIR` at run time to the member
/// under test. (The compile-time value would be the checkout that built the test, which a build
/// cache shared by two checkouts may not be.)
pub fn read_fixture(name: &str) -> String {
    let member = std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR (cargo test)");
    let path = format!("{member}/../crds/tests/fixtures/wire/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// The stored states under `crds/tests/fixtures/wire/`, each a `<case>.yaml` McpTask and the
/// `<case>.get.json` its `tasks/get` carries: the wire tests of this crate, the front end and the
/// cluster suite walk this one list. The first, `new`, has no status yet.
pub const FIXTURE_CASES: [&str; 8] = [
    "new",
    "working",
    "input_required",
    "input_answered",
    "completed",
    "tool_error",
    "failed",
    "cancelled",
];

/// `_meta` key of the subscription a `notifications/tasks` message belongs to.
pub const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key of the 2025-11-25 related-task marker, which must not appear on inlined results.
const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// Why an `McpTask` cannot be shown on the wire.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    /// The object has neither `status.createdAt` nor `metadata.creationTimestamp` (it was
    /// never stored).
    #[error("task {task_id} has no creation time")]
    MissingCreationTime {
        /// The task's ID.
        task_id: String,
    },
    /// The status is `completed` but `status.result` is missing.
    #[error("task {task_id} is completed but has no result")]
    MissingResult {
        /// The task's ID.
        task_id: String,
    },
    /// The status is `failed` but `status.error` is missing.
    #[error("task {task_id} failed but has no error")]
    MissingError {
        /// The task's ID.
        task_id: String,
    },
}

/// The MCP `Task`: the flat task handle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task ID (the `McpTask`'s name).
    pub task_id: String,
    /// The task's status.
    pub status: TaskStatus,
    /// Human-readable context for the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// RFC 3339 creation time, e.g. `2026-08-01T12:00:00Z`.
    pub created_at: String,
    /// RFC 3339 time of the last change.
    pub last_updated_at: String,
    /// Lifetime from `createdAt` in milliseconds (grows while a task runs past it); always
    /// serialized, `null` = unlimited.
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
}

/// The MCP `DetailedTask`: the handle plus the payload of its status.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The handle.
    #[serde(flatten)]
    pub task: Task,
    /// The outstanding input requests (only while `input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, Value>>,
    /// The `CallToolResult`, with `resultType: complete` (only when `completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Map<String, Value>>,
    /// The JSON-RPC error (only when `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
}

/// The MCP `Task` handle of an `McpTask`.
pub fn build_task(mcp_task: &McpTask) -> Result<Task, WireError> {
    let task_id = mcp_task.task_id().to_string();
    let created = mcp_task
        .created_at()
        .ok_or_else(|| WireError::MissingCreationTime {
            task_id: task_id.clone(),
        })?;
    let last_updated = mcp_task.last_updated_at().unwrap_or(created);
    let status = wire_status(mcp_task);
    Ok(Task {
        task_id,
        status,
        status_message: mcp_task
            .status
            .as_ref()
            .and_then(|s| s.status_message.clone()),
        created_at: format_time(created),
        last_updated_at: format_time(last_updated.max(created)),
        ttl_ms: mcp_task.ttl_ms(),
        poll_interval_ms: mcp_task.spec.poll_interval_ms,
    })
}

/// The MCP `DetailedTask` of an `McpTask`: what `tasks/get` and `notifications/tasks` carry.
pub fn build_detailed_task(mcp_task: &McpTask) -> Result<DetailedTask, WireError> {
    let task = build_task(mcp_task)?;
    let status = mcp_task.status.as_ref();
    let mut detailed = DetailedTask {
        task,
        input_requests: None,
        result: None,
        error: None,
    };
    match detailed.task.status {
        TaskStatus::InputRequired => {
            let outstanding = mcp_task.outstanding_input_requests();
            detailed.input_requests = Some(
                outstanding
                    .into_iter()
                    .map(|(key, request)| (key.to_string(), request.clone()))
                    .collect(),
            );
        }
        TaskStatus::Completed => {
            let result =
                status
                    .and_then(|s| s.result.as_ref())
                    .ok_or_else(|| WireError::MissingResult {
                        task_id: detailed.task.task_id.clone(),
                    })?;
            detailed.result = Some(inline_result(result));
        }
        TaskStatus::Failed => {
            let error =
                status
                    .and_then(|s| s.error.clone())
                    .ok_or_else(|| WireError::MissingError {
                        task_id: detailed.task.task_id.clone(),
                    })?;
            detailed.error = Some(tool_error::wire_error(&error));
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    Ok(detailed)
}

/// Whether a client that declared `client_capabilities` (MCP `ClientCapabilities`) may be shown
/// `request` (an MCP input request, `{"method", "params"}`). Servers must not surface input
/// kinds the client did not declare; `None` (not recorded) allows everything.
pub fn input_request_allowed(
    client_capabilities: Option<&Map<String, Value>>,
    request: &Value,
) -> bool {
    let Some(caps) = client_capabilities else {
        return true;
    };
    let method = request.get("method").and_then(Value::as_str);
    match method {
        Some("elicitation/create") => {
            let Some(elicitation) = caps.get("elicitation").and_then(Value::as_object) else {
                return false;
            };
            let mode = request
                .pointer("/params/mode")
                .and_then(Value::as_str)
                .unwrap_or("form");
            // A bare `elicitation: {}` declares form mode only.
            match mode {
                "url" => elicitation.contains_key("url"),
                _ => elicitation.is_empty() || elicitation.contains_key("form"),
            }
        }
        Some("sampling/createMessage") => caps.contains_key("sampling"),
        Some("roots/list") => caps.contains_key("roots"),
        _ => false,
    }
}

/// The status MCP clients see: `input_required` with every request answered is `working`,
/// since the task is about to resume; see the module docs.
fn wire_status(mcp_task: &McpTask) -> TaskStatus {
    match mcp_task.task_status() {
        TaskStatus::InputRequired if mcp_task.outstanding_input_requests().is_empty() => {
            TaskStatus::Working
        }
        status => status,
    }
}

/// A stored `CallToolResult` as it is inlined: with `resultType: complete` and `content`, and
/// without the legacy related-task `_meta` key.
fn inline_result(result: &RawJson) -> Map<String, Value> {
    // The schema keeps `status.result` an object.
    let mut inlined = result.to_map().unwrap_or_default();
    inlined.insert("resultType".to_string(), Value::from("complete"));
    inlined
        .entry("content")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(Value::Object(meta)) = inlined.get_mut("_meta") {
        meta.remove(RELATED_TASK_META);
        if meta.is_empty() {
            inlined.remove("_meta");
        }
    }
    inlined
}

/// RFC 3339 in UTC with whole seconds, as Kubernetes writes times: `2026-08-01T12:00:00Z`.
pub fn format_time(time: Timestamp) -> String {
    strtime::format("%Y-%m-%dT%H:%M:%SZ", time).unwrap_or_else(|_| time.to_string())
}

pub mod carry;
pub mod poll;
pub mod sse;
pub mod tool_error;

#[cfg(test)]
mod tests;
