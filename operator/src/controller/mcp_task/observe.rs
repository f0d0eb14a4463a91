//! Reading a task's Job and pod into one [`Workload`] observation.
//!
//! Pure: the Kubernetes objects in, a small enum out. This is where pod-level failures (image
//! pull, OOM kill, deadline, eviction, deleted pod) are told apart from an ordinary exit of
//! the tool container, so that the outcome mapping can stay a flat table.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use mcp_task_operator_crds::mcp_tool::{TOOL_CONTAINER_NAME, tool_container_index};

mod deadline;
mod reason;

pub use deadline::{
    REFUSAL_POLL, StartLimits, mount_check_due, mount_failed, pods_refused, refusal_possible,
    start_deadline, start_wake,
};
pub use reason::FailureReason;

/// What the cluster shows about the workload of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// There is no Job.
    NoJob,
    /// The Job exists but the tool container has not started; `detail` says what it waits for.
    Starting {
        /// Why it has not started yet, for the status message.
        detail: String,
    },
    /// The tool container is running.
    Running,
    /// The tool container exited by itself.
    Exited {
        /// Its exit code.
        exit_code: i32,
    },
    /// The workload failed below the tool.
    Failed {
        /// Which failure.
        reason: FailureReason,
        /// What Kubernetes said about it, if anything.
        detail: Option<String>,
    },
}

/// Pull failures no retry can cure: the task fails at once.
const HOPELESS_PULL_REASONS: [&str; 2] = ["InvalidImageName", "ErrImageNeverPull"];
/// A start of the tool container that failed in the runtime.
const START_FAILURE_REASONS: [&str; 2] = ["StartError", "ContainerCannotRun"];
/// `DisruptionTarget` reasons that mean the pod's node is lost: the taint manager evicts the
/// pods of a node tainted unreachable or not-ready (NoExecute) once their toleration runs
/// out, and the pod garbage collector deletes the pods of a node that is gone (or out of
/// service).
const NODE_LOST_DISRUPTIONS: [&str; 2] = ["DeletionByTaintManager", "DeletionByPodGC"];

/// Observes a task's workload from its Job (if any) and the pod the Job created (if any).
pub fn observe_workload(job: Option<&Job>, pod: Option<&Pod>) -> Workload {
    let Some(job) = job else {
        return Workload::NoJob;
    };
    // Since Kubernetes 1.31 a failing Job first gets FailureTarget, then Failed once its pods
    // have terminated; both name the cause, and a killed container is no tool exit.
    let failing = |reason| {
        job_condition(job, "FailureTarget", reason).or_else(|| job_condition(job, "Failed", reason))
    };
    if let Some(detail) = failing("DeadlineExceeded") {
        return failed(FailureReason::DeadlineExceeded, detail);
    }
    match pod {
        Some(pod) => observe_pod(pod),
        None if failing("").is_some() || job_counted_failure(job) => {
            failed(FailureReason::PodDeleted, None)
        }
        // A finished pod removed before its output was read: the outcome is lost.
        None if job_condition(job, "Complete", "").is_some() => failed(
            FailureReason::PodDeleted,
            Some("the pod was removed before its output was read".to_owned()),
        ),
        None => Workload::Starting {
            detail: "Waiting for the Job to create a pod".to_owned(),
        },
    }
}

/// The pod to follow among those of a task's Job: the most recently created one.
pub fn select_pod(pods: &[Pod]) -> Option<&Pod> {
    pods.iter().max_by(|a, b| {
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        created(a).cmp(&created(b))
    })
}

/// Whether `owner_uid` is the controller (in `ownerReferences`) of the object with `meta`.
/// Labels and names prove nothing: anyone who may create pods or Jobs in the namespace can
/// copy them, so only a controller reference ties a Job to its task and a pod to its Job.
pub fn controlled_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == owner_uid)
}

/// Whether the task with `task_uid` runs in `job`: it controls it (a Job made for it, or a warm
/// pod's Job it claimed), or `job` is a caller's session that serves it now
/// (`warm_pool::session`).
pub fn runs_in(job: &Job, task_uid: &str) -> bool {
    controlled_by(&job.metadata, task_uid)
        || crate::controller::warm_pool::session::serving_uid(job) == Some(task_uid)
}

/// What is wrong with `job` if the task with `task_uid` does not control it: `None` for the
/// task's own Job, else a detail naming its controller, for the task's failure.
pub fn foreign_job(job: &Job, task_uid: &str) -> Option<String> {
    if runs_in(job, task_uid) {
        return None;
    }
    let owner = job
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map_or_else(
            || "nothing".to_owned(),
            |r| format!("{} {}", r.kind, r.name),
        );
    let name = job.metadata.name.as_deref().unwrap_or_default();
    Some(format!("Job {name} exists, controlled by {owner}"))
}

/// Whether `job` belongs to an earlier task of the same name: its controller is an McpTask
/// named `task_name` with another UID than `task_uid`. That task is gone (names are unique), so
/// garbage collection deletes the Job soon: a task re-created under the name waits for it
/// (never adopts it, nor fails at once).
pub fn earlier_task_job(job: &Job, task_name: &str, task_uid: &str) -> bool {
    job.metadata.owner_references.iter().flatten().any(|r| {
        r.controller == Some(true)
            && r.kind == "McpTask"
            && r.name == task_name
            && r.uid != task_uid
    })
}

/// Name of the tool container in a pod: the only container, or the one named `tool`.
pub fn tool_container_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.get(tool_container_index(&s.containers)?))
        .map_or(TOOL_CONTAINER_NAME, |c| c.name.as_str())
}

/// Whether the pod's tool container has started (it runs or ran), so it has logs to follow.
pub fn tool_container_started(pod: &Pod) -> bool {
    let name = tool_container_name(pod);
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == name))
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
}

/// When the tool container finished, by its terminated state, if it has.
pub fn tool_container_finished(pod: &Pod) -> Option<std::time::SystemTime> {
    let name = tool_container_name(pod);
    let status = pod.status.as_ref()?.container_statuses.as_ref()?;
    let terminated = status.iter().find(|c| c.name == name)?.state.as_ref()?;
    let finished = terminated.terminated.as_ref()?.finished_at.as_ref()?;
    Some(std::time::SystemTime::from(finished.0))
}

fn observe_pod(pod: &Pod) -> Workload {
    let status = pod.status.clone().unwrap_or_default();
    let pod_reason = status.reason.as_deref();
    if status.phase.as_deref() == Some("Failed") {
        match pod_reason {
            Some("Evicted") => return failed(FailureReason::Evicted, status.message),
            Some("DeadlineExceeded") => {
                return failed(FailureReason::DeadlineExceeded, status.message);
            }
            _ => {}
        }
    }
    let disruption = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
        .map(|c| {
            let reason = match c.reason.as_deref() {
                Some(r) if NODE_LOST_DISRUPTIONS.contains(&r) => FailureReason::NodeLost,
                _ => FailureReason::Evicted,
            };
            (reason, describe(c.reason.as_deref(), c.message.as_deref()))
        });
    let deleting = pod.metadata.deletion_timestamp.is_some();
    let gone = |never_ran: bool| match (&disruption, deleting) {
        (Some((reason, detail)), _) => Some(failed(*reason, Some(detail.clone()))),
        (None, true) => Some(failed(FailureReason::PodDeleted, None)),
        // A pod that failed without ever running the tool was stopped from outside.
        (None, false) if never_ran && status.phase.as_deref() == Some("Failed") => {
            Some(failed(FailureReason::PodDeleted, status.message.clone()))
        }
        (None, false) => None,
    };

    let name = tool_container_name(pod);
    let container = status
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == name);
    let state = container.and_then(|c: &ContainerStatus| c.state.as_ref());
    if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
        let reason = t.reason.as_deref().unwrap_or_default();
        if reason == "OOMKilled" {
            return failed(
                FailureReason::OomKilled,
                Some(format!("exit code {}", t.exit_code)),
            );
        }
        if START_FAILURE_REASONS.contains(&reason) {
            return failed(FailureReason::ContainerStartFailed, t.message.clone());
        }
        return gone(false).unwrap_or(Workload::Exited {
            exit_code: t.exit_code,
        });
    }
    if state.is_some_and(|s| s.running.is_some()) {
        // A pod evicted or deleted while its container runs is gone: its node may be lost,
        // and then no kubelet will ever report the container stopped.
        return gone(false).unwrap_or(Workload::Running);
    }
    let waiting = state.and_then(|s| s.waiting.as_ref());
    if let Some(w) = waiting
        && w.reason
            .as_deref()
            .is_some_and(|r| HOPELESS_PULL_REASONS.contains(&r))
    {
        let detail = describe(w.reason.as_deref(), w.message.as_deref());
        return failed(FailureReason::ImagePullFailed, Some(detail));
    }
    if let Some(workload) = gone(true) {
        return workload;
    }
    let detail = match waiting {
        Some(w) => describe(w.reason.as_deref(), w.message.as_deref()),
        None => status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
            .map(|c| describe(c.reason.as_deref(), c.message.as_deref()))
            .unwrap_or_else(|| "Pod pending".to_owned()),
    };
    Workload::Starting {
        detail: format!("Waiting for the tool container to start: {detail}"),
    }
}

/// The message of a Job condition of `type_` with status True and, unless empty, `reason`.
fn job_condition(job: &Job, type_: &str, reason: &str) -> Option<Option<String>> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| {
            c.type_ == type_
                && c.status == "True"
                && (reason.is_empty() || c.reason.as_deref() == Some(reason))
        })
        .map(|c| c.message.clone())
}

fn job_counted_failure(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.failed)
        .is_some_and(|n| n > 0)
}

fn failed(reason: FailureReason, detail: Option<String>) -> Workload {
    Workload::Failed { reason, detail }
}

fn describe(reason: Option<&str>, message: Option<&str>) -> String {
    match (reason, message) {
        (Some(r), Some(m)) if !m.is_empty() => format!("{r}: {m}"),
        (Some(r), _) => r.to_owned(),
        (None, Some(m)) => m.to_owned(),
        (None, None) => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bounds;
#[cfg(test)]
mod tests_refused;
#[cfg(test)]
mod tests_wake;
