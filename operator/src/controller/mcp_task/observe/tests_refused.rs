//! When a starting task's Job is worth a look at its `FailedCreate` Events (a request).

use super::refusal_possible;
use super::tests::{LIMITS, at, job};

#[test]
fn only_a_synced_job_without_a_pod_past_the_grace_period_may_be_refused() {
    let late = at("2026-08-01T12:00:30Z");
    // The Job controller has not synced the Job: it has tried nothing yet.
    assert!(!refusal_possible(&job("{}"), &LIMITS, late));
    assert!(!refusal_possible(&job("{active: 0}"), &LIMITS, late));
    let synced = job("{startTime: '2026-08-01T12:00:00Z', ready: 0}");
    assert!(
        !refusal_possible(&synced, &LIMITS, at("2026-08-01T12:00:29Z")),
        "a refusal is never older than the first sync: none can be past the grace period yet"
    );
    assert!(refusal_possible(&synced, &LIMITS, late));
    // The Job has its pod (the operator's cache has not shown it yet): nothing was refused.
    let running = job("{startTime: '2026-08-01T12:00:00Z', active: 1}");
    assert!(!refusal_possible(&running, &LIMITS, late));
}
