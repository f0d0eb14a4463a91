//! The start deadlines of a task whose tool container has not started: each way Kubernetes
//! keeps retrying a start (an image pull, a missing Secret or ConfigMap, a volume that does
//! not mount, no node, refused pods) fails the task after its grace period, and a start
//! that takes too long for any reason fails it after the start timeout (docs/DESIGN.md,
//! "Every state has a bound"). Each clock starts from a time the API server keeps, so an
//! operator restart does not restart it.
//!
//! Pure: the objects and `now` in; the two checks that need the Events of the pod or the Job
//! say only when those are worth a request.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStateWaiting, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::{FailureReason, Workload, describe, failed, tool_container_name};

/// Pull failures the kubelet retries (a registry may come back): they fail the task only
/// after [`StartLimits::image_pull_grace`].
const RETRIED_PULL_REASONS: [&str; 2] = ["ErrImagePull", "ImagePullBackOff"];
/// A Secret or ConfigMap the container refers to is missing (or lacks the key).
const CONFIG_ERROR_REASON: &str = "CreateContainerConfigError";
/// Waiting reasons of a tool container whose pod is still being set up on its node: volumes
/// mounted (a missing Secret or ConfigMap volume keeps it here, with `FailedMount` Events),
/// the sandbox created, init containers run.
const CREATING_REASONS: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// How long a task's pod may fail to start in ways Kubernetes keeps retrying before the task
/// fails (see the operator's `Config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartLimits {
    /// How long image pulls may keep failing, from when the kubelet took the pod.
    pub image_pull_grace: SignedDuration,
    /// How long a Secret or ConfigMap may be missing, from when the kubelet took the pod.
    pub config_error_grace: SignedDuration,
    /// How long the pod may stay unschedulable, from its creation.
    pub unschedulable_after: SignedDuration,
    /// How long the Job's pods may be refused, from the first refusal Event.
    pub pod_refused_grace: SignedDuration,
    /// How long the tool container may wait for its volumes (`FailedMount`), from when the
    /// kubelet took the pod.
    pub volume_mount_grace: SignedDuration,
    /// How long the tool container may take to start at all: from the pod's creation, or the
    /// Job's (re)start while it has no pod. Not counted while the Job is suspended.
    pub start_timeout: SignedDuration,
}

/// Ends a task whose pod has waited too long to start, by [`StartLimits`]: `workload` as
/// [`observe_workload`](super::observe_workload) saw it, and a failure instead if the pod has
/// been unschedulable, pulling its image or missing its configuration for longer than allowed,
/// or if the tool container has not started within the start timeout for any reason. Each
/// clock starts from a time the API server keeps (the pod's creation or start time, the Job's),
/// so an operator restart does not restart it.
pub fn start_deadline(
    workload: Workload,
    job: Option<&Job>,
    pod: Option<&Pod>,
    limits: &StartLimits,
    now: Timestamp,
) -> Workload {
    let Workload::Starting { detail } = &workload else {
        return workload;
    };
    let passed = pod
        .into_iter()
        .flat_map(|pod| pod_deadlines(pod, limits))
        .find(|d| now >= d.at);
    if let Some(passed) = passed {
        return failed(passed.reason, Some(passed.detail));
    }
    if start_timeout_at(job, pod, limits).is_some_and(|at| now >= at) {
        let limit = limits.start_timeout.as_secs();
        let detail = format!("{detail} (for more than {limit}s)");
        return failed(FailureReason::StartTimeout, Some(detail));
    }
    workload
}

/// How often the `FailedCreate` Events of a Job whose pod is still missing past the refusal
/// grace period are looked at again (they are not watched).
pub const REFUSAL_POLL: SignedDuration = SignedDuration::from_secs(10);

/// How long until a start deadline of a starting task can next pass: the soonest of the pod's
/// ([`start_deadline`]), the end of its volume grace period ([`mount_check_due`]), the start
/// timeout and, without a pod, the end of the refusal grace period ([`refusal_possible`]).
/// Past the grace periods whose Events are read, every [`REFUSAL_POLL`]. `None`: no clock
/// runs, and only a change to the pod or the Job (whose watch events wake the task) can start
/// one.
pub fn start_wake(
    pod: Option<&Pod>,
    job: Option<&Job>,
    limits: &StartLimits,
    now: Timestamp,
) -> Option<SignedDuration> {
    let mut times: Vec<Timestamp> = Vec::new();
    match (pod, job) {
        (Some(pod), _) => {
            times.extend(pod_deadlines(pod, limits).into_iter().map(|d| d.at));
            times.extend(mount_due_at(pod, limits));
        }
        (None, Some(job)) => {
            let synced = job
                .status
                .as_ref()
                .filter(|s| s.active.unwrap_or(0) == 0)
                .and_then(|s| s.start_time.as_ref());
            times.extend(synced.and_then(|t| t.0.checked_add(limits.pod_refused_grace).ok()));
        }
        (None, None) => {}
    }
    times.extend(start_timeout_at(job, pod, limits));
    let soonest = times.into_iter().min()?;
    let left = soonest.duration_since(now);
    Some(match left.is_positive() {
        true => left,
        false => REFUSAL_POLL,
    })
}

/// A start deadline a starting pod is under.
struct Deadline {
    /// When it passes.
    at: Timestamp,
    /// The failure then.
    reason: FailureReason,
    detail: String,
}

/// When the start timeout of a starting task passes: [`StartLimits::start_timeout`] after the
/// latest of the pod's creation (its start if no creation is known), the Job's start (the Job
/// controller resets it when the Job is resumed) and the Job's creation. `None` while the Job is
/// suspended (its queue's admission timeout counts instead, `attempts.rs`) or no time is known.
fn start_timeout_at(
    job: Option<&Job>,
    pod: Option<&Pod>,
    limits: &StartLimits,
) -> Option<Timestamp> {
    if job.is_some_and(|j| j.spec.as_ref().and_then(|s| s.suspend) == Some(true)) {
        return None;
    }
    let pod_since = pod.and_then(|p| {
        let started = || p.status.as_ref()?.start_time.as_ref();
        p.metadata.creation_timestamp.as_ref().or_else(started)
    });
    let job_started = job.and_then(|j| j.status.as_ref()?.start_time.as_ref());
    let job_created = job.and_then(|j| j.metadata.creation_timestamp.as_ref());
    let since = [pod_since, job_started, job_created]
        .into_iter()
        .flatten()
        .map(|t| t.0)
        .max()?;
    since.checked_add(limits.start_timeout).ok()
}

/// When a pod whose tool container waits for the pod's setup on its node (its volumes, as a
/// rule) has waited [`StartLimits::volume_mount_grace`], from when the kubelet took it. NB: the
/// kubelet mounts the volumes before it creates the pod's sandbox, so a pod whose
/// `PodReadyToStartContainers` condition is True has its volumes, and a container still
/// `ContainerCreating` then is pulling its image: no Event is worth a request.
fn mount_due_at(pod: &Pod, limits: &StartLimits) -> Option<Timestamp> {
    let reason = tool_waiting(pod)?.reason.as_deref()?;
    if !CREATING_REASONS.contains(&reason) {
        return None;
    }
    let status = pod.status.as_ref()?;
    let sandbox_ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "PodReadyToStartContainers" && c.status == "True");
    if sandbox_ready {
        return None;
    }
    let created = pod.metadata.creation_timestamp.as_ref();
    let started = status.start_time.as_ref().or(created)?;
    started.0.checked_add(limits.volume_mount_grace).ok()
}

/// The waiting state of the pod's tool container, if it waits.
fn tool_waiting(pod: &Pod) -> Option<&ContainerStateWaiting> {
    let name = tool_container_name(pod);
    pod.status
        .as_ref()?
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == name)?
        .state
        .as_ref()?
        .waiting
        .as_ref()
}

/// The start deadlines `pod` is under, by what it waits for: a pull the kubelet retries, a
/// missing Secret or ConfigMap, a place on a node.
fn pod_deadlines(pod: &Pod, limits: &StartLimits) -> Vec<Deadline> {
    let Some(status) = pod.status.as_ref() else {
        return Vec::new();
    };
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let started = status.start_time.as_ref().map(|t| t.0).or(created);
    let grace = |limit: SignedDuration| format!(" (for more than {}s)", limit.as_secs());
    let mut deadlines = Vec::new();
    let waiting = tool_waiting(pod);
    if let (Some(w), Some(started)) = (waiting, started) {
        let reason = w.reason.as_deref().unwrap_or_default();
        let limit = match reason {
            r if RETRIED_PULL_REASONS.contains(&r) => {
                Some((limits.image_pull_grace, FailureReason::ImagePullFailed))
            }
            CONFIG_ERROR_REASON => Some((
                limits.config_error_grace,
                FailureReason::ContainerConfigError,
            )),
            _ => None,
        };
        if let Some((limit, failure)) = limit
            && let Ok(at) = started.checked_add(limit)
        {
            deadlines.push(Deadline {
                at,
                reason: failure,
                detail: describe(w.reason.as_deref(), w.message.as_deref()) + &grace(limit),
            });
        }
    }
    let unschedulable = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .filter(|c| c.reason.as_deref() == Some("Unschedulable"));
    let limit = limits.unschedulable_after;
    if let (Some(c), Some(created)) = (unschedulable, created)
        && let Ok(at) = created.checked_add(limit)
    {
        deadlines.push(Deadline {
            at,
            reason: FailureReason::Unschedulable,
            detail: describe(c.reason.as_deref(), c.message.as_deref()) + &grace(limit),
        });
    }
    deadlines
}

/// Whether the Job's pods have been refused for longer than the grace period: `refused_since`
/// is the first time of the Job's `FailedCreate` Event (kept by the API server), if any.
pub fn pods_refused(
    workload: &Workload,
    pod: Option<&Pod>,
    refused_since: Option<Timestamp>,
    limits: &StartLimits,
    now: Timestamp,
) -> bool {
    matches!(workload, Workload::Starting { .. })
        && pod.is_none()
        && refused_since.is_some_and(|t| now.duration_since(t) >= limits.pod_refused_grace)
}

/// Whether the Job's pod creations may have been refused for longer than the grace period, so
/// that its `FailedCreate` Events are worth a request: the Job controller has synced the Job
/// (it sets `status.startTime` in the sync that first tries to create the pod, refused or
/// not), the Job has no pod (`status.active`), and that first sync is at least the grace
/// period ago (a refusal is never older than it). A Job waiting for the Job controller, or
/// whose pod the operator's cache has not shown yet, costs no request.
pub fn refusal_possible(job: &Job, limits: &StartLimits, now: Timestamp) -> bool {
    let Some(status) = job.status.as_ref() else {
        return false;
    };
    let active = status.active.unwrap_or(0) > 0;
    let started = status.start_time.as_ref().map(|t| t.0);
    !active && started.is_some_and(|t| now.duration_since(t) >= limits.pod_refused_grace)
}

/// Whether the pod's tool container has waited for its pod's setup on the node (volumes,
/// sandbox, init containers) past [`StartLimits::volume_mount_grace`], so that the pod's
/// `FailedMount` Events are worth a request.
pub fn mount_check_due(
    workload: &Workload,
    pod: &Pod,
    limits: &StartLimits,
    now: Timestamp,
) -> bool {
    matches!(workload, Workload::Starting { .. })
        && mount_due_at(pod, limits).is_some_and(|at| now >= at)
}

/// The failure of a task whose pod's volumes did not mount: `note` is the newest
/// `FailedMount` Event's (the kubelet names the volume and the missing Secret or ConfigMap).
pub fn mount_failed(note: &str, limits: &StartLimits) -> Workload {
    let grace = limits.volume_mount_grace.as_secs();
    failed(
        FailureReason::VolumeMountFailed,
        Some(format!("FailedMount: {note} (for more than {grace}s)")),
    )
}
