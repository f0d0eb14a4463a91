//! [`plan`]: what to do about a task's Job, without the API server.

use mcp_task_operator_crds::McpTaskStatus;
use serde_json::json;

use super::*;
use crate::fixtures::task;

fn ids() -> Ids {
    let t = task();
    Ids::of(&t).unwrap()
}

fn job_owned_by(uid: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": task().name_any(), "ownerReferences": [{
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
            "name": task().name_any(), "uid": uid, "controller": true}]},
    }))
    .unwrap()
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn recorded(confirmed: bool) -> McpTask {
    let mut t = task();
    let mut status = McpTaskStatus {
        job_name: Some(t.name_any()),
        ..McpTaskStatus::default()
    };
    if confirmed {
        job_record::confirm(
            &mut status.conditions,
            "j",
            "job-uid",
            at("2026-08-01T12:00:01Z"),
        );
    }
    t.status = Some(status);
    t
}

/// The fixture task was created at 12:00:00.
const SOON: &str = "2026-08-01T12:00:10Z";

/// The [`plan`] for `task` (with `job`, `cancel_at`, `fresh` as there) ten seconds after the
/// fixture task was created.
fn plan_soon(task: &McpTask, job: Option<&Job>, cancel_at: Option<Timestamp>, fresh: bool) -> Plan {
    plan(task, job, &ids(), cancel_at, at(SOON), fresh)
}

#[test]
fn a_new_task_records_then_creates_its_job() {
    let p = plan_soon(&task(), None, None, false);
    assert_eq!(p, Plan::Create { record: true });
}

#[test]
fn a_half_done_record_is_read_again_then_created_without_a_new_record() {
    let half = recorded(false);
    assert_eq!(plan_soon(&half, None, None, false), Plan::ReadAgain);
    let created = plan_soon(&half, None, None, true);
    assert_eq!(created, Plan::Create { record: false });
}

#[test]
fn a_confirmed_job_that_is_gone_is_never_created_again() {
    let confirmed = recorded(true);
    assert_eq!(plan_soon(&confirmed, None, None, false), Plan::NoJob);
    assert_eq!(plan_soon(&confirmed, None, None, true), Plan::NoJob);
}

#[test]
fn a_cancelled_task_gets_no_job() {
    let cancel = Some(at("2026-08-01T12:00:05Z"));
    assert_eq!(plan_soon(&task(), None, cancel, false), Plan::NoJob);
    assert_eq!(
        plan_soon(&recorded(false), None, cancel, false),
        Plan::NoJob
    );
}

#[test]
fn an_existing_job_is_used_and_an_earlier_tasks_is_waited_for_up_to_a_bound() {
    let own = job_owned_by(&ids().uid);
    assert_eq!(plan_soon(&task(), Some(&own), None, false), Plan::Use);
    let earlier = job_owned_by("earlier-task-uid");
    let wait = plan_soon(&task(), Some(&earlier), None, false);
    assert_eq!(wait, Plan::WaitForEarlier(task().name_any()));
    // Past the bound, or once the task recorded a Job of its own: used (then refused as
    // another's).
    let late = task()
        .created_at()
        .unwrap()
        .checked_add(EARLIER_JOB_WAIT)
        .unwrap();
    assert_eq!(
        plan(&task(), Some(&earlier), &ids(), None, late, false),
        Plan::Use
    );
    let r = recorded(false);
    assert_eq!(plan_soon(&r, Some(&earlier), None, false), Plan::Use);
}

/// The outcome's `error.data.reason`, or `None` for a Job to create.
fn refusal(task: &McpTask) -> Option<String> {
    let config = Config::from_lookup(|_| None).unwrap();
    match desired_job(task, Some(&crate::fixtures::tool()), &config) {
        Ok(_) => None,
        Err(Outcome::Failed { error, message }) => {
            let reason = error.data.unwrap()["reason"].as_str().unwrap().to_owned();
            Some(format!("{reason}: {message}"))
        }
        Err(other) => panic!("not a failure: {other:?}"),
    }
}

#[test]
fn a_task_runs_only_the_tool_object_and_generation_its_call_was_authorized_on() {
    // The fixture tool is `report`, UID `tool-uid`, generation 1.
    let bound = |uid: &str, generation: i64| {
        let mut t = task();
        t.spec.tool_uid = Some(uid.to_owned());
        t.spec.tool_generation = Some(generation);
        t
    };
    assert_eq!(refusal(&bound("tool-uid", 1)), None);
    assert_eq!(refusal(&task()), None, "a task of an earlier front end");
    let other = refusal(&bound("deleted-uid", 1)).expect("another object");
    assert!(
        other.starts_with("ToolChanged: ")
            && other.contains("has UID tool-uid, not the UID deleted-uid"),
        "{other}"
    );
    let edited = refusal(&bound("tool-uid", 2)).expect("another spec");
    assert!(
        edited.starts_with("ToolChanged: ")
            && edited.contains("generation 1, not the generation 2"),
        "{edited}"
    );
}
