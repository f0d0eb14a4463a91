//! The input timeout: a task `input_required` whose client does not answer within the tool's
//! `McpTool.spec.inputTimeoutSeconds` (else the operator's `MCP_OPERATOR_INPUT_TIMEOUT_SECONDS`)
//! fails with reason `InputTimeout`, and its Job is stopped, so that an abandoned task does not
//! hold its caller's quota for ever.
//!
//! The count starts when the tool asks: it is kept in the task's status, as the
//! `lastTransitionTime` of the condition [`AWAITING_INPUT`], so a restarted operator (or a new
//! leader) goes on with it. A new question, or an answer to some of them, starts it again.
//!
//! Pure: the decision, the task's current status and the clock in.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{McpTaskStatus, TaskStatus};
use serde_json::Value;

use super::observe::FailureReason;
use super::outcome::{Decision, Outcome, SideEffect};

/// Type of the status condition whose `lastTransitionTime` is when the task's outstanding
/// input requests were asked; present only while the task is `input_required`.
pub const AWAITING_INPUT: &str = "AwaitingInput";

/// When the task began to wait for `requests`: the recorded time, if its current status waits
/// for the very same requests; `None` if they are new.
pub fn waiting_since(
    current: Option<&McpTaskStatus>,
    requests: &BTreeMap<String, Value>,
) -> Option<Timestamp> {
    let current = current?;
    let same = current.status == TaskStatus::InputRequired
        && current.input_requests.as_ref() == Some(requests);
    if !same {
        return None;
    }
    current
        .conditions
        .iter()
        .find(|c| c.type_ == AWAITING_INPUT)
        .map(|c| c.last_transition_time.0)
}

/// `decision` as the input timeout `limit` makes it, as of `now`: a failure (and the Job
/// stopped) once its input requests have waited that long, else unchanged, with how long until
/// they would (to look again then).
pub fn check(
    decision: Decision,
    current: Option<&McpTaskStatus>,
    limit: Duration,
    now: Timestamp,
) -> (Decision, Option<Duration>) {
    let Outcome::InputRequired { requests, .. } = &decision.outcome else {
        return (decision, None);
    };
    let since = waiting_since(current, requests).unwrap_or(now);
    let waited = Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO);
    if let Some(left) = limit.checked_sub(waited).filter(|l| !l.is_zero()) {
        return (decision, Some(left));
    }
    let detail = format!(
        "no answer to {} for {}s",
        keys_of(requests),
        limit.as_secs()
    );
    let failed = Outcome::failure(FailureReason::InputTimeout, Some(detail));
    (Decision::with(failed, SideEffect::DeleteJob), None)
}

/// The keys of `requests` for a message: the first few, and how many more.
fn keys_of(requests: &BTreeMap<String, Value>) -> String {
    const SHOWN: usize = 5;
    let mut keys: Vec<&str> = requests.keys().take(SHOWN).map(String::as_str).collect();
    let more = requests.len().saturating_sub(SHOWN);
    let more = (more > 0).then(|| format!("{more} more"));
    keys.extend(more.as_deref());
    crate::contract::message::shorten(&keys.join(", "), 256)
}

/// Keeps the [`AWAITING_INPUT`] condition of `conditions` in step with `outcome`: set (since
/// `now` for new requests, else since when they were asked) while it is `input_required`,
/// removed otherwise.
pub fn record(
    conditions: &mut Vec<Condition>,
    current: Option<&McpTaskStatus>,
    outcome: &Outcome,
    now: Timestamp,
) {
    let existing = conditions.iter().position(|c| c.type_ == AWAITING_INPUT);
    let Outcome::InputRequired { requests, .. } = outcome else {
        if let Some(i) = existing {
            conditions.remove(i);
        }
        return;
    };
    let since = waiting_since(current, requests).unwrap_or(now);
    let condition = Condition {
        type_: AWAITING_INPUT.to_owned(),
        status: "True".to_owned(),
        reason: "InputRequested".to_owned(),
        message: format!(
            "{} input request(s) wait for the client's answer",
            requests.len()
        ),
        last_transition_time: Time(since),
        observed_generation: None,
    };
    match existing {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests;
