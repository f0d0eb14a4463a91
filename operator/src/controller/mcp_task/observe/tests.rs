//! Tests for telling pod-level failures from tool exits, from inline YAML objects.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;

pub(super) fn job(status: &str) -> Job {
    serde_yaml::from_str(&format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: t}}\nstatus: {status}\n"
    ))
    .unwrap()
}

pub(super) fn pod(yaml: &str) -> Pod {
    let base = "apiVersion: v1\nkind: Pod\nmetadata: {name: t-x}\n\
                spec: {containers: [{name: main, image: i}]}\n";
    serde_yaml::from_str(&format!("{base}{yaml}")).unwrap()
}

fn with_state(state: &str) -> Pod {
    pod(&format!(
        "status: {{phase: Running, containerStatuses: [{{name: main, image: i, imageID: '', \
         ready: false, restartCount: 0, state: {state}}}]}}"
    ))
}

fn reason_of(workload: Workload) -> FailureReason {
    match workload {
        Workload::Failed { reason, .. } => reason,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn container_states_map_to_workloads() {
    let active = job("{active: 1}");
    let cases = [
        ("{running: {}}", Workload::Running),
        (
            "{terminated: {exitCode: 0, reason: Completed}}",
            Workload::Exited { exit_code: 0 },
        ),
        (
            "{terminated: {exitCode: 3, reason: Error}}",
            Workload::Exited { exit_code: 3 },
        ),
    ];
    for (state, expected) in cases {
        assert_eq!(
            observe_workload(Some(&active), Some(&with_state(state))),
            expected,
            "{state}"
        );
    }
}

#[test]
fn pod_level_failures_name_their_reason() {
    let active = job("{active: 1}");
    let cases = [
        (
            "{waiting: {reason: InvalidImageName}}",
            FailureReason::ImagePullFailed,
        ),
        (
            "{terminated: {exitCode: 137, reason: OOMKilled}}",
            FailureReason::OomKilled,
        ),
        (
            "{terminated: {exitCode: 128, reason: StartError, message: no exec}}",
            FailureReason::ContainerStartFailed,
        ),
    ];
    for (state, expected) in cases {
        let workload = observe_workload(Some(&active), Some(&with_state(state)));
        assert_eq!(reason_of(workload), expected, "{state}");
    }
}

pub(super) const LIMITS: StartLimits = StartLimits {
    image_pull_grace: SignedDuration::from_secs(120),
    config_error_grace: SignedDuration::from_secs(60),
    unschedulable_after: SignedDuration::from_secs(300),
    pod_refused_grace: SignedDuration::from_secs(30),
    volume_mount_grace: SignedDuration::from_secs(120),
    start_timeout: SignedDuration::from_secs(1800),
};

pub(super) fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

/// A pending pod created and taken by the kubelet at 12:00:00, its tool container in `state`.
pub(super) fn pending(state: &str) -> Pod {
    pod(&format!(
        "status: {{phase: Pending, startTime: '2026-08-01T12:00:00Z', containerStatuses: \
         [{{name: main, image: i, imageID: '', ready: false, restartCount: 0, state: {state}}}]}}"
    ))
}

fn observed_at(p: &Pod, now: &str) -> Workload {
    let active = job("{active: 1}");
    start_deadline(
        observe_workload(Some(&active), Some(p)),
        Some(&active),
        Some(p),
        &LIMITS,
        at(now),
    )
}

#[test]
fn image_pulls_that_a_retry_may_cure_fail_only_after_the_grace_period() {
    for state in [
        "{waiting: {reason: ErrImagePull, message: 'manifest unknown'}}",
        "{waiting: {reason: ImagePullBackOff, message: 'manifest unknown'}}",
    ] {
        let p = pending(state);
        let early = observed_at(&p, "2026-08-01T12:01:59Z");
        assert!(
            matches!(early, Workload::Starting { .. }),
            "{state}: {early:?}"
        );
        let Workload::Starting { detail } = early else {
            unreachable!()
        };
        assert!(detail.contains("manifest unknown"), "{detail}");
        let late = observed_at(&p, "2026-08-01T12:02:00Z");
        assert_eq!(
            reason_of(late.clone()),
            FailureReason::ImagePullFailed,
            "{state}"
        );
        let Workload::Failed { detail, .. } = late else {
            unreachable!()
        };
        assert!(
            detail
                .unwrap()
                .ends_with("manifest unknown (for more than 120s)")
        );
    }
}

#[test]
fn image_pulls_no_retry_can_cure_fail_at_once() {
    for state in [
        "{waiting: {reason: InvalidImageName}}",
        "{waiting: {reason: ErrImageNeverPull}}",
    ] {
        let workload = observed_at(&pending(state), "2026-08-01T12:00:00Z");
        assert_eq!(
            reason_of(workload),
            FailureReason::ImagePullFailed,
            "{state}"
        );
    }
}

#[test]
fn a_missing_secret_fails_the_task_after_its_grace_period() {
    let p = pending(
        "{waiting: {reason: CreateContainerConfigError, message: 'secret \"s\" not found'}}",
    );
    let early = observed_at(&p, "2026-08-01T12:00:59Z");
    assert!(matches!(early, Workload::Starting { .. }), "{early:?}");
    let late = observed_at(&p, "2026-08-01T12:01:00Z");
    assert_eq!(
        late,
        Workload::Failed {
            reason: FailureReason::ContainerConfigError,
            detail: Some(
                "CreateContainerConfigError: secret \"s\" not found (for more than 60s)".into()
            ),
        }
    );
}

#[test]
fn an_unschedulable_pod_fails_the_task_after_the_start_deadline() {
    let p = pod(
        "metadata: {name: t-x, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         status: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', \
         reason: Unschedulable, message: '0/1 nodes are available'}]}",
    );
    let early = observed_at(&p, "2026-08-01T12:04:59Z");
    assert!(matches!(early, Workload::Starting { .. }), "{early:?}");
    let late = observed_at(&p, "2026-08-01T12:05:00Z");
    assert_eq!(reason_of(late), FailureReason::Unschedulable);
    // A pod still scheduling for another reason (say a volume binding) is left alone, up to
    // the start timeout (1800 s from its creation).
    let binding = pod(
        "metadata: {name: t-x, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         status: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', \
         reason: SchedulerError}]}",
    );
    assert!(matches!(
        observed_at(&binding, "2026-08-01T12:29:59Z"),
        Workload::Starting { .. }
    ));
    assert_eq!(
        reason_of(observed_at(&binding, "2026-08-01T13:00:00Z")),
        FailureReason::StartTimeout
    );
}

#[test]
fn refused_pods_fail_the_task_after_the_grace_period_from_the_first_refusal() {
    let starting = observe_workload(Some(&job("{active: 0}")), None);
    let since = Some(at("2026-08-01T12:00:00Z"));
    assert!(!pods_refused(
        &starting,
        None,
        since,
        &LIMITS,
        at("2026-08-01T12:00:29Z")
    ));
    assert!(pods_refused(
        &starting,
        None,
        since,
        &LIMITS,
        at("2026-08-01T12:00:30Z")
    ));
    assert!(!pods_refused(
        &starting,
        None,
        None,
        &LIMITS,
        at("2026-08-01T13:00:00Z")
    ));
    // Once a pod exists, it is what is watched.
    let p = pending("{waiting: {reason: ContainerCreating}}");
    assert!(!pods_refused(
        &starting,
        Some(&p),
        since,
        &LIMITS,
        at("2026-08-01T13:00:00Z")
    ));
}

#[test]
fn job_deadline_wins_over_the_container_state() {
    let failed = job(
        "{failed: 1, conditions: [{type: Failed, status: 'True', reason: DeadlineExceeded, \
                      message: Job was active longer than specified deadline}]}",
    );
    let killed = with_state("{terminated: {exitCode: 143, reason: Error}}");
    assert_eq!(
        reason_of(observe_workload(Some(&failed), Some(&killed))),
        FailureReason::DeadlineExceeded
    );
    assert_eq!(
        reason_of(observe_workload(Some(&failed), None)),
        FailureReason::DeadlineExceeded
    );
}

#[test]
fn failure_target_deadline_counts_before_the_job_has_failed() {
    let failing = job(
        "{active: 1, conditions: [{type: FailureTarget, status: 'True', \
                       reason: DeadlineExceeded}]}",
    );
    let killed = with_state("{terminated: {exitCode: 143, reason: Error}}");
    assert_eq!(
        reason_of(observe_workload(Some(&failing), Some(&killed))),
        FailureReason::DeadlineExceeded
    );
}

#[test]
fn pod_deadline_and_kubelet_eviction_are_read_from_the_pod_phase() {
    let evicted = pod("status: {phase: Failed, reason: Evicted, message: low on memory}");
    assert_eq!(
        reason_of(observe_workload(Some(&job("{}")), Some(&evicted))),
        FailureReason::Evicted
    );
    let deadline = pod("status: {phase: Failed, reason: DeadlineExceeded}");
    assert_eq!(
        reason_of(observe_workload(Some(&job("{}")), Some(&deadline))),
        FailureReason::DeadlineExceeded
    );
}

#[test]
fn disrupted_or_deleted_pods_are_not_tool_exits() {
    let evicted = pod(
        "status: {phase: Failed, conditions: [{type: DisruptionTarget, status: 'True', \
         reason: EvictionByEvictionAPI}], containerStatuses: [{name: main, image: i, imageID: '', \
         ready: false, restartCount: 0, state: {terminated: {exitCode: 143}}}]}",
    );
    assert_eq!(
        reason_of(observe_workload(Some(&job("{}")), Some(&evicted))),
        FailureReason::Evicted
    );

    let mut deleted = with_state("{terminated: {exitCode: 137, reason: Error}}");
    deleted.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-08-01T12:00:00Z".parse().unwrap(),
        ));
    assert_eq!(
        reason_of(observe_workload(Some(&job("{}")), Some(&deleted))),
        FailureReason::PodDeleted
    );

    // Deleted while the container runs: gone already, whether or not a kubelet ever says
    // the container stopped (the outcome still waits for the log to end, unless the node is
    // lost).
    let mut terminating = with_state("{running: {}}");
    terminating.metadata.deletion_timestamp = deleted.metadata.deletion_timestamp.clone();
    assert_eq!(
        reason_of(observe_workload(Some(&job("{}")), Some(&terminating))),
        FailureReason::PodDeleted
    );
}

/// A pod whose container the last kubelet report shows running, deleted (the deletion never
/// completes while no kubelet confirms it) with a DisruptionTarget of `reason`.
fn disrupted_while_running(reason: &str) -> Pod {
    let mut p = pod(&format!(
        "status: {{phase: Running, conditions: [{{type: DisruptionTarget, status: 'True', \
         reason: {reason}, message: 'Taint manager: deleting due to NoExecute taint'}}], \
         containerStatuses: [{{name: main, image: i, imageID: '', ready: true, \
         restartCount: 0, state: {{running: {{}}}}}}]}}"
    ));
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-08-01T12:00:00Z".parse().unwrap(),
    ));
    p
}

#[test]
fn a_pod_evicted_from_a_lost_node_fails_as_node_lost_though_its_container_shows_running() {
    // NB: before, the "running" check came first and such a task stayed working for ever.
    let active = job("{active: 1}");
    for reason in ["DeletionByTaintManager", "DeletionByPodGC"] {
        let workload = observe_workload(Some(&active), Some(&disrupted_while_running(reason)));
        let Workload::Failed { reason: r, detail } = workload else {
            panic!("{reason}: expected a failure, got {workload:?}");
        };
        assert_eq!(r, FailureReason::NodeLost, "{reason}");
        assert!(detail.unwrap().starts_with(reason));
    }
    let evicted = disrupted_while_running("EvictionByEvictionAPI");
    assert_eq!(
        reason_of(observe_workload(Some(&active), Some(&evicted))),
        FailureReason::Evicted
    );
    assert!(FailureReason::NodeLost.stops_job());
}

#[test]
fn the_job_of_an_earlier_task_of_the_name_is_told_apart() {
    let job_owned_by = |kind: &str, name: &str, uid: &str| -> Job {
        serde_yaml::from_str(&format!(
            "metadata: {{name: t, ownerReferences: [{{apiVersion: mcptasks.io/v1alpha1, \
             kind: {kind}, name: {name}, uid: {uid}, controller: true}}]}}"
        ))
        .unwrap()
    };
    // The owner (kind, name, UID) of a Job of task `t` (UID `new`), and whether it is an
    // earlier task's.
    let cases = [
        (("McpTask", "t", "old"), true),
        (("McpTask", "t", "new"), false),
        (("McpTask", "u", "old"), false),
        (("CronJob", "t", "old"), false),
    ];
    for ((kind, name, uid), earlier) in cases {
        let job = job_owned_by(kind, name, uid);
        assert_eq!(
            earlier_task_job(&job, "t", "new"),
            earlier,
            "{kind} {name} {uid}"
        );
    }
    assert!(!earlier_task_job(&job("{}"), "t", "new"));
}

#[test]
fn missing_pod_of_a_failed_job_was_deleted() {
    let backoff = job(
        "{failed: 1, conditions: [{type: Failed, status: 'True', reason: BackoffLimitExceeded}]}",
    );
    assert_eq!(
        reason_of(observe_workload(Some(&backoff), None)),
        FailureReason::PodDeleted
    );
    assert_eq!(
        reason_of(observe_workload(Some(&job("{failed: 1}")), None)),
        FailureReason::PodDeleted
    );
    let complete = job("{succeeded: 1, conditions: [{type: Complete, status: 'True'}]}");
    assert_eq!(
        reason_of(observe_workload(Some(&complete), None)),
        FailureReason::PodDeleted
    );
}

#[test]
fn waiting_workloads_say_what_they_wait_for() {
    assert_eq!(observe_workload(None, None), Workload::NoJob);
    let detail = |w: Workload| match w {
        Workload::Starting { detail } => detail,
        other => panic!("expected Starting, got {other:?}"),
    };
    assert_eq!(
        detail(observe_workload(Some(&job("{}")), None)),
        "Waiting for the Job to create a pod"
    );
    let unschedulable = pod(
        "status: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', \
         reason: Unschedulable, message: 0/1 nodes are available}]}",
    );
    assert_eq!(
        detail(observe_workload(Some(&job("{}")), Some(&unschedulable))),
        "Waiting for the tool container to start: Unschedulable: 0/1 nodes are available"
    );
    let creating = with_state("{waiting: {reason: ContainerCreating}}");
    assert_eq!(
        detail(observe_workload(Some(&job("{}")), Some(&creating))),
        "Waiting for the tool container to start: ContainerCreating"
    );
}

#[test]
fn tool_container_is_found_by_name_among_several() {
    let p = pod("status: {phase: Running, containerStatuses: [\
         {name: proxy, image: i, imageID: '', ready: true, restartCount: 0, state: {running: {}}},\
         {name: tool, image: i, imageID: '', ready: false, restartCount: 0, \
          state: {terminated: {exitCode: 0}}}]}");
    let mut p = p;
    let spec = p.spec.as_mut().unwrap();
    spec.containers.push(spec.containers[0].clone());
    spec.containers[0].name = "proxy".into();
    spec.containers[1].name = "tool".into();
    assert_eq!(tool_container_name(&p), "tool");
    assert_eq!(
        observe_workload(Some(&job("{}")), Some(&p)),
        Workload::Exited { exit_code: 0 }
    );
}

#[test]
fn select_pod_prefers_the_newest() {
    let mut old = pod("status: {}");
    old.metadata.name = Some("old".into());
    old.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-08-01T12:00:00Z".parse().unwrap(),
    ));
    let mut new = old.clone();
    new.metadata.name = Some("new".into());
    new.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-08-01T12:05:00Z".parse().unwrap(),
    ));
    let pods = [old, new];
    assert_eq!(
        select_pod(&pods).unwrap().metadata.name.as_deref(),
        Some("new")
    );
    assert!(select_pod(&[]).is_none());
}

#[test]
fn only_a_controller_reference_with_the_owners_uid_counts() {
    let meta = |refs: &str| -> ObjectMeta {
        serde_yaml::from_str(&format!("{{name: t, ownerReferences: {refs}}}")).unwrap()
    };
    let reference = |uid: &str, controller: bool| {
        format!(
            "{{apiVersion: batch/v1, kind: Job, name: t, uid: {uid}, controller: {controller}}}"
        )
    };
    assert!(controlled_by(
        &meta(&format!("[{}]", reference("job-uid", true))),
        "job-uid"
    ));
    assert!(!controlled_by(
        &meta(&format!("[{}]", reference("other", true))),
        "job-uid"
    ));
    assert!(!controlled_by(
        &meta(&format!("[{}]", reference("job-uid", false))),
        "job-uid"
    ));
    assert!(!controlled_by(&meta("[]"), "job-uid"));
    assert!(!controlled_by(&ObjectMeta::default(), "job-uid"));
}
