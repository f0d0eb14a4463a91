//! The task's `Succeeded` condition, written with every status so that
//! `kubectl wait --for=condition=Succeeded mcptask/<id>` works: `Unknown` while the task runs,
//! `True` when it completed, `False` when it failed, was cancelled or its tool reported an error
//! (the convention Tekton's TaskRuns follow, on the Kubernetes API conventions' condition shape:
//! https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::McpTaskStatus;
use serde_json::Value;

use super::outcome::Outcome;

/// The condition type.
pub const SUCCEEDED: &str = "Succeeded";
/// Longest condition message kept (the API allows 32768 bytes).
const MAX_MESSAGE_CHARS: usize = 1024;

/// `current`'s conditions with `Succeeded` set for `outcome` at generation `generation`; its
/// `lastTransitionTime` moves only when its status does.
pub fn with_succeeded(
    current: Option<&McpTaskStatus>,
    outcome: &Outcome,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let mut conditions: Vec<Condition> = current.map(|c| c.conditions.clone()).unwrap_or_default();
    let (status, reason, message) = succeeded(outcome);
    let message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    let previous = conditions.iter().position(|c| c.type_ == SUCCEEDED);
    let last_transition_time = match previous.map(|i| &conditions[i]) {
        Some(old) if old.status == status => old.last_transition_time.clone(),
        _ => Time(now),
    };
    let condition = Condition {
        type_: SUCCEEDED.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        last_transition_time,
        observed_generation: generation,
    };
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    conditions
}

/// Status, reason (CamelCase, as the conventions ask) and message of `Succeeded`.
fn succeeded(outcome: &Outcome) -> (&'static str, String, String) {
    match outcome {
        Outcome::Working { message } => ("Unknown", "Working".into(), message.clone()),
        Outcome::InputRequired { message, .. } => {
            ("Unknown", "InputRequired".into(), message.clone())
        }
        Outcome::Completed { result, message }
            if result.get("isError") == Some(&Value::Bool(true)) =>
        {
            (
                "False",
                "ToolError".into(),
                message
                    .clone()
                    .unwrap_or_else(|| "The tool reported an error (isError)".into()),
            )
        }
        Outcome::Completed { message, .. } => (
            "True",
            "Completed".into(),
            message
                .clone()
                .unwrap_or_else(|| "The tool returned its result".into()),
        ),
        Outcome::Failed { message, error } => {
            // The operator's own failures name their reason (`DeadlineExceeded`, ...); a
            // tool's protocol error is `ToolFailed`.
            let reason = error
                .data
                .as_ref()
                .and_then(|d| d["reason"].as_str())
                .filter(|r| is_camel_case(r))
                .unwrap_or("ToolFailed");
            ("False", reason.to_owned(), message.clone())
        }
        Outcome::Cancelled { message } => ("False", "Cancelled".into(), message.clone()),
    }
}

/// Whether `reason` fits a condition reason: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, at
/// most 1024 characters, starting with a capital as the conventions ask.
fn is_camel_case(reason: &str) -> bool {
    reason.len() <= 1024
        && reason.starts_with(|c: char| c.is_ascii_uppercase())
        && reason
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_,:".contains(c))
        && !reason.ends_with([',', ':'])
}

#[cfg(test)]
mod tests {
    use mcp_task_operator_crds::TaskError;
    use serde_json::json;

    use super::*;
    use crate::controller::mcp_task::observe::FailureReason;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn working(message: &str) -> Outcome {
        Outcome::Working {
            message: message.into(),
        }
    }

    fn status_with(conditions: Vec<Condition>) -> McpTaskStatus {
        McpTaskStatus {
            conditions,
            ..McpTaskStatus::default()
        }
    }

    #[test]
    fn running_is_unknown_and_keeps_its_transition_time_while_it_runs() {
        let first = with_succeeded(
            None,
            &working("1 of 3"),
            Some(1),
            at("2026-08-01T12:00:00Z"),
        );
        assert_eq!(first.len(), 1);
        assert_eq!(
            (first[0].status.as_str(), first[0].reason.as_str()),
            ("Unknown", "Working")
        );
        assert_eq!(first[0].observed_generation, Some(1));
        let later = with_succeeded(
            Some(&status_with(first.clone())),
            &working("2 of 3"),
            Some(2),
            at("2026-08-01T12:00:05Z"),
        );
        assert_eq!(later[0].message, "2 of 3");
        assert_eq!(later[0].observed_generation, Some(2));
        assert_eq!(later[0].last_transition_time, first[0].last_transition_time);
    }

    #[test]
    fn each_end_sets_true_or_false_with_its_reason_at_the_transition() {
        let running = with_succeeded(None, &working("x"), None, at("2026-08-01T12:00:00Z"));
        let end = |outcome: Outcome| {
            let c = with_succeeded(
                Some(&status_with(running.clone())),
                &outcome,
                None,
                at("2026-08-01T12:01:00Z"),
            );
            assert_eq!(c.len(), 1, "one Succeeded condition");
            assert_eq!(c[0].last_transition_time, Time(at("2026-08-01T12:01:00Z")));
            (c[0].status.clone(), c[0].reason.clone())
        };
        let result = |is_error: bool| json!({"content": [], "isError": is_error});
        let completed = |is_error| Outcome::Completed {
            message: None,
            result: result(is_error).as_object().unwrap().clone(),
        };
        assert_eq!(end(completed(false)), ("True".into(), "Completed".into()));
        assert_eq!(end(completed(true)), ("False".into(), "ToolError".into()));
        let deadline = Outcome::failure(FailureReason::DeadlineExceeded, None);
        assert_eq!(end(deadline), ("False".into(), "DeadlineExceeded".into()));
        let tool_error = Outcome::Failed {
            message: "bad".into(),
            error: TaskError {
                code: -32001,
                message: "bad".into(),
                data: Some(json!({"reason": "not a reason!"})),
            },
        };
        assert_eq!(end(tool_error), ("False".into(), "ToolFailed".into()));
        let cancelled = Outcome::Cancelled {
            message: "stopped".into(),
        };
        assert_eq!(end(cancelled), ("False".into(), "Cancelled".into()));
    }

    #[test]
    fn other_conditions_are_kept() {
        let other = Condition {
            type_: "Custom".into(),
            status: "True".into(),
            reason: "Mine".into(),
            message: String::new(),
            last_transition_time: Time(at("2026-08-01T11:00:00Z")),
            observed_generation: None,
        };
        let got = with_succeeded(
            Some(&status_with(vec![other.clone()])),
            &working("x"),
            None,
            at("2026-08-01T12:00:00Z"),
        );
        assert_eq!(got[0], other);
        assert_eq!(got[1].type_, SUCCEEDED);
    }
}
