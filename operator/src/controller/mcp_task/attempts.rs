//! What a Job's own policies add to the observation of its pod: a Job suspended for an
//! external queue (Kueue) is waiting for admission, not failing to start; a Job that retries
//! disruptions (`McpTool.spec.retryOnDisruption`) starts a new pod after an evicted (or
//! deleted) one, so the eviction is a retry, not the task's end, until the Job itself fails. NB:
//! an evicted pod may be seen deleted before its `DisruptionTarget` condition is, so a deleted
//! pod counts too (the Job counts it against its backoff limit as well).
//!
//! A queue may also take a running Job's admission back (Kueue preempts it for a workload of
//! higher priority, or evicts it): it suspends the Job, whose pod is stopped, and resumes it
//! later, when the pod starts the tool again from the beginning. That is a retry, so only a
//! retrying Job waits for it; for any other the task fails `Preempted` (and its Job is
//! deleted, so the queue never runs the call twice). It is recognised by a suspended Job that
//! has a pod or whose tool ran before (the pod the follower's checkpoint names), and by a second
//! pod of a Job that does not retry (the suspension came and went unseen).
//!
//! Pure: the Job, the observed [`Workload`] and the pods in, the workload as the task should
//! see it out.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::observe::{FailureReason, Workload};
use super::outcome::{Decision, Outcome};

/// The Job label naming the Kueue LocalQueue that admits it.
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// The pods behind an observation: the one observed and the one the tool ran in before.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pods<'a> {
    /// The UID of the pod observed (the Job's newest), if any.
    pub current: Option<&'a str>,
    /// The UID of the pod whose output the task followed, as recorded in its status, if any.
    pub followed: Option<&'a str>,
}

/// `workload` (from [`observe_workload`](super::observe::observe_workload)) as the Job's
/// suspension and retry policy make it.
pub fn adjust(workload: Workload, job: Option<&Job>, pods: Pods<'_>) -> Workload {
    let Some(job) = job else {
        return workload;
    };
    let suspended = suspended(job);
    // The pod is being stopped, or the tool ran before. NB: a pending or running pod beside a
    // suspended Job alone proves nothing: the Job cache may lag the resume that made the pod.
    let stopping = matches!(
        workload,
        Workload::Failed {
            reason: FailureReason::Evicted | FailureReason::NodeLost | FailureReason::PodDeleted,
            ..
        }
    );
    let ran_before = pods.followed.is_some()
        && matches!(workload, Workload::Starting { .. } | Workload::Running);
    let rerun = matches!((pods.current, pods.followed), (Some(now), Some(before)) if now != before);
    match workload {
        _ if suspended && (stopping || ran_before) => match retries(job) && !job_failed(job) {
            true => Workload::Starting {
                detail: match queue_name(job) {
                    Some(q) => format!("Preempted by queue {q}; waiting for admission again"),
                    None => "Preempted; waiting for the suspended Job to be resumed".to_owned(),
                },
            },
            false => preempted(job, "while the tool ran"),
        },
        Workload::Starting { .. } if suspended => Workload::Starting {
            detail: admission_message(job),
        },
        Workload::Starting { .. } | Workload::Running if rerun && !retries(job) => {
            preempted(job, "and resumed it: the tool would run a second time")
        }
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

/// The failure of a task whose Job its queue suspended `when`.
fn preempted(job: &Job, when: &str) -> Workload {
    let who = queue_name(job).map_or_else(|| "Its owner".to_owned(), |q| format!("Queue {q}"));
    Workload::Failed {
        reason: FailureReason::Preempted,
        detail: Some(format!(
            "{who} suspended the Job {when}; a tool runs again after a preemption only with \
             McpTool spec.retryOnDisruption"
        )),
    }
}

/// The Kueue LocalQueue that admits `job`, if it names one.
fn queue_name(job: &Job) -> Option<&str> {
    job.metadata
        .labels
        .as_ref()?
        .get(QUEUE_NAME_LABEL)
        .map(String::as_str)
}

/// The status message of a task whose Job waits for admission.
pub fn admission_message(job: &Job) -> String {
    match queue_name(job) {
        Some(queue) => format!("Waiting for admission by queue {queue}"),
        None => "Waiting for the suspended Job to be resumed".to_owned(),
    }
}

/// `workload` (as [`adjust`] made it) with the admission timeout `limit` applied as of `now`:
/// a Job suspended for longer than `limit` that waits for its queue fails the task
/// `NotAdmitted` (its Job is then deleted, and with it the queue's Workload); else the workload
/// is unchanged, with how long until the limit would pass. The clock starts when the Job was
/// suspended (its `Suspended` condition, which the Job controller sets when it is created
/// suspended and again when a queue suspends it), else at its creation: times the API server
/// keeps, so an operator restart does not restart it.
pub fn admission_deadline(
    workload: Workload,
    job: Option<&Job>,
    limit: SignedDuration,
    now: Timestamp,
) -> (Workload, Option<SignedDuration>) {
    let Some(job) = job.filter(|j| suspended(j)) else {
        return (workload, None);
    };
    let waiting = matches!(workload, Workload::Starting { .. });
    let Some(at) = suspended_since(job).and_then(|t| t.checked_add(limit).ok()) else {
        return (workload, None);
    };
    let left = at.duration_since(now);
    if !waiting || left.is_positive() {
        return (workload, waiting.then_some(left));
    }
    let secs = limit.as_secs();
    let detail = match queue_name(job) {
        Some(q) => format!(
            "the Job waited for admission by queue {q} for more than {secs}s: the LocalQueue \
             may not exist, or its ClusterQueue never had the quota"
        ),
        None => format!("the Job stayed suspended for more than {secs}s"),
    };
    let failed = Workload::Failed {
        reason: FailureReason::NotAdmitted,
        detail: Some(detail),
    };
    (failed, None)
}

/// Whether `job` is suspended (`spec.suspend`).
fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// Since when `job` has been suspended: its `Suspended` condition's time, else its creation.
fn suspended_since(job: &Job) -> Option<Timestamp> {
    let condition = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|all| {
            all.iter()
                .find(|c| c.type_ == "Suspended" && c.status == "True")
        })
        .and_then(|c| c.last_transition_time.as_ref());
    condition
        .or(job.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
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
#[cfg(test)]
mod tests_admission;
