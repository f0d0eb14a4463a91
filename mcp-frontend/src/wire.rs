//! `McpTask` → rmcp's MCP types: the wire rules of `crds::wire` (flat handle, nullable
//! `ttlMs`, outstanding input requests, inlined `resultType`), moved field by field into
//! rmcp's types with their constructors (no serde round trip), plus what only the front end
//! knows: the current `pollIntervalMs` and which input requests the client can be shown.

use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::wire::carry::first_loss;
use mcp_task_operator_crds::wire::poll::advised_poll_interval_ms;
use mcp_task_operator_crds::wire::{self as rules, build_detailed_task, input_request_allowed};
use mcp_task_operator_crds::{McpTask, TaskError, TaskStatus};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, InputRequest, InputRequests, JsonObject,
    ResultType, Task, TaskPayload, TaskStatus as WireStatus,
};
use serde_json::Value;

use crate::error::{Error, Result};

/// The seed `CreateTaskResult` for a task just created (or the handle of a task an immediate
/// result did not finish in time), with the `pollIntervalMs` advised now.
pub fn create_task_result(stored: &McpTask) -> Result<CreateTaskResult> {
    let mut handle = rules::build_task(stored)?;
    advise_poll_interval(&mut handle, stored, Timestamp::now());
    if handle.status == TaskStatus::InputRequired && !crate::wait::needs_client(stored) {
        handle.status = TaskStatus::Working;
    }
    Ok(CreateTaskResult::new(task(stored, handle)?))
}

/// The full task state, as `tasks/get` and `notifications/tasks` show it, with the
/// `pollIntervalMs` advised now ([`advised_poll_interval_ms`]). Only input requests the
/// client can be shown are listed ([`is_shown`]); a task whose outstanding requests are all
/// hidden shows `working`, since [`crate::unanswerable`] answers them for the client.
pub fn detailed_task(stored: &McpTask) -> Result<DetailedTask> {
    detailed_task_at(stored, Timestamp::now())
}

/// [`detailed_task`] as advised at `now`.
pub fn detailed_task_at(stored: &McpTask, now: Timestamp) -> Result<DetailedTask> {
    let rules::DetailedTask {
        task: mut handle,
        input_requests,
        result,
        error,
    } = build_detailed_task(stored)?;
    advise_poll_interval(&mut handle, stored, now);
    let payload = match handle.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => {
            let shown = input_requests
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, request)| input_request_allowed(client_caps(stored), request))
                .filter_map(|(key, request)| carried(&request).map(|typed| (key, typed)))
                .collect::<InputRequests>();
            if shown.is_empty() {
                TaskPayload::Working
            } else {
                TaskPayload::InputRequired {
                    input_requests: shown,
                }
            }
        }
        TaskStatus::Completed => TaskPayload::Completed {
            result: result.ok_or_else(|| mapping(stored, "completed without a result"))?,
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: error_object(error.ok_or_else(|| mapping(stored, "failed without an error"))?),
        },
    };
    Ok(DetailedTask::new(task(stored, handle)?, payload))
}

fn client_caps(stored: &McpTask) -> Option<&serde_json::Map<String, Value>> {
    stored.spec.client_capabilities.as_ref()
}

/// Whether the client of `stored` may be shown `request`: its kind was declared by the
/// creating `tools/call` (docs/CONFORMANCE.md, *Input a client cannot be asked*) and the MCP wire types
/// can carry it ([`check_carriable`]).
pub fn is_shown(stored: &McpTask, request: &Value) -> bool {
    input_request_allowed(client_caps(stored), request) && check_carriable(request).is_ok()
}

/// `request` in rmcp's typed `InputRequest` when that carries it without loss.
fn carried(request: &Value) -> Option<InputRequest> {
    let typed: InputRequest = serde_json::from_value(request.clone()).ok()?;
    let shown = serde_json::to_value(&typed).ok()?;
    first_loss(request, &shown).is_none().then_some(typed)
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
fn advise_poll_interval(task: &mut rules::Task, stored: &McpTask, now: Timestamp) {
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

/// The rules' handle in rmcp's `Task`. A negative `ttlMs` or `pollIntervalMs` (which the CRD
/// schema refuses) is a mapping error, as the typed conversion always made it.
fn task(stored: &McpTask, handle: rules::Task) -> Result<Task> {
    let unsigned = |value: Option<i64>, what: &str| {
        value
            .map(u64::try_from)
            .transpose()
            .map_err(|_| mapping(stored, &format!("negative {what}")))
    };
    let mut task = Task::new(
        handle.task_id,
        wire_status(handle.status),
        handle.created_at,
        handle.last_updated_at,
    );
    task.status_message = handle.status_message;
    task.ttl_ms = unsigned(handle.ttl_ms, "ttlMs")?;
    task.poll_interval_ms = unsigned(handle.poll_interval_ms, "pollIntervalMs")?;
    Ok(task)
}

fn wire_status(status: TaskStatus) -> WireStatus {
    match status {
        TaskStatus::Working => WireStatus::Working,
        TaskStatus::InputRequired => WireStatus::InputRequired,
        TaskStatus::Completed => WireStatus::Completed,
        TaskStatus::Failed => WireStatus::Failed,
        TaskStatus::Cancelled => WireStatus::Cancelled,
    }
}

/// A failed task's JSON-RPC error as the object `error` carries: `code`, `message`, `data`
/// when set.
fn error_object(error: TaskError) -> JsonObject {
    let mut object = JsonObject::new();
    object.insert("code".to_owned(), Value::from(error.code));
    object.insert("message".to_owned(), Value::from(error.message));
    if let Some(data) = error.data {
        object.insert("data".to_owned(), data);
    }
    object
}

fn mapping(stored: &McpTask, reason: &str) -> Error {
    Error::TaskMapping {
        task_id: stored.task_id().to_owned(),
        reason: reason.to_owned(),
    }
}

/// The `CallToolResult` of a completed task, for a synchronous caller.
pub fn call_tool_result(stored: &McpTask) -> Result<CallToolResult> {
    let rules::DetailedTask { result, .. } = build_detailed_task(stored)?;
    let result = result.ok_or_else(|| mapping(stored, "not completed"))?;
    let mut result: CallToolResult = serde_json::from_value(Value::Object(result))
        .map_err(|e| mapping(stored, &e.to_string()))?;
    // rmcp strips it again for legacy peers; 2026-07-28 results must carry it.
    result.result_type.get_or_insert(ResultType::COMPLETE);
    Ok(result)
}

#[cfg(test)]
mod tests;
