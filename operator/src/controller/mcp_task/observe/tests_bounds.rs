//! The start bounds no retry of Kubernetes ends: a volume that never mounts (a missing Secret
//! or ConfigMap volume) and a start that takes too long for any reason, with or without a pod.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::SignedDuration;

use super::tests::{LIMITS, at, job, pending, pod};
use super::{
    FailureReason, REFUSAL_POLL, Workload, mount_check_due, mount_failed, observe_workload,
    start_deadline, start_wake,
};

/// A Job of `yaml` (spec, metadata and status as YAML lines).
fn job_of(yaml: &str) -> Job {
    serde_yaml::from_str(&format!("apiVersion: batch/v1\nkind: Job\n{yaml}")).unwrap()
}

/// The pod waiting for its volumes: created and taken by the kubelet at 12:00:00.
fn creating() -> k8s_openapi::api::core::v1::Pod {
    pod(
        "metadata: {name: t-x, uid: p1, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         status: {phase: Pending, startTime: '2026-08-01T12:00:00Z', containerStatuses: \
         [{name: main, image: i, imageID: '', ready: false, restartCount: 0, \
         state: {waiting: {reason: ContainerCreating}}}]}",
    )
}

fn judged(job: &Job, pod: Option<&k8s_openapi::api::core::v1::Pod>, now: &str) -> Workload {
    start_deadline(
        observe_workload(Some(job), pod),
        Some(job),
        pod,
        &LIMITS,
        at(now),
    )
}

#[test]
fn a_volume_that_never_mounts_is_looked_up_after_its_grace_and_fails_naming_the_secret() {
    let pod = creating();
    let active = job("{active: 1}");
    let seen = judged(&active, Some(&pod), "2026-08-01T12:01:59Z");
    assert!(!mount_check_due(
        &seen,
        &pod,
        &LIMITS,
        at("2026-08-01T12:01:59Z")
    ));
    // The grace (120 s) runs from when the kubelet took the pod; past it the Events count.
    let seen = judged(&active, Some(&pod), "2026-08-01T12:02:00Z");
    assert!(matches!(seen, Workload::Starting { .. }), "{seen:?}");
    assert!(mount_check_due(
        &seen,
        &pod,
        &LIMITS,
        at("2026-08-01T12:02:00Z")
    ));
    let note = "MountVolume.SetUp failed for volume \"token\" : secret \"no-such\" not found";
    assert_eq!(
        mount_failed(note, &LIMITS),
        Workload::Failed {
            reason: FailureReason::VolumeMountFailed,
            detail: Some(format!("FailedMount: {note} (for more than 120s)")),
        }
    );
    assert!(FailureReason::VolumeMountFailed.stops_job());
    // A container that runs, or waits for something else, has no volume to wait for.
    let pulling = pending("{waiting: {reason: ImagePullBackOff}}");
    let late = at("2026-08-01T12:05:00Z");
    let seen = observe_workload(Some(&active), Some(&pulling));
    assert!(!mount_check_due(&seen, &pulling, &LIMITS, late));
    let running = pending("{running: {}}");
    assert!(!mount_check_due(
        &Workload::Running,
        &running,
        &LIMITS,
        late
    ));
    // Its sandbox made, the pod has its volumes: a container still creating is being pulled.
    let pulled = super::tests::pod(
        "metadata: {name: t-x, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         status: {phase: Pending, startTime: '2026-08-01T12:00:00Z', conditions: \
         [{type: PodReadyToStartContainers, status: 'True'}], containerStatuses: \
         [{name: main, image: i, imageID: '', ready: false, restartCount: 0, \
         state: {waiting: {reason: ContainerCreating}}}]}",
    );
    let seen = observe_workload(Some(&active), Some(&pulled));
    assert!(!mount_check_due(&seen, &pulled, &LIMITS, late));
}

#[test]
fn a_pod_that_never_starts_fails_start_timeout_whatever_it_waits_for() {
    let active = job("{active: 1}");
    let pod = creating();
    let early = judged(&active, Some(&pod), "2026-08-01T12:29:59Z");
    assert!(matches!(early, Workload::Starting { .. }), "{early:?}");
    // 1800 s from the pod's creation.
    let Workload::Failed { reason, detail } = judged(&active, Some(&pod), "2026-08-01T12:30:00Z")
    else {
        panic!("no start timeout");
    };
    assert_eq!(reason, FailureReason::StartTimeout);
    assert!(reason.stops_job());
    assert_eq!(
        detail.as_deref(),
        Some("Waiting for the tool container to start: ContainerCreating (for more than 1800s)")
    );
}

#[test]
fn without_a_pod_the_start_timeout_counts_from_the_jobs_start_but_not_while_suspended() {
    let synced = job_of(
        "metadata: {name: t, creationTimestamp: '2026-08-01T11:00:00Z'}\n\
         spec: {template: {}}\nstatus: {startTime: '2026-08-01T12:00:00Z'}",
    );
    assert!(matches!(
        judged(&synced, None, "2026-08-01T12:29:59Z"),
        Workload::Starting { .. }
    ));
    let Workload::Failed { reason, detail } = judged(&synced, None, "2026-08-01T12:30:00Z") else {
        panic!("no start timeout");
    };
    assert_eq!(reason, FailureReason::StartTimeout);
    assert_eq!(
        detail.as_deref(),
        Some("Waiting for the Job to create a pod (for more than 1800s)")
    );
    // Not synced by the Job controller at all: from the Job's creation.
    let unsynced = job_of("metadata: {name: t, creationTimestamp: '2026-08-01T12:00:00Z'}");
    assert!(matches!(
        judged(&unsynced, None, "2026-08-01T12:30:00Z"),
        Workload::Failed {
            reason: FailureReason::StartTimeout,
            ..
        }
    ));
    // A Job suspended for its queue is under the admission timeout instead (attempts.rs).
    let suspended = job_of(
        "metadata: {name: t, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         spec: {suspend: true, template: {}}",
    );
    assert!(matches!(
        judged(&suspended, None, "2026-08-02T12:00:00Z"),
        Workload::Starting { .. }
    ));
}

#[test]
fn a_new_pod_of_a_retrying_job_starts_its_own_start_clock() {
    let old_job = job_of(
        "metadata: {name: t, creationTimestamp: '2026-08-01T10:00:00Z'}\n\
         spec: {template: {}}\nstatus: {startTime: '2026-08-01T10:00:00Z', active: 1}",
    );
    let retried = pod(
        "metadata: {name: t-y, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         status: {phase: Pending}",
    );
    assert!(matches!(
        judged(&old_job, Some(&retried), "2026-08-01T12:29:59Z"),
        Workload::Starting { .. }
    ));
}

#[test]
fn a_starting_task_is_looked_at_again_when_its_volume_grace_or_start_timeout_ends() {
    let active = job("{active: 1}");
    let pod = creating();
    let wake = |now| start_wake(Some(&pod), Some(&active), &LIMITS, at(now));
    assert_eq!(
        wake("2026-08-01T12:01:00Z"),
        Some(SignedDuration::from_secs(60))
    );
    // Past the grace, the Events are read again every poll until the start timeout.
    assert_eq!(wake("2026-08-01T12:03:00Z"), Some(REFUSAL_POLL));
    // A pod waiting for nothing known yet (pending, no container status) still has its start
    // timeout.
    let pending_pod = pod_created_at("2026-08-01T12:00:00Z");
    assert_eq!(
        start_wake(
            Some(&pending_pod),
            Some(&active),
            &LIMITS,
            at("2026-08-01T12:20:00Z")
        ),
        Some(SignedDuration::from_secs(600))
    );
    // A Job whose pod the cache has not shown yet: its start timeout from its start.
    let has_pod = job("{startTime: '2026-08-01T12:00:00Z', active: 1}");
    assert_eq!(
        start_wake(None, Some(&has_pod), &LIMITS, at("2026-08-01T12:10:00Z")),
        Some(SignedDuration::from_secs(1200))
    );
}

fn pod_created_at(time: &str) -> k8s_openapi::api::core::v1::Pod {
    pod(&format!(
        "metadata: {{name: t-x, creationTimestamp: '{time}'}}\nstatus: {{phase: Pending}}"
    ))
}
