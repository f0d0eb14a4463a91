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
    let seen = adjust(starting(), Some(&queued));
    assert_eq!(
        seen,
        Workload::Starting {
            detail: "Waiting for admission by queue team-a".to_owned()
        }
    );
    // Once admitted (resumed), it starts as any Job.
    let admitted = job(json!({"spec": {"suspend": false, "template": {}}}));
    assert_eq!(adjust(starting(), Some(&admitted)), starting());
}

#[test]
fn an_eviction_is_a_retry_only_for_a_retrying_job_that_has_not_failed() {
    let retrying = job(json!({"spec": {"backoffLimit": 2, "template": {}}}));
    let Workload::Starting { detail } = adjust(evicted(), Some(&retrying)) else {
        panic!("not a retry");
    };
    assert_eq!(detail, "Retrying after a disruption: EvictionByEvictionAPI");

    let deleted = Workload::Failed {
        reason: FailureReason::PodDeleted,
        detail: None,
    };
    let Workload::Starting { detail } = adjust(deleted, Some(&retrying)) else {
        panic!("a deleted pod of a retrying Job is no retry");
    };
    assert_eq!(detail, "Retrying after a disruption");

    let once = job(json!({"spec": {"backoffLimit": 0, "template": {}}}));
    assert_eq!(adjust(evicted(), Some(&once)), evicted());

    let failed = job(json!({
        "spec": {"backoffLimit": 2, "template": {}},
        "status": {"failed": 3, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]},
    }));
    assert_eq!(adjust(evicted(), Some(&failed)), evicted());
}

#[test]
fn a_tool_exit_is_never_turned_into_a_retry() {
    let retrying = job(json!({"spec": {"backoffLimit": 2, "template": {}}}));
    let exited = Workload::Exited { exit_code: 1 };
    assert_eq!(adjust(exited.clone(), Some(&retrying)), exited);
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
