//! [`adjust`] and [`annotate`]: suspended Jobs wait for admission, disruptions of a retrying
//! Job are retries until the Job fails, and the attempt shows once a second pod runs.

use serde_json::{Map, json};

use super::*;

fn job(value: serde_json::Value) -> Job {
    serde_json::from_value(value).unwrap()
}

fn evicted() -> Workload {
    Workload::Failed {
        reason: FailureReason::Evicted,
        detail: Some("EvictionByEvictionAPI".to_owned()),
    }
}

fn starting() -> Workload {
    Workload::Starting {
        detail: "Waiting for the Job to create a pod".to_owned(),
    }
}

#[test]
fn a_suspended_job_waits_for_admission_by_its_queue() {
    let queued = job(json!({
        "metadata": {"labels": {QUEUE_NAME_LABEL: "team-a"}},
        "spec": {"suspend": true, "template": {}},
    }));
    let seen = adjust(starting(), Some(&queued), Pods::default());
    assert_eq!(
        seen,
        Workload::Starting {
            detail: "Waiting for admission by queue team-a".to_owned()
        }
    );
    // Once admitted (resumed), it starts as any Job.
    let admitted = job(json!({"spec": {"suspend": false, "template": {}}}));
    assert_eq!(
        adjust(starting(), Some(&admitted), Pods::default()),
        starting()
    );
}

#[test]
fn an_eviction_is_a_retry_only_for_a_retrying_job_that_has_not_failed() {
    let retrying = job(json!({"spec": {"backoffLimit": 2, "template": {}}}));
    let Workload::Starting { detail } = adjust(evicted(), Some(&retrying), Pods::default()) else {
        panic!("not a retry");
    };
    assert_eq!(detail, "Retrying after a disruption: EvictionByEvictionAPI");

    let deleted = Workload::Failed {
        reason: FailureReason::PodDeleted,
        detail: None,
    };
    let Workload::Starting { detail } = adjust(deleted, Some(&retrying), Pods::default()) else {
        panic!("a deleted pod of a retrying Job is no retry");
    };
    assert_eq!(detail, "Retrying after a disruption");

    let once = job(json!({"spec": {"backoffLimit": 0, "template": {}}}));
    assert_eq!(adjust(evicted(), Some(&once), Pods::default()), evicted());

    let failed = job(json!({
        "spec": {"backoffLimit": 2, "template": {}},
        "status": {"failed": 3, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]},
    }));
    assert_eq!(adjust(evicted(), Some(&failed), Pods::default()), evicted());
}

fn queued(value: serde_json::Value) -> Job {
    let mut job = job(value);
    job.metadata.labels = Some([(QUEUE_NAME_LABEL.to_owned(), "tasks".to_owned())].into());
    job
}

fn deleted() -> Workload {
    Workload::Failed {
        reason: FailureReason::PodDeleted,
        detail: None,
    }
}

fn reason(workload: &Workload) -> Option<FailureReason> {
    match workload {
        Workload::Failed { reason, .. } => Some(*reason),
        _ => None,
    }
}

const RAN: Pods<'static> = Pods {
    current: None,
    followed: Some("pod-1"),
};

#[test]
fn a_queue_that_stops_a_running_job_fails_a_task_that_does_not_retry() {
    let once = queued(json!({"spec": {"suspend": true, "backoffLimit": 0, "template": {}}}));
    // Its pod being stopped; or gone, the tool having run before (the recorded pod).
    for (workload, pods) in [(deleted(), Pods::default()), (starting(), RAN)] {
        let seen = adjust(workload, Some(&once), pods);
        assert_eq!(reason(&seen), Some(FailureReason::Preempted), "{seen:?}");
        let Workload::Failed { detail, .. } = seen else {
            unreachable!()
        };
        assert!(
            detail
                .unwrap()
                .starts_with("Queue tasks suspended the Job while the tool ran")
        );
    }
    assert!(
        FailureReason::Preempted.stops_job(),
        "the queue must not run it again"
    );
}

#[test]
fn a_queue_that_stops_a_running_job_makes_a_retrying_task_wait_again() {
    let retrying = queued(json!({"spec": {"suspend": true, "backoffLimit": 1, "template": {}}}));
    for (workload, pods) in [(deleted(), Pods::default()), (starting(), RAN)] {
        assert_eq!(
            adjust(workload, Some(&retrying), pods),
            Workload::Starting {
                detail: "Preempted by queue tasks; waiting for admission again".to_owned()
            }
        );
    }
}

#[test]
fn a_pod_beside_a_suspended_job_that_never_ran_is_still_admission() {
    // The Job cache may lag the resume that created the pod: no preemption without a stop.
    let once = queued(json!({"spec": {"suspend": true, "template": {}}}));
    let pending = Pods {
        current: Some("pod-1"),
        followed: None,
    };
    let seen = adjust(starting(), Some(&once), pending);
    assert_eq!(
        seen,
        Workload::Starting {
            detail: "Waiting for admission by queue tasks".to_owned()
        }
    );
    assert_eq!(
        adjust(Workload::Running, Some(&once), pending),
        Workload::Running
    );
}

#[test]
fn a_second_pod_of_a_job_that_does_not_retry_is_a_preemption_seen_late() {
    let resumed = queued(json!({"spec": {"suspend": false, "backoffLimit": 0, "template": {}}}));
    let second = Pods {
        current: Some("pod-2"),
        followed: Some("pod-1"),
    };
    for workload in [starting(), Workload::Running] {
        let seen = adjust(workload, Some(&resumed), second);
        assert_eq!(reason(&seen), Some(FailureReason::Preempted), "{seen:?}");
    }
    // The same pod, or a retrying Job's next pod, runs on.
    let same = Pods {
        current: Some("pod-1"),
        followed: Some("pod-1"),
    };
    assert_eq!(
        adjust(Workload::Running, Some(&resumed), same),
        Workload::Running
    );
    let retrying = queued(json!({"spec": {"backoffLimit": 1, "template": {}}}));
    assert_eq!(
        adjust(Workload::Running, Some(&retrying), second),
        Workload::Running
    );
}

#[test]
fn a_tool_exit_is_never_turned_into_a_retry() {
    let retrying = job(json!({"spec": {"backoffLimit": 2, "template": {}}}));
    let exited = Workload::Exited { exit_code: 1 };
    assert_eq!(
        adjust(exited.clone(), Some(&retrying), Pods::default()),
        exited
    );
}

#[test]
fn the_attempt_shows_from_the_second_pod_on() {
    let second = job(json!({
        "spec": {"backoffLimit": 2, "template": {}},
        "status": {"failed": 1, "active": 1},
    }));
    let mut running = Decision::just(Outcome::Working {
        message: "Running".to_owned(),
    });
    annotate(&mut running, Some(&second));
    annotate(&mut running, Some(&second));
    assert_eq!(
        running.outcome,
        Outcome::Working {
            message: "Running (attempt 2 of 3)".to_owned()
        }
    );
    let mut done = Decision::just(Outcome::Completed {
        message: None,
        result: Map::new(),
    });
    let succeeded = job(json!({
        "spec": {"backoffLimit": 2, "template": {}},
        "status": {"failed": 1, "succeeded": 1},
    }));
    annotate(&mut done, Some(&succeeded));
    assert!(matches!(
        done.outcome,
        Outcome::Completed { message: Some(m), .. } if m == "Completed (attempt 2 of 3)"
    ));

    // The first pod, running or failed by the tool's own exit: no attempt to show.
    for status in [json!({"active": 1}), json!({"failed": 1})] {
        let first = job(json!({"spec": {"backoffLimit": 2, "template": {}}, "status": status}));
        let mut untouched = Decision::just(Outcome::Working {
            message: "Running".to_owned(),
        });
        annotate(&mut untouched, Some(&first));
        assert_eq!(
            untouched.outcome,
            Outcome::Working {
                message: "Running".to_owned()
            }
        );
    }
}
