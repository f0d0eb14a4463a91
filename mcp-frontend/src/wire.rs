//! `McpTask` → rmcp's MCP types, through the pure mapping in `crds::wire`.
//!
//! `crds::wire` decides every wire rule (flat handle, nullable `ttlMs`, outstanding input
//! requests, inlined `resultType`); this module converts its JSON into rmcp's types, advises
//! the current `pollIntervalMs` and shows only the input requests the client can be shown.

use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::wire::carry::first_loss;
use mcp_task_operator_crds::wire::poll::advised_poll_interval_ms;
use mcp_task_operator_crds::wire::{
    Task, build_create_task_result, build_detailed_task, input_request_allowed,
};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use rmcp::model::{CallToolResult, CreateTaskResult, DetailedTask, InputRequest, ResultType};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// The seed `CreateTaskResult` for a task just created (or the handle of a task an immediate
/// result did not finish in time), with the `pollIntervalMs` advised now.
pub fn create_task_result(stored: &McpTask) -> Result<CreateTaskResult> {
    let mut created = build_create_task_result(stored)?;
    advise_poll_interval(&mut created.task, stored, Timestamp::now());
    if created.task.status == TaskStatus::InputRequired && !crate::wait::needs_client(stored) {
        created.task.status = TaskStatus::Working;
    }
    convert(stored, &created)
}

/// The full task state, as `tasks/get` and `notifications/tasks` show it, with the
/// `pollIntervalMs` advised now ([`advised_poll_interval_ms`]). Only input requests the
/// client can be shown are listed ([`is_shown`]); a task whose outstanding requests are all
/// hidden shows `working`, since [`crate::unanswerable`] answers them for the client.
pub fn detailed_task(stored: &McpTask) -> Result<DetailedTask> {
    let mut detailed = build_detailed_task(stored)?;
    advise_poll_interval(&mut detailed.task, stored, Timestamp::now());
    if let Some(requests) = detailed.input_requests.as_mut() {
        requests.retain(|_, request| is_shown(stored, request));
        if requests.is_empty() {
            detailed.input_requests = None;
            detailed.task.status = TaskStatus::Working;
        }
    }
    convert(stored, &detailed)
}

/// Whether the client of `stored` may be shown `request`: its kind was declared by the
/// creating `tools/call` (docs/CONFORMANCE.md, *Input a client cannot be asked*) and the MCP wire types
/// can carry it ([`check_carriable`]).
pub fn is_shown(stored: &McpTask, request: &Value) -> bool {
    input_request_allowed(stored.spec.client_capabilities.as_ref(), request)
        && check_carriable(request).is_ok()
}

/// Whether rmcp's typed `InputRequest` carries `request` without losing any of it: it must
/// parse, and every member of `request` must come back unchanged when it is serialized again
/// (rmcp may add members, such as a default `mode`). The error says what was refused or lost.
pub fn check_carriable(request: &Value) -> std::result::Result<(), String> {
    let typed: InputRequest = serde_json::from_value(request.clone())
        .map_err(|e| format!("the MCP input request types refuse it: {e}"))?;
    let shown = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    match first_loss(request, &shown) {
        None => Ok(()),
        Some(path) => Err(format!("the MCP input request types drop or change {path}")),
    }
}

/// Sets the handle's `pollIntervalMs` to the value advised at `now` for a task not yet
/// terminal; a terminal task keeps the tool's own value (there is nothing left to poll for).
fn advise_poll_interval(task: &mut Task, stored: &McpTask, now: Timestamp) {
    let Some(created) = stored.created_at() else {
        return;
    };
    let base = stored.spec.poll_interval_ms;
    task.poll_interval_ms = if stored.is_terminal() {
        advised_poll_interval_ms(base, created, created)
    } else {
        advised_poll_interval_ms(base, created, now)
    };
}

/// The `CallToolResult` of a completed task, for a synchronous caller.
pub fn call_tool_result(stored: &McpTask) -> Result<CallToolResult> {
    let detailed = build_detailed_task(stored)?;
    let result = detailed.result.ok_or_else(|| Error::TaskMapping {
        task_id: stored.task_id().to_owned(),
        reason: "not completed".to_owned(),
    })?;
    let mut result: CallToolResult = convert(stored, &Value::Object(result))?;
    // rmcp strips it again for legacy peers; 2026-07-28 results must carry it.
    result.result_type.get_or_insert(ResultType::COMPLETE);
    Ok(result)
}

fn convert<T: Serialize, U: DeserializeOwned>(stored: &McpTask, value: &T) -> Result<U> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| Error::TaskMapping {
            task_id: stored.task_id().to_owned(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests;
