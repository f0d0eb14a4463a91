//! `McpTask` → rmcp's MCP types, through the pure mapping in `crds::wire`.
//!
//! `crds::wire` decides every wire rule (flat handle, nullable `ttlMs`, outstanding input
//! requests, inlined `resultType`); this module only converts its JSON into rmcp's types and
//! hides input kinds the creating request did not declare.

use mcp_task_operator_crds::McpTask;
use mcp_task_operator_crds::wire::{
    build_create_task_result, build_detailed_task, input_request_allowed,
};
use rmcp::model::{CallToolResult, CreateTaskResult, DetailedTask, ResultType};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// The seed `CreateTaskResult` for a task just created.
pub fn create_task_result(stored: &McpTask) -> Result<CreateTaskResult> {
    convert(stored, &build_create_task_result(stored)?)
}

/// The full task state, as `tasks/get` and `notifications/tasks` show it. Input requests of a
/// kind the creating `tools/call` did not declare are left out (`docs/DESIGN.md#undeclared-kinds`).
pub fn detailed_task(stored: &McpTask) -> Result<DetailedTask> {
    let mut detailed = build_detailed_task(stored)?;
    if let Some(requests) = detailed.input_requests.as_mut() {
        let declared = stored.spec.client_capabilities.as_ref();
        requests.retain(|_, request| input_request_allowed(declared, request));
    }
    convert(stored, &detailed)
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
