//! When a starting task is looked at again for its start deadlines ([`start_wake`]).

use k8s_openapi::jiff::SignedDuration;

use super::tests::{LIMITS, at, job, pending, pod};
use super::{REFUSAL_POLL, start_deadline, start_wake};
use super::{Workload, observe_workload};

fn secs(s: i64) -> Option<SignedDuration> {
    Some(SignedDuration::from_secs(s))
}

#[test]
fn a_starting_pod_is_looked_at_again_when_its_soonest_deadline_passes_and_then_fails() {
    let pulling = pod(
        "metadata: {name: t-x, creationTimestamp: '2026-08-01T11:59:00Z'}\n\
         status: {phase: Pending, startTime: '2026-08-01T12:00:00Z', containerStatuses: \
         [{name: main, image: i, imageID: '', ready: false, restartCount: 0, \
         state: {waiting: {reason: ImagePullBackOff}}}]}",
    );
    let active = job("{active: 1}");
    let now = at("2026-08-01T12:01:30Z");
    // The pull grace (120 s) runs from the pod's start.
    assert_eq!(
        start_wake(Some(&pulling), Some(&active), &LIMITS, now),
        secs(30)
    );
    // At that time the deadline has passed: the wake-up is not early.
    let then = at("2026-08-01T12:02:00Z");
    let seen = observe_workload(Some(&active), Some(&pulling));
    assert!(matches!(
        start_deadline(seen, Some(&active), Some(&pulling), &LIMITS, then),
        Workload::Failed { .. }
    ));
    let unschedulable = pod(
        "metadata: {name: t-x, creationTimestamp: '2026-08-01T12:00:00Z'}\n\
         status: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', \
         reason: Unschedulable}]}",
    );
    // 300 s from the pod's creation.
    assert_eq!(
        start_wake(Some(&unschedulable), Some(&active), &LIMITS, now),
        secs(210)
    );
    let missing_secret = pending("{waiting: {reason: CreateContainerConfigError}}");
    assert_eq!(
        start_wake(Some(&missing_secret), Some(&active), &LIMITS, now),
        Some(REFUSAL_POLL),
        "a deadline already past (the run that saw it failed the task) looks again later"
    );
}

#[test]
fn a_start_with_no_clock_running_waits_for_a_change_of_its_pod_or_job() {
    let now = at("2026-08-01T12:10:00Z");
    let active = job("{active: 1}");
    // No time is known of the pod or the Job: only their next status changes anything.
    let scheduled = pod("status: {phase: Pending}");
    assert_eq!(
        start_wake(Some(&scheduled), Some(&active), &LIMITS, now),
        None
    );
    assert_eq!(start_wake(None, Some(&job("{}")), &LIMITS, now), None);
    assert_eq!(start_wake(None, None, &LIMITS, now), None);
}

#[test]
fn a_job_without_its_pod_is_looked_at_when_a_refusal_could_count_then_every_refusal_poll() {
    let synced = job("{startTime: '2026-08-01T12:00:00Z'}");
    let wake = |now| start_wake(None, Some(&synced), &LIMITS, at(now));
    assert_eq!(wake("2026-08-01T12:00:10Z"), secs(20));
    assert_eq!(wake("2026-08-01T12:00:30Z"), Some(REFUSAL_POLL));
    assert_eq!(wake("2026-08-01T12:05:00Z"), Some(REFUSAL_POLL));
}
