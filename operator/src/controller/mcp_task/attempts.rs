//! What a Job's own policies add to the observation of its pod: a Job suspended for an
//! external queue (Kueue) is waiting for admission, not failing to start; a Job that retries
//! disruptions (`McpTool.spec.retryOnDisruption`) starts a new pod after an evicted (or
//! deleted) one, so the eviction is a retry, not the task's end, until the Job itself fails. NB:
//! an evicted pod may be seen deleted before its `DisruptionTarget` condition is, so a deleted
//! pod counts too (the Job counts it against its backoff limit as well).
//!
//! Pure: the Job and the observed [`Workload`] in, the workload as the task should see it out.

use k8s_openapi::api::batch::v1::Job;

use super::observe::{FailureReason, Workload};
use super::outcome::{Decision, Outcome};

/// The Job label naming the Kueue LocalQueue that admits it.
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// `workload` (from [`observe_workload`](super::observe::observe_workload)) as the Job's
/// suspension and retry policy make it.
pub fn adjust(workload: Workload, job: Option<&Job>) -> Workload {
    let Some(job) = job else {
        return workload;
    };
    let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
    match workload {
        Workload::Starting { .. } if suspended => Workload::Starting {
            detail: admission_message(job),
        },
        Workload::Failed {
            reason: FailureReason::Evicted | FailureReason::NodeLost | FailureReason::PodDeleted,
            detail,
        } if retries(job) && !job_failed(job) => {
            let why = detail.map(|d| format!(": {d}")).unwrap_or_default();
            Workload::Starting {
                detail: format!("Retrying after a disruption{why}"),
            }
        }
        other => other,
    }
}

/// The status message of a task whose Job waits for admission.
pub fn admission_message(job: &Job) -> String {
    match job
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(QUEUE_NAME_LABEL))
    {
        Some(queue) => format!("Waiting for admission by queue {queue}"),
        None => "Waiting for the suspended Job to be resumed".to_owned(),
    }
}

/// Adds the attempt to a running task's message once the Job runs a second pod.
pub fn annotate(decision: &mut Decision, job: Option<&Job>) {
    let Some(job) = job.filter(|j| retries(j)) else {
        return;
    };
    let (attempt, of) = attempt(job);
    if attempt < 2 {
        return;
    }
    let note = format!(" (attempt {attempt} of {of})");
    match &mut decision.outcome {
        Outcome::Working { message } | Outcome::InputRequired { message, .. }
            if !message.contains("(attempt ") =>
        {
            message.push_str(&note);
        }
        Outcome::Completed {
            message: Some(message),
            ..
        } => message.push_str(&note),
        Outcome::Completed { message, .. } => *message = Some(format!("Completed{note}")),
        _ => {}
    }
}

/// Whether the Job retries pods (a backoff limit above zero; our Jobs have one only when the
/// tool opts in).
fn retries(job: &Job) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.backoff_limit)
        .is_some_and(|n| n > 0)
}

/// The attempt the Job is on (its pods: failed, succeeded and running; at least one) and how
/// many it may make.
fn attempt(job: &Job) -> (i32, i32) {
    let count = |n: Option<i32>| n.unwrap_or(0).max(0);
    let pods = job.status.as_ref().map_or(0, |s| {
        count(s.failed)
            .saturating_add(count(s.succeeded))
            .saturating_add(count(s.active))
    });
    let limit = job.spec.as_ref().and_then(|s| s.backoff_limit).unwrap_or(0);
    (pods.max(1), limit.saturating_add(1))
}

/// Whether the Job has failed (or is failing) as a whole.
fn job_failed(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|all| {
            all.iter().any(|c| {
                matches!(c.type_.as_str(), "Failed" | "FailureTarget") && c.status == "True"
            })
        })
}

#[cfg(test)]
mod tests;
