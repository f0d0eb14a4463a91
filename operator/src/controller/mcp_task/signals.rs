//! The production signals a task's end gives: a failed task counted by its reason, and how long
//! a cancelled task's work went on after the cancel request. Recorded once, when the terminal
//! status is written.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::observe::FailureReason;
use super::outcome::Outcome;
use crate::metrics::Metrics;

/// The `reason` label of a failed task whose error is the tool's own (or names no reason the
/// operator knows).
pub const TOOL_ERROR: &str = "ToolError";

/// Every [`FailureReason`], so a stored `error.data.reason` maps back to a fixed label.
const REASONS: [FailureReason; 30] = [
    FailureReason::ImagePullFailed,
    FailureReason::OomKilled,
    FailureReason::DeadlineExceeded,
    FailureReason::Evicted,
    FailureReason::PodDeleted,
    FailureReason::JobDeleted,
    FailureReason::ContainerStartFailed,
    FailureReason::ResultTooLarge,
    FailureReason::ToolNotFound,
    FailureReason::ToolInvalid,
    FailureReason::TemplateNotAllowed,
    FailureReason::ArgumentsTooLarge,
    FailureReason::JobConflict,
    FailureReason::JobRefused,
    FailureReason::PodRefused,
    FailureReason::ContainerConfigError,
    FailureReason::Unschedulable,
    FailureReason::InputTooLarge,
    FailureReason::OutputUnavailable,
    FailureReason::StatusTooLarge,
    FailureReason::StatusRefused,
    FailureReason::NodeLost,
    FailureReason::IdleTimeout,
    FailureReason::Preempted,
    FailureReason::VolumeMountFailed,
    FailureReason::StartTimeout,
    FailureReason::NotAdmitted,
    FailureReason::InputTimeout,
    FailureReason::ToolChanged,
    FailureReason::ClaimUnanswered,
];

/// The `reason` label of a failed outcome: the [`FailureReason`] of an operator-detected
/// failure, or [`TOOL_ERROR`] for the tool's own error. Never a string from the task itself, so the label stays low-cardinality.
/// `None` for an outcome that is not `failed`.
pub fn failure_label(outcome: &Outcome) -> Option<&'static str> {
    let Outcome::Failed { error, .. } = outcome else {
        return None;
    };
    let named = error
        .data
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(|r| r.as_str());
    // The operator's own failures carry the reason's own message too ([`Outcome::failure`]);
    // a tool that names a reason in its error's data is still a tool error.
    let ours = REASONS
        .into_iter()
        .find(|r| named == Some(r.as_str()) && error.message == r.message());
    Some(ours.map_or(TOOL_ERROR, FailureReason::as_str))
}

/// How long the work went on after the cancel request, for a terminal `outcome` of a task
/// whose cancel was requested at `cancel_at`: until `now`, when its end is written. `None` when
/// no cancel was requested or the outcome is not terminal. A request stamped after `now` (the
/// front end's clock ahead of the operator's) counts as zero.
pub fn cancel_to_stop(
    outcome: &Outcome,
    cancel_at: Option<Timestamp>,
    now: Timestamp,
) -> Option<Duration> {
    let cancel_at = cancel_at?;
    if !outcome.status().is_terminal() {
        return None;
    }
    Some(Duration::try_from(now.duration_since(cancel_at)).unwrap_or(Duration::ZERO))
}

/// Records the signals of a task's end (see the module docs); nothing for an outcome that is
/// not terminal.
pub fn record_end(
    metrics: &Metrics,
    outcome: &Outcome,
    cancel_at: Option<Timestamp>,
    now: Timestamp,
) {
    if let Some(reason) = failure_label(outcome) {
        metrics.task_failed(reason);
    }
    if let Some(elapsed) = cancel_to_stop(outcome, cancel_at, now) {
        metrics.cancel_stopped(elapsed);
    }
}

#[cfg(test)]
mod tests {
    use mcp_task_operator_crds::TaskError;
    use serde_json::json;

    use super::*;

    /// Each reason's place in `REASONS`. No wildcard arm: a new [`FailureReason`] does not
    /// compile until it has a place here; give it the next one and append it to `REASONS`.
    fn position(reason: FailureReason) -> usize {
        use FailureReason::*;
        match reason {
            ImagePullFailed => 0,
            OomKilled => 1,
            DeadlineExceeded => 2,
            Evicted => 3,
            PodDeleted => 4,
            JobDeleted => 5,
            ContainerStartFailed => 6,
            ResultTooLarge => 7,
            ToolNotFound => 8,
            ToolInvalid => 9,
            TemplateNotAllowed => 10,
            ArgumentsTooLarge => 11,
            JobConflict => 12,
            JobRefused => 13,
            PodRefused => 14,
            ContainerConfigError => 15,
            Unschedulable => 16,
            InputTooLarge => 17,
            OutputUnavailable => 18,
            StatusTooLarge => 19,
            StatusRefused => 20,
            NodeLost => 21,
            IdleTimeout => 22,
            Preempted => 23,
            VolumeMountFailed => 24,
            StartTimeout => 25,
            NotAdmitted => 26,
            InputTimeout => 27,
            ToolChanged => 28,
            ClaimUnanswered => 29,
        }
    }

    #[test]
    fn every_failure_reason_is_its_own_label() {
        for (i, reason) in REASONS.into_iter().enumerate() {
            assert_eq!(
                position(reason),
                i,
                "{reason:?} listed twice or out of place"
            );
            let outcome = Outcome::failure(reason, Some("detail".to_owned()));
            assert_eq!(failure_label(&outcome), Some(reason.as_str()));
        }
    }

    #[test]
    fn a_tools_own_error_is_tool_error_whatever_it_names() {
        let tool = |data| Outcome::Failed {
            message: "boom".to_owned(),
            error: TaskError {
                code: -32000,
                message: "boom".to_owned(),
                data,
            },
        };
        assert_eq!(failure_label(&tool(None)), Some(TOOL_ERROR));
        let chosen = Some(json!({"reason": "MyOwnReason-123"}));
        assert_eq!(failure_label(&tool(chosen)), Some(TOOL_ERROR));
        // Naming one of the operator's reasons does not make it one.
        let mimic = Some(json!({"reason": "OOMKilled"}));
        assert_eq!(failure_label(&tool(mimic)), Some(TOOL_ERROR));
        let completed = Outcome::Cancelled {
            message: "Cancelled".to_owned(),
        };
        assert_eq!(failure_label(&completed), None);
    }

    #[test]
    fn cancel_to_stop_counts_from_the_request_to_the_terminal_write() {
        let at: Timestamp = "2026-12-01T10:00:00Z".parse().unwrap();
        let now: Timestamp = "2026-12-01T10:00:07.5Z".parse().unwrap();
        let cancelled = Outcome::Cancelled {
            message: "Cancelled".to_owned(),
        };
        let working = Outcome::Working {
            message: "Cancel requested".to_owned(),
        };
        assert_eq!(
            cancel_to_stop(&cancelled, Some(at), now),
            Some(Duration::from_millis(7500))
        );
        // Only once the work has stopped; never without a cancel request.
        assert_eq!(cancel_to_stop(&working, Some(at), now), None);
        assert_eq!(cancel_to_stop(&cancelled, None, now), None);
        // A request stamped by a clock ahead of ours.
        assert_eq!(
            cancel_to_stop(&cancelled, Some(now), at),
            Some(Duration::ZERO)
        );
    }
}
