//! Mapping what a task's workload did to the task's MCP status, exactly as the contract says.
//!
//! Pure: an [`Observation`] (workload, parsed stdout, answers, cancel request, clock) in, a
//! [`Decision`] out: the status to report, plus the one side effect the mapping may ask for
//! (deleting the Job of a cancelled task) and when to look again.

use std::collections::BTreeMap;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use mcp_task_operator_crds::{
    CANCEL_REQUESTED_ANNOTATION, McpTask, RawJson, TaskError, TaskStatus,
};
use serde_json::{Map, Value, json};

use super::observe::{FailureReason, Workload};
use crate::contract::{MAX_RESULT_BYTES, Progress, Terminal};

/// JSON-RPC "internal error": the code of every failure the operator reports itself.
pub const INTERNAL_ERROR: i64 = -32603;

/// Everything the outcome mapping looks at.
#[derive(Debug)]
pub struct Observation<'a> {
    /// The Job and pod, as observed.
    pub workload: &'a Workload,
    /// What the tool printed so far (all of it once the container has exited).
    pub progress: &'a Progress,
    /// The client's answers (`spec.inputResponses`), by key.
    pub answers: Option<&'a BTreeMap<String, RawJson>>,
    /// When cancellation was requested, if it was.
    pub cancel_requested_at: Option<Timestamp>,
    /// How long a running tool may take to stop after a cancel request.
    pub cancel_grace: SignedDuration,
    /// When the tool container finished (its terminated state's `finishedAt`), if it has.
    pub finished_at: Option<Timestamp>,
    /// Whether a Job was already recorded for the task (`status.jobName`): a missing Job was
    /// then deleted, and must not be created again.
    pub job_recorded: bool,
    /// The current time.
    pub now: Timestamp,
}

/// The MCP-visible state a task should have.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The task is being processed.
    Working {
        /// Progress text.
        message: String,
    },
    /// The task waits for answers.
    InputRequired {
        /// What it waits for.
        message: String,
        /// The outstanding input requests, by key.
        requests: BTreeMap<String, Value>,
    },
    /// The task finished with a `CallToolResult` (possibly `isError: true`).
    Completed {
        /// Summary for `statusMessage`, if any.
        message: Option<String>,
        /// The result.
        result: Map<String, Value>,
    },
    /// The task ended with a JSON-RPC error.
    Failed {
        /// Diagnosis for `statusMessage`.
        message: String,
        /// The error.
        error: TaskError,
    },
    /// The task was cancelled.
    Cancelled {
        /// Why, for `statusMessage`.
        message: String,
    },
}

impl Outcome {
    /// The MCP status of this outcome.
    pub fn status(&self) -> TaskStatus {
        match self {
            Self::Working { .. } => TaskStatus::Working,
            Self::InputRequired { .. } => TaskStatus::InputRequired,
            Self::Completed { .. } => TaskStatus::Completed,
            Self::Failed { .. } => TaskStatus::Failed,
            Self::Cancelled { .. } => TaskStatus::Cancelled,
        }
    }

    /// A failure below the tool, as a JSON-RPC error whose `data.reason` names the cause.
    pub fn failure(reason: FailureReason, detail: Option<String>) -> Self {
        let message = match &detail {
            Some(d) => format!("{} ({d})", reason.message()),
            None => reason.message().to_owned(),
        };
        let mut data = json!({"reason": reason.as_str()});
        if let Some(d) = detail {
            data["detail"] = Value::from(d);
        }
        Self::Failed {
            message,
            error: TaskError {
                code: INTERNAL_ERROR,
                message: reason.message().to_owned(),
                data: Some(data),
            },
        }
    }
}

/// A side effect the mapping asks the reconciler to carry out before writing the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideEffect {
    /// Delete the task's Job (and so its pod): the task was cancelled and must stop running.
    DeleteJob,
}

/// The mapping's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The status to report.
    pub outcome: Outcome,
    /// A side effect to carry out first, if any.
    pub side_effect: Option<SideEffect>,
    /// When the decision may change without any watch event (a cancel grace period ending).
    pub recheck_after: Option<SignedDuration>,
    /// The outcome's message is the operator's own word on a tool that has not spoken yet
    /// (waiting for the Job, its pod or the container; "Running" before the tool's first
    /// status line): a start note, written only once it has stood a while
    /// ([`START_NOTE_SETTLE`](super::status::START_NOTE_SETTLE)). Set by the reconciler, which
    /// knows what was observed; [`decide`] leaves it false.
    pub start_note: bool,
}

impl Decision {
    /// Just `outcome`: no side effect, nothing to recheck.
    pub fn just(outcome: Outcome) -> Self {
        Self {
            outcome,
            side_effect: None,
            recheck_after: None,
            start_note: false,
        }
    }

    /// `outcome`, after `side_effect`.
    pub fn with(outcome: Outcome, side_effect: SideEffect) -> Self {
        Self {
            outcome,
            side_effect: Some(side_effect),
            recheck_after: None,
            start_note: false,
        }
    }
}

/// When cancellation of `task` was requested, from its cancel annotation.
///
/// NB: a value that is not an RFC 3339 time (someone typed it by hand) counts as requested at
/// the Unix epoch, so the grace period is over and the tool is stopped at once.
pub fn cancel_requested_at(task: &McpTask) -> Option<Timestamp> {
    let value = task.annotations().get(CANCEL_REQUESTED_ANNOTATION)?;
    Some(value.trim().parse().unwrap_or(Timestamp::UNIX_EPOCH))
}

/// Decides a non-terminal task's status from what was observed.
pub fn decide(obs: &Observation<'_>) -> Decision {
    // A result or error message settles the task whatever happens to the pod afterwards, and
    // even after a cancel request: cancellation is cooperative and the work finished first.
    if let Some(terminal) = obs.progress.terminal() {
        return Decision::just(terminal_outcome(terminal, obs.progress));
    }
    if let Some(requested_at) = obs.cancel_requested_at {
        // A tool that exited 0 before the cancel was requested had finished its work: the
        // cancel came too late, and the output is its result. NB: `finishedAt` has whole
        // seconds (rounded down), so the exit lies somewhere in [finished, finished + 1 s):
        // only when that whole second is before the request is the exit surely first. Within
        // it, the tool may well have seen the cancel (the kubelet refreshes the cancel file
        // in well under a second here) and stopped on it, so the cancel wins.
        if let (Workload::Exited { exit_code: 0 }, Some(finished)) = (obs.workload, obs.finished_at)
            && finished
                .checked_add(SignedDuration::from_secs(1))
                .is_ok_and(|second_end| second_end <= requested_at)
        {
            return Decision::just(exited(0, obs.progress));
        }
        return decide_cancel(obs, requested_at);
    }
    let outcome = match obs.workload {
        Workload::NoJob if obs.job_recorded => Outcome::failure(FailureReason::JobDeleted, None),
        Workload::NoJob => Outcome::Working {
            message: "Creating the Job".to_owned(),
        },
        Workload::Starting { detail } => Outcome::Working {
            message: detail.clone(),
        },
        Workload::Running => running(obs),
        Workload::Exited { exit_code } => exited(*exit_code, obs.progress),
        // A pod stuck pulling its image (or scheduling, or being refused) would retry until
        // the deadline: stop it.
        Workload::Failed { reason, detail } if reason.stops_job() => {
            let failed = Outcome::failure(*reason, detail.clone());
            return Decision::with(failed, SideEffect::DeleteJob);
        }
        Workload::Failed { reason, detail } => Outcome::failure(*reason, detail.clone()),
    };
    Decision::just(outcome)
}

fn decide_cancel(obs: &Observation<'_>, requested_at: Timestamp) -> Decision {
    let cancelled = |message: &str| Outcome::Cancelled {
        message: message.to_owned(),
    };
    match obs.workload {
        Workload::NoJob => Decision::just(cancelled("Cancelled before the tool started")),
        Workload::Starting { .. } => Decision::with(
            cancelled("Cancelled before the tool started"),
            SideEffect::DeleteJob,
        ),
        Workload::Failed { .. } => Decision::with(cancelled("Cancelled"), SideEffect::DeleteJob),
        // The tool stopped by itself: its own last words say best how far it got.
        Workload::Exited { .. } => Decision::just(cancelled(
            obs.progress
                .status_message()
                .unwrap_or("Cancelled; the tool stopped"),
        )),
        Workload::Running => {
            // Only calendar units can make this fail; a SignedDuration never does.
            let deadline = requested_at
                .saturating_add(obs.cancel_grace)
                .unwrap_or(Timestamp::MAX);
            let remaining = deadline.duration_since(obs.now);
            if remaining <= SignedDuration::ZERO {
                return Decision::with(
                    cancelled("Cancelled; the tool did not stop within its grace period"),
                    SideEffect::DeleteJob,
                );
            }
            Decision {
                outcome: Outcome::Working {
                    message: format!(
                        "Cancel requested; waiting up to {}s for the tool to stop",
                        obs.cancel_grace.as_secs()
                    ),
                },
                side_effect: None,
                recheck_after: Some(remaining),
                start_note: false,
            }
        }
    }
}

fn running(obs: &Observation<'_>) -> Outcome {
    let outstanding = obs
        .progress
        .outstanding_input(|key| obs.answers.is_some_and(|a| a.contains_key(key)));
    let message = obs.progress.status_message();
    if outstanding.is_empty() {
        Outcome::Working {
            message: message.unwrap_or("Running").to_owned(),
        }
    } else {
        Outcome::InputRequired {
            message: message.unwrap_or("Waiting for input").to_owned(),
            requests: outstanding,
        }
    }
}

fn terminal_outcome(terminal: &Terminal, progress: &Progress) -> Outcome {
    match terminal {
        Terminal::Result(result) => Outcome::Completed {
            message: progress.status_message().map(str::to_owned),
            result: result.clone(),
        },
        Terminal::Error(error) => Outcome::Failed {
            message: format!("The tool reported an error: {}", error.message),
            error: error.clone(),
        },
        Terminal::ResultTooLarge { bytes } => Outcome::failure(
            FailureReason::ResultTooLarge,
            Some(format!(
                "the result is {bytes} bytes; at most {MAX_RESULT_BYTES} bytes can be stored"
            )),
        ),
    }
}

fn exited(exit_code: i32, progress: &Progress) -> Outcome {
    let output = progress.output();
    let (text, is_error, message) = if exit_code == 0 {
        (
            output.text(),
            false,
            progress.status_message().map(str::to_owned),
        )
    } else {
        let tail = output.tail_text();
        let summary = format!("The tool exited with code {exit_code}");
        let text = if tail.is_empty() {
            summary.clone()
        } else {
            tail
        };
        (text, true, Some(summary))
    };
    let mut result = Map::new();
    result.insert("resultType".into(), Value::from("complete"));
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    result.insert("isError".into(), Value::from(is_error));
    Outcome::Completed { message, result }
}

#[cfg(test)]
mod tests;
