//! `tasks/get`, `tasks/update` and `tasks/cancel` over the task store.
//!
//! rmcp has refused non-declaring requests (-32021) before these run. Unknown IDs, other
//! callers' tasks and purged tasks all get the same -32602, so existence never leaks.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{McpTask, RawJson, task_id};
use rmcp::model::{GetTaskResult, InputResponses};
use serde_json::Value;

use crate::auth::Caller;
use crate::bounds;
use crate::error::{Error, Result};
use crate::ratelimit::RateLimiter;
use crate::state::{AppState, server_info_meta};
use crate::wire;

/// The caller's task `id`: not found unless it exists and is theirs; expired once its TTL has
/// passed, even before the operator deletes it. From this replica's cache, which may lag
/// another replica's: see [`find_current_task`].
pub async fn find_task(state: &AppState, caller: &Caller, id: &str) -> Result<Arc<McpTask>> {
    find(state, caller, id, false).await
}

/// [`find_task`], never older than what any replica answered before: a task that is not
/// terminal is confirmed with the API server ([`crate::store::TaskStore::get_current`]), so
/// a client whose polls reach several replicas never sees its status go backwards.
pub async fn find_current_task(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<Arc<McpTask>> {
    find(state, caller, id, true).await
}

async fn find(state: &AppState, caller: &Caller, id: &str, current: bool) -> Result<Arc<McpTask>> {
    // A malformed ID cannot exist; answer without asking the API server.
    if !task_id::is_valid(id) {
        return Err(Error::TaskNotFound);
    }
    let task = if current {
        state.tasks.get_current(id).await?
    } else {
        state.tasks.get(id).await?
    };
    let task = task.ok_or(Error::TaskNotFound)?;
    // A task being deleted is as gone as a deleted one (nothing deleted is served again).
    if task.spec.owner != caller.as_str() || crate::store::is_deleted(&task) {
        return Err(Error::TaskNotFound);
    }
    if task.is_expired(Timestamp::now()) {
        return Err(Error::TaskExpired);
    }
    Ok(task)
}

/// `tasks/get`: the task's current state with its status-specific payload.
///
/// Two limits apply, each when configured: a poll of one of the caller's tasks takes a token
/// of that task's bucket, refilled at the `pollIntervalMs` the answer advertises; a lookup of
/// any other ID takes one of the caller's, and a caller with none left is refused before any
/// lookup (so guessing IDs cannot turn into API reads).
pub async fn get_task(state: &AppState, caller: &Caller, id: &str) -> Result<GetTaskResult> {
    // Tokio's clock: the real one in production, a paused one in tests.
    let now = tokio::time::Instant::now().into_std();
    let refused = |limiter: &RateLimiter, wait| Error::RateLimited {
        method: "tasks/get",
        per_second: limiter.rate(),
        retry_after_ms: retry_after_ms(wait),
    };
    if let Some(limiter) = &state.poll_limiter
        && let Err(wait) = limiter.peek(caller.as_str(), now)
    {
        return Err(refused(limiter, wait));
    }
    let task = match find_current_task(state, caller, id).await {
        Ok(task) => task,
        Err(error) => {
            if let Some(limiter) = &state.poll_limiter {
                let _ = limiter.check(caller.as_str(), now);
            }
            return Err(error);
        }
    };
    let detailed = wire::detailed_task(&task)?;
    if let Some(limiter) = &state.task_poll_limiter {
        // At least 1 ms, so the rate is finite; an answer without an interval allows 1/s.
        let interval_ms = detailed.task.poll_interval_ms.unwrap_or(1000).max(1);
        let rate = 1000.0 / interval_ms as f64;
        if let Err(wait) = limiter.check_at(id, now, rate) {
            return Err(Error::PolledTooOften {
                task_id: id.to_owned(),
                poll_interval_ms: interval_ms,
                burst: limiter.burst() as u64,
                retry_after_ms: retry_after_ms(wait),
            });
        }
    }
    let mut result = GetTaskResult::new(detailed);
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
    // The current input round: a lagging cache could still show the previous one.
    let task = find_current_task(state, caller, id).await?;
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
        merged.extend(accepted.iter().map(|(k, v)| (k.clone(), RawJson::from(v))));
        let bytes = bounds::annotation_value_bytes(&merged);
        let limit = state.config.limits.max_input_responses_bytes;
        if bytes > limit {
            return Err(Error::TooLarge {
                what: "the task's inputResponses with these answers",
                bytes,
                limit,
            });
        }
        // And the whole of the task's client inputs within the task's size budget.
        let mut spec = task.spec.clone();
        spec.input_responses = Some(merged);
        crate::call::check_spec_budget(&spec, "the task's inputs with these answers")?;
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
