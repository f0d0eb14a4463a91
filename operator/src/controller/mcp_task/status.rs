//! Turning an [`Outcome`] into the task's next status, its Event, and when to write it.
//!
//! Pure. Terminal statuses never change; `lastUpdatedAt` moves exactly when something a client
//! can see changes; writes within one non-terminal status are coalesced to one per interval per
//! task, status changes go out at once.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{McpTaskStatus, TaskStatus};

use super::condition::with_succeeded;
use super::outcome::Outcome;

/// The status fields that do not come from the outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusContext {
    /// Name of the task's Job, once it exists.
    pub job_name: Option<String>,
    /// When the task was created.
    pub created_at: Option<Timestamp>,
    /// When the task expires (createdAt + ttlMs), if it does.
    pub expires_at: Option<Timestamp>,
    /// The task's `metadata.generation`.
    pub generation: Option<i64>,
    /// The current time.
    pub now: Timestamp,
}

/// The status to write, or `None` when the current one is terminal or already says it all.
pub fn next_status(
    current: Option<&McpTaskStatus>,
    outcome: &Outcome,
    ctx: &StatusContext,
) -> Option<McpTaskStatus> {
    if current.is_some_and(|c| c.status.is_terminal()) {
        return None;
    }
    let mut next = McpTaskStatus {
        status: outcome.status(),
        created_at: ctx.created_at.map(Time),
        expires_at: ctx.expires_at.map(Time),
        job_name: ctx.job_name.clone(),
        observed_generation: ctx.generation,
        conditions: with_succeeded(current, outcome, ctx.generation, ctx.now),
        ..McpTaskStatus::default()
    };
    match outcome {
        Outcome::Working { message } | Outcome::Cancelled { message } => {
            next.status_message = Some(message.clone());
        }
        Outcome::InputRequired { message, requests } => {
            next.status_message = Some(message.clone());
            next.input_requests = Some(requests.clone());
        }
        Outcome::Completed { message, result } => {
            next.status_message = message.clone();
            next.result = Some(result.clone());
        }
        Outcome::Failed { message, error } => {
            next.status_message = Some(message.clone());
            next.error = Some(error.clone());
        }
    }
    // createdAt is fixed by the first write; later writes keep it whatever the context says.
    if let Some(created) = current.and_then(|c| c.created_at.clone()) {
        next.created_at = Some(created);
    }
    let visible_change = current.is_none_or(|c| !same_visible_state(c, &next));
    next.last_updated_at = if visible_change {
        Some(Time(ctx.now))
    } else {
        current.and_then(|c| c.last_updated_at.clone())
    };
    (current != Some(&next)).then_some(next)
}

/// Whether two statuses show a client the same task (lastUpdatedAt aside).
fn same_visible_state(a: &McpTaskStatus, b: &McpTaskStatus) -> bool {
    a.status == b.status
        && a.status_message == b.status_message
        && a.result == b.result
        && a.error == b.error
        && a.input_requests == b.input_requests
}

/// How long to wait before writing a status, given the time since this task's last write.
///
/// A change of `status` (to a terminal one, or between `working` and `input_required`) and a
/// first write go at once: clients act on them (an answered task must stop showing
/// `input_required`). Only updates within one status (progress messages) are coalesced to at
/// most one per `interval`.
pub fn write_delay(
    since_last_write: Option<Duration>,
    interval: Duration,
    from: Option<TaskStatus>,
    to: TaskStatus,
) -> Duration {
    match since_last_write {
        Some(elapsed) if from == Some(to) && !to.is_terminal() => interval.saturating_sub(elapsed),
        _ => Duration::ZERO,
    }
}

/// A Kubernetes Event describing a status transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionEvent {
    /// PascalCase reason.
    pub reason: &'static str,
    /// One sentence for humans.
    pub note: String,
    /// Whether the Event is a Warning (otherwise Normal).
    pub warning: bool,
}

/// The Event for moving from `from` to `outcome`, or `None` when the status did not change.
pub fn transition_event(from: Option<TaskStatus>, outcome: &Outcome) -> Option<TransitionEvent> {
    let to = outcome.status();
    if from == Some(to) {
        return None;
    }
    let event = |reason, note: String, warning| TransitionEvent {
        reason,
        note,
        warning,
    };
    Some(match outcome {
        Outcome::Working { message } if from == Some(TaskStatus::InputRequired) => event(
            "InputReceived",
            format!("All input answered; working: {message}"),
            false,
        ),
        Outcome::Working { message } => {
            event("Working", format!("Task is working: {message}"), false)
        }
        Outcome::InputRequired { requests, .. } => event(
            "InputRequired",
            format!("Task waits for {} input request(s)", requests.len()),
            false,
        ),
        Outcome::Completed { result, .. } if result.get("isError") == Some(&true.into()) => event(
            "CompletedWithError",
            "Task completed with a tool error (isError: true)".to_owned(),
            true,
        ),
        Outcome::Completed { .. } => event("Completed", "Task completed".to_owned(), false),
        Outcome::Failed { message, .. } => event("Failed", format!("Task failed: {message}"), true),
        Outcome::Cancelled { message } => event("Cancelled", message.clone(), false),
    })
}

#[cfg(test)]
mod tests;
