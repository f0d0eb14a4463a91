//! [`admission_deadline`]: a Job its queue never admits (a LocalQueue that does not exist, or
//! one that never has the quota) ends its task `NotAdmitted` after the admission timeout.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

use super::*;

const HOUR: SignedDuration = SignedDuration::from_secs(3600);

fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

fn job(value: serde_json::Value) -> Job {
    serde_json::from_value(value).unwrap()
}

/// A Job of queue `no-such-queue`, created suspended at 12:00 (the Job controller's
/// `Suspended` condition says since when).
fn waiting() -> Job {
    job(json!({
        "metadata": {"creationTimestamp": "2026-08-01T11:59:58Z",
                     "labels": {QUEUE_NAME_LABEL: "no-such-queue"}},
        "spec": {"suspend": true, "template": {}},
        "status": {"conditions": [{"type": "Suspended", "status": "True",
            "reason": "JobSuspended", "lastTransitionTime": "2026-08-01T12:00:00Z"}]},
    }))
}

fn seen(job: &Job) -> Workload {
    let starting = Workload::Starting {
        detail: "Waiting for the Job to create a pod".to_owned(),
    };
    adjust(starting, Some(job), Pods::default())
}

#[test]
fn a_job_never_admitted_fails_not_admitted_after_the_admission_timeout() {
    let queued = waiting();
    let (early, wake) = admission_deadline(
        seen(&queued),
        Some(&queued),
        HOUR,
        at("2026-08-01T12:59:00Z"),
    );
    assert_eq!(
        early,
        Workload::Starting {
            detail: "Waiting for admission by queue no-such-queue".to_owned()
        }
    );
    assert_eq!(wake, Some(SignedDuration::from_secs(60)));
    let (late, _) = admission_deadline(
        seen(&queued),
        Some(&queued),
        HOUR,
        at("2026-08-01T13:00:00Z"),
    );
    let Workload::Failed { reason, detail } = late else {
        panic!("still waiting: {late:?}");
    };
    assert_eq!(reason, FailureReason::NotAdmitted);
    assert!(
        reason.stops_job(),
        "the Job, and so the queue's Workload, goes"
    );
    let detail = detail.unwrap();
    assert!(
        detail.contains("queue no-such-queue") && detail.contains("3600s"),
        "{detail}"
    );
}

#[test]
fn the_admission_clock_counts_from_the_jobs_creation_until_the_job_controller_marks_it() {
    let fresh = job(json!({
        "metadata": {"creationTimestamp": "2026-08-01T12:00:00Z"},
        "spec": {"suspend": true, "template": {}},
    }));
    let (late, _) =
        admission_deadline(seen(&fresh), Some(&fresh), HOUR, at("2026-08-01T13:00:00Z"));
    assert!(
        matches!(
            late,
            Workload::Failed {
                reason: FailureReason::NotAdmitted,
                ..
            }
        ),
        "{late:?}"
    );
}

#[test]
fn an_admitted_job_or_a_running_tool_is_not_under_the_admission_timeout() {
    let admitted = job(json!({
        "metadata": {"creationTimestamp": "2026-08-01T12:00:00Z"},
        "spec": {"suspend": false, "template": {}},
    }));
    let next_day = at("2026-08-02T12:00:00Z");
    let (workload, wake) = admission_deadline(seen(&admitted), Some(&admitted), HOUR, next_day);
    assert!(matches!(workload, Workload::Starting { .. }));
    assert_eq!(wake, None);
    let queued = waiting();
    let (workload, wake) = admission_deadline(Workload::Running, Some(&queued), HOUR, next_day);
    assert_eq!(workload, Workload::Running);
    assert_eq!(wake, None);
}
