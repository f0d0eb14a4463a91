//! Turning an [`Outcome`] into the task's next status, its Event, and when to write it.
//!
//! Pure. Terminal statuses never change; `lastUpdatedAt` moves exactly when something a client
//! can see changes; writes within one non-terminal status are coalesced to one per interval per
//! task, status changes go out at once.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::budget::{MAX_TASK_BYTES, task_bytes_with_status};
use mcp_task_operator_crds::wire::poll::readable_until;
use mcp_task_operator_crds::{McpTask, McpTaskStatus, RawJson, TaskStatus};

use super::condition::with_succeeded;
use super::follow::Checkpoint;
use super::input_timeout;
use super::job_record::confirm;
use super::outcome::Outcome;

/// Type of the status condition that records the log follower's [`Checkpoint`]: where in the
/// pod's log the status was decided, and how many output warnings were reported. Its message
/// is [`Checkpoint::message`].
pub const CHECKPOINT_CONDITION: &str = "OutputFollowed";

/// The status fields that do not come from the outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusContext {
    /// Name of the task's Job, once it exists.
    pub job_name: Option<String>,
    /// UID of the task's own Job when it exists now: confirmed in the
    /// [`JOB_CREATED_CONDITION`](super::job_record::JOB_CREATED_CONDITION).
    pub job_uid: Option<String>,
    /// When the task was created.
    pub created_at: Option<Timestamp>,
    /// When the task expires (createdAt + ttlMs), if it does.
    pub expires_at: Option<Timestamp>,
    /// The task's own `pollIntervalMs` (`spec.pollIntervalMs`): an ended task stays readable
    /// for the interval its answers advised ([`readable_until`]).
    pub poll_interval_ms: Option<i64>,
    /// The task's `metadata.generation`.
    pub generation: Option<i64>,
    /// Where the log follower is, if one runs: recorded in the [`CHECKPOINT_CONDITION`].
    pub checkpoint: Option<Checkpoint>,
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
            next.result = Some(RawJson::from(result));
        }
        Outcome::Failed { message, error } => {
            next.status_message = Some(message.clone());
            next.error = Some(error.clone());
        }
    }
    if let (Some(name), Some(uid)) = (&ctx.job_name, &ctx.job_uid) {
        confirm(&mut next.conditions, name, uid, ctx.now);
    }
    input_timeout::record(&mut next.conditions, current, outcome, ctx.now);
    // createdAt is fixed by the first write; later writes keep it whatever the context says.
    if let Some(created) = current.and_then(|c| c.created_at.clone()) {
        next.created_at = Some(created);
    }
    // An ending task stays readable at least as long as a client that follows the advised
    // `pollIntervalMs` may take to look again (a TTL already longer stays).
    if let (true, Some(expires), Some(created)) = (
        next.status.is_terminal(),
        next.expires_at.as_mut(),
        next.created_at.as_ref(),
    ) {
        expires.0 = expires
            .0
            .max(readable_until(ctx.poll_interval_ms, created.0, ctx.now));
    }
    let visible_change = current.is_none_or(|c| !same_visible_state(c, &next));
    next.last_updated_at = if visible_change {
        Some(Time(ctx.now))
    } else {
        current.and_then(|c| c.last_updated_at.clone())
    };
    if let Some(checkpoint) = &ctx.checkpoint {
        let written_anyway = current != Some(&next);
        record_checkpoint(&mut next.conditions, checkpoint, written_anyway, ctx.now);
    }
    (current != Some(&next)).then_some(next)
}

/// Puts `checkpoint` into the [`CHECKPOINT_CONDITION`] of `conditions`. Only a new pod or a
/// new warning count is worth a write of its own: unless the status is `written_anyway`, more
/// bytes read alone keep the recorded count (a checkpoint that lags is safe, a resumed follower
/// just reads less before it is ready), so a chatty tool's plain output causes no writes.
fn record_checkpoint(
    conditions: &mut Vec<Condition>,
    checkpoint: &Checkpoint,
    written_anyway: bool,
    now: Timestamp,
) {
    let existing = conditions
        .iter()
        .position(|c| c.type_ == CHECKPOINT_CONDITION);
    if let Some(i) = existing
        && !written_anyway
        && let Some(old) = parse_checkpoint(&conditions[i].message)
        && old.pod_uid == checkpoint.pod_uid
        && old.warnings == checkpoint.warnings
    {
        return;
    }
    let condition = Condition {
        type_: CHECKPOINT_CONDITION.to_owned(),
        status: "True".to_owned(),
        reason: "LogRead".to_owned(),
        message: checkpoint.message(),
        last_transition_time: Time(now),
        observed_generation: None,
    };
    match existing {
        Some(i) => {
            let since = conditions[i].last_transition_time.clone();
            conditions[i] = Condition {
                last_transition_time: since,
                ..condition
            };
        }
        None => conditions.push(condition),
    }
}

/// The log follower's checkpoint recorded in `status`, if any.
pub fn checkpoint_of(status: &McpTaskStatus) -> Option<Checkpoint> {
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == CHECKPOINT_CONDITION)?;
    parse_checkpoint(&condition.message)
}

fn parse_checkpoint(message: &str) -> Option<Checkpoint> {
    Checkpoint::parse(message)
}

/// Whether `task` with `next` as its status stays within the object's size budget; otherwise
/// says how large it would be.
pub fn check_budget(task: &McpTask, next: &McpTaskStatus) -> Result<(), String> {
    let bytes = task_bytes_with_status(task, next);
    if bytes <= MAX_TASK_BYTES {
        return Ok(());
    }
    Err(format!(
        "the task would take {bytes} bytes with this {} status; at most {MAX_TASK_BYTES} bytes \
         fit one task object",
        next.status.as_str()
    ))
}

/// What the API server said when it refused a status write for good (413, 422, or a request
/// "too large" for etcd), shortened; `None` for errors worth a retry.
pub fn refused_write(error: &crate::error::Error) -> Option<String> {
    let crate::error::Error::Kube {
        source: kube::Error::Api(status),
        ..
    } = error
    else {
        return None;
    };
    let too_large = status.message.to_ascii_lowercase().contains("too large");
    (status.code == 413 || status.code == 422 || too_large).then(|| {
        crate::contract::message::shorten(
            &format!("HTTP {}: {}", status.code, status.message),
            1000,
        )
    })
}

/// Whether two statuses show a client the same task (lastUpdatedAt aside).
fn same_visible_state(a: &McpTaskStatus, b: &McpTaskStatus) -> bool {
    a.status == b.status
        && a.status_message == b.status_message
        && a.result == b.result
        && a.error == b.error
        && a.input_requests == b.input_requests
}

/// How long a start note (see [`Decision::start_note`](super::outcome::Decision::start_note))
/// stands before it is written, counted from the first note since the task's last write. A
/// task goes from its Job's confirmation through "Pod pending" and "Running" to the tool's
/// first status line within a second or two; a client polling every few seconds sees few of
/// these notes, and each would cost a status write. A note that stands longer (an image
/// pulling, a pod unschedulable) is written; anything else (the tool's own status line, a
/// status change, the Job's confirmation) is not held.
pub const START_NOTE_SETTLE: Duration = Duration::from_secs(2);

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
