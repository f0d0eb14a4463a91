//! `tools/call`: validate, ask start inputs (MRTR), create the `McpTask`, then answer with a
//! task handle or, for synchronous callers, wait for the task and answer with its result.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::budget::{MAX_SPEC_INPUT_BYTES, spec_input_bytes};
use mcp_task_operator_crds::wire::input_request_allowed;
use mcp_task_operator_crds::{
    McpTask, McpTaskSpec, RawJson, TRACEPARENT_ANNOTATION, TaskStatus, TaskSupport, task_id,
};
use mcp_task_operator_telemetry::TraceParent;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ProtocolVersion,
};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::auth::Caller;
use crate::bounds;
use crate::error::{Error, Result};
use crate::quota::Reservation;
use crate::request::CallContext;
use crate::state::{AppState, add_server_info, server_info_meta};
use crate::tasks::{check_input_response, retry_after_ms};
use crate::tools::{CatalogSnapshot, ToolEntry};
use crate::wait::{Waited, wait_for_task};
use crate::wire;

/// Time kept back from the request timeout so a synchronous call answers before the timeout
/// layer cuts it off.
const SYNC_MARGIN: Duration = Duration::from_secs(2);

/// Serves one `tools/call`. The cheap refusals come first: the caller's rate, then whether RBAC
/// lets the caller call the tool (a refusal reads as an unknown tool), then the checks of
/// [`check_call_within`], then its active-task quota; nothing is stored unless all pass.
/// `trace` is the trace context the task stores (see [`crate::trace::call_span`]).
pub async fn call_tool(
    state: &AppState,
    request: CallToolRequestParams,
    context: &CallContext,
    trace: Option<TraceParent>,
) -> Result<CallToolResponse> {
    let caller = context.caller();
    if let Some(limiter) = &state.call_limiter
        && let Err(wait) = limiter.check(caller.as_str(), std::time::Instant::now())
    {
        return Err(Error::RateLimited {
            method: "tools/call",
            per_second: limiter.rate(),
            retry_after_ms: retry_after_ms(wait),
        });
    }
    let tools = state.tools.snapshot();
    crate::authz::authorize_call(state, &context.identity, &tools, &request.name).await?;
    let limits = &state.config.limits;
    let CheckedCall {
        entry,
        as_task,
        arguments,
    } = check_call_within(
        &tools,
        &request.name,
        request.arguments,
        context.declares_tasks(),
        limits.max_argument_bytes,
    )?;
    tracing::Span::current().record("gen_ai.tool.name", entry.name());
    let reservation = match &state.quota {
        Some(quota) => Some(quota.reserve(state.tasks.as_ref(), caller.as_str())?),
        None => None,
    };
    let start_input_responses = match start_inputs(&entry, request.input_responses, context)? {
        StartInputs::NotNeeded => None,
        StartInputs::Ask(mut result) => {
            result.meta = Some(server_info_meta());
            return Ok(CallToolResponse::InputRequired(result));
        }
        StartInputs::Declined(key) => {
            let text = format!("The call was not started: input {key} was declined.");
            let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
            result.meta = Some(server_info_meta());
            return Ok(CallToolResponse::Complete(result));
        }
        StartInputs::Answered(answers) => {
            // The tool container receives them in one environment variable.
            let bytes = bounds::env_value_bytes(&answers);
            if bytes > limits.max_start_input_bytes {
                return Err(Error::TooLarge {
                    what: "inputResponses",
                    bytes,
                    limit: limits.max_start_input_bytes,
                });
            }
            Some(answers)
        }
    };
    // Only what deciding on input requests reads is kept (a few dozen bytes at most).
    let capabilities = context
        .client_capabilities
        .as_ref()
        .and_then(|c| serde_json::to_value(c).ok())
        .and_then(|v| v.as_object().map(bounds::stored_capabilities));
    let task = new_task_object(
        &entry,
        &caller,
        arguments,
        capabilities,
        start_input_responses,
        trace,
    );
    check_spec_budget(
        &task.spec,
        "the call's inputs (arguments, inputResponses, capabilities)",
    )?;
    tracing::Span::current().record("mcp.task.id", task.task_id());
    if as_task {
        return run_as_task(state, &entry, task, reservation, context).await;
    }
    let mut response = run_synchronously(state, &entry, task, reservation, context).await?;
    if let CallToolResponse::Complete(result) = &mut response {
        add_server_info(&mut result.meta);
    }
    Ok(response)
}

/// A `tools/call` that passed every check made without the API server.
#[derive(Debug)]
pub struct CheckedCall {
    /// The tool called.
    pub entry: Arc<ToolEntry>,
    /// Whether the call becomes a task (else the answer waits for its result).
    pub as_task: bool,
    /// The arguments, valid against the tool's `inputSchema` (`{}` when none were sent).
    pub arguments: JsonObject,
}

/// [`check_call_within`] with the highest argument limit there is,
/// [`bounds::ENV_VALUE_CEILING`]. Pure, so `fuzz/` drives it directly.
pub fn check_call(
    tools: &CatalogSnapshot,
    name: &str,
    arguments: Option<JsonObject>,
    declares_tasks: bool,
) -> Result<CheckedCall> {
    check_call_within(
        tools,
        name,
        arguments,
        declares_tasks,
        bounds::ENV_VALUE_CEILING,
    )
}

/// The checks of a `tools/call` that need no API server, in the handler's order: the tool is
/// served (else -32602 "Unknown tool"), the request may call it (a task-only tool needs a
/// request declaring the tasks extension: -32021), the arguments fit in `max_argument_bytes`
/// as the tool container receives them (else -32602 "arguments of N bytes exceed the L-byte
/// limit"), and they fit its `inputSchema` (else -32602 naming every wrong argument).
pub fn check_call_within(
    tools: &CatalogSnapshot,
    name: &str,
    arguments: Option<JsonObject>,
    declares_tasks: bool,
    max_argument_bytes: usize,
) -> Result<CheckedCall> {
    let entry = tools.get(name).ok_or_else(|| Error::UnknownTool {
        name: name.to_owned(),
    })?;
    // The capability gate comes before argument checks: a non-declaring client can never
    // call a task-only tool, whatever its arguments.
    let as_task = match (entry.task_support, declares_tasks) {
        (TaskSupport::Required, false) => {
            return Err(Error::TasksCapabilityRequired {
                tool: entry.name().to_owned(),
            });
        }
        (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => false,
        (TaskSupport::Required | TaskSupport::Optional, true) => true,
    };
    let arguments = arguments.unwrap_or_default();
    // Before the schema: validating a large document costs more than measuring it.
    let bytes = bounds::env_value_bytes(&arguments);
    if bytes > max_argument_bytes {
        return Err(Error::InvalidArguments {
            tool: entry.name().to_owned(),
            reason: format!(
                "arguments of {bytes} bytes exceed the {max_argument_bytes}-byte limit"
            ),
        });
    }
    entry
        .validate_arguments(&arguments)
        .map_err(|reason| Error::InvalidArguments {
            tool: entry.name().to_owned(),
            reason,
        })?;
    Ok(CheckedCall {
        entry,
        as_task,
        arguments,
    })
}

/// Refuses (-32602, naming the size and the limit) a task spec whose client inputs
/// (arguments, start-input answers, answers and capabilities, as stored) take more than
/// [`MAX_SPEC_INPUT_BYTES`]: the whole task must stay within one object's size budget
/// (`crds::budget`), so the spec is bounded where the data enters, before anything is stored.
/// `what` names the inputs for the error.
pub fn check_spec_budget(spec: &McpTaskSpec, what: &'static str) -> Result<()> {
    let bytes = spec_input_bytes(spec);
    if bytes > MAX_SPEC_INPUT_BYTES {
        return Err(Error::TooLarge {
            what,
            bytes,
            limit: MAX_SPEC_INPUT_BYTES,
        });
    }
    Ok(())
}

/// The new task object: ID from the CSPRNG, settings from the tool.
fn new_task_object(
    entry: &ToolEntry,
    caller: &Caller,
    arguments: rmcp::model::JsonObject,
    client_capabilities: Option<serde_json::Map<String, Value>>,
    start_input_responses: Option<BTreeMap<String, Value>>,
    trace: Option<TraceParent>,
) -> McpTask {
    let mut task = McpTask::new(
        &task_id::generate(),
        McpTaskSpec {
            tool: entry.name().to_owned(),
            tool_uid: entry.uid.clone(),
            tool_generation: entry.generation,
            arguments: Some(RawJson::from(arguments)),
            owner: caller.as_str().to_owned(),
            ttl_ms: entry.ttl_ms,
            poll_interval_ms: Some(entry.poll_interval_ms),
            client_capabilities,
            start_input_responses: start_input_responses.map(|responses| {
                responses
                    .into_iter()
                    .map(|(key, answer)| (key, RawJson::from(answer)))
                    .collect()
            }),
            input_responses: None,
        },
    );
    if let Some(trace) = trace {
        // Rendered from the parsed IDs: never the caller's text.
        task.metadata.annotations = Some(BTreeMap::from([(
            TRACEPARENT_ANNOTATION.to_owned(),
            trace.to_string(),
        )]));
    }
    task
}

/// What the start-input round decided.
enum StartInputs {
    /// The tool has none.
    NotNeeded,
    /// Some are unanswered: ask them (MRTR `input_required`).
    Ask(InputRequiredResult),
    /// The user declined or cancelled the one named.
    Declined(String),
    /// All answered and accepted, by key.
    Answered(BTreeMap<String, Value>),
}

fn start_inputs(
    entry: &ToolEntry,
    responses: Option<BTreeMap<String, Value>>,
    context: &CallContext,
) -> Result<StartInputs> {
    if entry.start_inputs.is_empty() {
        return Ok(StartInputs::NotNeeded);
    }
    let modern = context
        .protocol_version
        .as_ref()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    let mode_of = |request: &Value| match request.pointer("/params/mode").and_then(Value::as_str) {
        Some("url") => "url",
        _ => "form",
    };
    if !modern {
        let first = entry.start_inputs.values().next();
        let mode = first
            .and_then(|q| serde_json::to_value(q).ok())
            .map_or("form", |q| mode_of(&q));
        return Err(Error::ElicitationRequired {
            tool: entry.name().to_owned(),
            mode,
        });
    }
    // Only kinds this request declared may be asked (a bare `elicitation: {}` is form only).
    let declared = context
        .client_capabilities
        .as_ref()
        .and_then(|c| serde_json::to_value(c).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let responses = responses.unwrap_or_default();
    let mut answers = BTreeMap::new();
    let mut missing = InputRequests::new();
    for (key, question) in &entry.start_inputs {
        let request = serde_json::to_value(question).map_err(|e| Error::InvalidStartInput {
            tool: entry.name().to_owned(),
            reason: e.to_string(),
        })?;
        if !input_request_allowed(Some(&declared), &request) {
            return Err(Error::ElicitationRequired {
                tool: entry.name().to_owned(),
                mode: mode_of(&request),
            });
        }
        let Some(response) = responses.get(key) else {
            let request: InputRequest =
                serde_json::from_value(request).map_err(|e| Error::InvalidStartInput {
                    tool: entry.name().to_owned(),
                    reason: e.to_string(),
                })?;
            missing.insert(key.clone(), request);
            continue;
        };
        check_input_response(key, &request, response)?;
        if response.get("action").and_then(Value::as_str) != Some("accept") {
            return Ok(StartInputs::Declined(key.clone()));
        }
        answers.insert(key.clone(), response.clone());
    }
    if missing.is_empty() {
        Ok(StartInputs::Answered(answers))
    } else {
        Ok(StartInputs::Ask(InputRequiredResult::new(
            Some(missing),
            None,
        )))
    }
}

/// Creates the task and answers with its handle, at once or, when the tool sets
/// `immediateResultMs`, once that wait has passed without the task finishing. A task that
/// completes (or fails) within the wait is answered as a plain result (or error), the
/// protocol's immediate-result shortcut; a caller that goes away meanwhile cancels the task
/// (it never learnt the task's ID).
async fn run_as_task(
    state: &AppState,
    entry: &ToolEntry,
    task: McpTask,
    reservation: Option<Reservation>,
    context: &CallContext,
) -> Result<CallToolResponse> {
    let limit = entry
        .immediate_result
        .min(state.config.request_timeout.saturating_sub(SYNC_MARGIN));
    // Subscribe before creating, so no change between the two is missed.
    let mut changes = (!limit.is_zero()).then(|| state.tasks.subscribe());
    // The API server has stored the object when create returns, so a tasks/get on any
    // replica finds it: the durability rule for CreateTaskResult.
    let mut latest = state.tasks.create(task).await?;
    // The store counts the task from here on.
    drop(reservation);
    if let Some(changes) = changes.as_mut() {
        latest = match wait_or_cancel(state, latest.clone(), changes, limit, context).await? {
            Waited::Settled(done) if done.task_status() == TaskStatus::Completed => {
                let mut result = wire::call_tool_result(&done)?;
                add_server_info(&mut result.meta);
                return Ok(CallToolResponse::Complete(result));
            }
            Waited::Settled(failed) if failed.task_status() == TaskStatus::Failed => {
                return Err(Error::ToolFailed(
                    failed.status.as_ref().and_then(|s| s.error.clone()),
                ));
            }
            Waited::Settled(task) | Waited::TimedOut(task) => task,
        };
    }
    let mut result = wire::create_task_result(&latest)?;
    result.meta = Some(server_info_meta());
    Ok(CallToolResponse::Task(result))
}

/// Creates the task and waits, through the watch, until it is terminal or the tool's limit
/// passes; a caller that goes away cancels the task.
async fn run_synchronously(
    state: &AppState,
    entry: &ToolEntry,
    task: McpTask,
    reservation: Option<Reservation>,
    context: &CallContext,
) -> Result<CallToolResponse> {
    let id = task.task_id().to_owned();
    // Subscribe before creating, so no change between the two is missed.
    let mut changes = state.tasks.subscribe();
    let current = state.tasks.create(task).await?;
    drop(reservation);
    let limit = entry
        .sync_timeout
        .min(state.config.request_timeout.saturating_sub(SYNC_MARGIN));
    // A synchronous caller cannot answer mid-task input (that needs tasks/update), so input
    // it is shown ends the wait as well.
    let outcome = wait_or_cancel(state, current, &mut changes, limit, context).await?;
    let Waited::Settled(finished) = outcome else {
        cancel_quietly(state, &id).await;
        return Ok(tool_error(format!(
            "Tool {} did not finish within {} s; the call was cancelled.",
            entry.name(),
            limit.as_secs()
        )));
    };
    match finished.task_status() {
        TaskStatus::Completed => Ok(CallToolResponse::Complete(wire::call_tool_result(
            &finished,
        )?)),
        TaskStatus::Failed => Err(Error::ToolFailed(
            finished.status.as_ref().and_then(|s| s.error.clone()),
        )),
        TaskStatus::InputRequired => {
            cancel_quietly(state, &id).await;
            Ok(tool_error(format!(
                "Tool {} needs input while it runs; call it with the io.modelcontextprotocol/tasks \
                 extension to answer. The call was cancelled.",
                entry.name()
            )))
        }
        TaskStatus::Cancelled | TaskStatus::Working => Ok(tool_error(format!(
            "Tool {} was cancelled before it finished.",
            entry.name()
        ))),
    }
}

/// A finished call whose result is the tool error `text` (`isError: true`).
fn tool_error(text: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(text)]))
}

/// Waits for the task as [`wait_for_task`] does; a caller that goes away meanwhile cancels
/// the task (it can no longer learn how it ends) and the call ends as abandoned.
async fn wait_or_cancel(
    state: &AppState,
    task: Arc<McpTask>,
    changes: &mut broadcast::Receiver<Arc<McpTask>>,
    limit: Duration,
    context: &CallContext,
) -> Result<Waited> {
    let id = task.task_id().to_owned();
    tokio::select! {
        waited = wait_for_task(state, task, changes, limit) => waited,
        () = context.ct.cancelled() => {
            cancel_quietly(state, &id).await;
            Err(Error::CallAbandoned)
        }
    }
}

/// Best-effort cancel of a task nobody waits for any more.
async fn cancel_quietly(state: &AppState, id: &str) {
    if let Err(error) = state.tasks.request_cancel(id, Timestamp::now()).await {
        tracing::warn!(task_id = id, error = %crate::error::ErrorChain(&error), "failed to cancel abandoned task");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec_with(arguments: usize, answers: usize) -> McpTaskSpec {
        let text = |n: usize| json!("x".repeat(n));
        McpTaskSpec {
            tool: "t".into(),
            tool_uid: None,
            tool_generation: None,
            arguments: json!({"a": text(arguments)})
                .as_object()
                .map(RawJson::from_map),
            owner: "o".into(),
            ttl_ms: None,
            poll_interval_ms: None,
            client_capabilities: None,
            start_input_responses: None,
            input_responses: Some(BTreeMap::from([("k".to_owned(), text(answers).into())])),
        }
    }

    #[test]
    fn a_spec_over_the_input_budget_is_refused_naming_its_size_and_the_limit() {
        // 128 KiB of arguments and 192 KiB of answers fit; 64 KiB more do not.
        assert!(check_spec_budget(&spec_with(128 * 1024, 192 * 1024), "inputs").is_ok());
        let big = spec_with(128 * 1024, 256 * 1024);
        let bytes = spec_input_bytes(&big);
        let err = check_spec_budget(&big, "inputs").expect_err("over the budget");
        assert_eq!(
            err.to_string(),
            format!("inputs: {bytes} bytes exceed the {MAX_SPEC_INPUT_BYTES}-byte limit")
        );
        let code = rmcp::model::ErrorData::from(err).code;
        assert_eq!(code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}
