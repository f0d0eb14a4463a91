//! `tasks/get`, `tasks/update` and `tasks/cancel` over the task store.
//!
//! rmcp has refused non-declaring requests (-32021) before these run. Unknown IDs, other
//! callers' tasks and purged tasks all get the same -32602, so existence never leaks.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{McpTask, task_id};
use rmcp::model::{GetTaskResult, InputResponses};
use serde_json::Value;

use crate::auth::Caller;
use crate::bounds;
use crate::error::{Error, Result};
use crate::state::{AppState, server_info_meta};
use crate::wire;

/// The caller's task `id`: not found unless it exists and is theirs; expired once its TTL has
/// passed, even before the operator deletes it.
pub async fn find_task(state: &AppState, caller: &Caller, id: &str) -> Result<Arc<McpTask>> {
    // A malformed ID cannot exist; answer without asking the API server.
    if !task_id::is_valid(id) {
        return Err(Error::TaskNotFound);
    }
    let task = state.tasks.get(id).await?.ok_or(Error::TaskNotFound)?;
    if task.spec.owner != caller.as_str() {
        return Err(Error::TaskNotFound);
    }
    if task.is_expired(Timestamp::now()) {
        return Err(Error::TaskExpired);
    }
    Ok(task)
}

/// `tasks/get`: the task's current state with its status-specific payload.
pub async fn get_task(state: &AppState, caller: &Caller, id: &str) -> Result<GetTaskResult> {
    if let Some(limiter) = &state.poll_limiter
        && let Err(wait) = limiter.check(caller.as_str(), std::time::Instant::now())
    {
        return Err(Error::RateLimited {
            method: "tasks/get",
            per_second: limiter.rate(),
            retry_after_ms: retry_after_ms(wait),
        });
    }
    let task = find_task(state, caller, id).await?;
    let mut result = GetTaskResult::new(wire::detailed_task(&task)?);
    result.meta = Some(server_info_meta());
    Ok(result)
}

/// `tasks/update`: merges answers to outstanding input requests; answers to any other key are
/// ignored. The ack does not wait for the task to move on.
pub async fn update_task(
    state: &AppState,
    caller: &Caller,
    id: &str,
    responses: InputResponses,
) -> Result<()> {
    let task = find_task(state, caller, id).await?;
    let outstanding = task.outstanding_input_requests();
    let mut accepted = BTreeMap::new();
    for (key, response) in responses {
        let Some(request) = outstanding.get(key.as_str()) else {
            continue;
        };
        check_input_response(&key, request, &response)?;
        accepted.insert(key, response);
    }
    if !accepted.is_empty() {
        // All answers travel in one pod annotation: bound what the task would hold after the
        // merge, before anything is written.
        let mut merged = task.spec.input_responses.clone().unwrap_or_default();
        merged.extend(accepted.iter().map(|(k, v)| (k.clone(), v.clone())));
        let bytes = bounds::annotation_value_bytes(&merged);
        let limit = state.config.limits.max_input_responses_bytes;
        if bytes > limit {
            return Err(Error::TooLarge {
                what: "the task's inputResponses with these answers",
                bytes,
                limit,
            });
        }
        state.tasks.merge_input_responses(id, accepted).await?;
    }
    Ok(())
}

/// `tasks/cancel`: records the cancel request once; terminal tasks are acked unchanged.
pub async fn cancel_task(state: &AppState, caller: &Caller, id: &str) -> Result<()> {
    let task = find_task(state, caller, id).await?;
    if task.is_terminal() || task.is_cancel_requested() {
        return Ok(());
    }
    state.tasks.request_cancel(id, Timestamp::now()).await?;
    Ok(())
}

/// Structural check of one answer (`docs/DESIGN.md#answers`): an object; for an elicitation, an `action` of
/// `accept`, `decline` or `cancel`, and `content`, when present, an object. Extra fields pass.
pub fn check_input_response(key: &str, request: &Value, response: &Value) -> Result<()> {
    let invalid = |reason: &str| Error::InvalidInputResponse {
        key: key.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(response) = response.as_object() else {
        return Err(invalid("expected a JSON object"));
    };
    if request.get("method").and_then(Value::as_str) == Some("elicitation/create") {
        match response.get("action").and_then(Value::as_str) {
            Some("accept" | "decline" | "cancel") => {}
            _ => return Err(invalid("action must be accept, decline or cancel")),
        }
        if response.get("content").is_some_and(|c| !c.is_object()) {
            return Err(invalid("content must be an object"));
        }
    }
    Ok(())
}

/// A rate limiter's wait as `data.retryAfterMs`: whole milliseconds, at least 1.
pub fn retry_after_ms(wait: std::time::Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1)
}
