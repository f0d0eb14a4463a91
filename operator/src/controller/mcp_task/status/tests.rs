//! Tests for status composition, lastUpdatedAt, coalescing and transition Events.

use std::collections::BTreeMap;

use mcp_task_operator_crds::TaskError;
use serde_json::{Map, json};

use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn ctx(now: &str) -> StatusContext {
    StatusContext {
        job_name: Some("t".into()),
        job_uid: None,
        created_at: Some(ts("2026-08-01T12:00:00Z")),
        expires_at: Some(ts("2026-08-01T13:00:00Z")),
        poll_interval_ms: Some(2_000),
        generation: Some(1),
        checkpoint: None,
        now: ts(now),
    }
}

fn working(message: &str) -> Outcome {
    Outcome::Working {
        message: message.into(),
    }
}

#[test]
fn first_write_sets_every_field() {
    let s = next_status(None, &working("Running"), &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(s.status, TaskStatus::Working);
    assert_eq!(s.status_message.as_deref(), Some("Running"));
    assert_eq!(s.created_at, Some(Time(ts("2026-08-01T12:00:00Z"))));
    assert_eq!(s.last_updated_at, Some(Time(ts("2026-08-01T12:00:01Z"))));
    assert_eq!(s.expires_at, Some(Time(ts("2026-08-01T13:00:00Z"))));
    assert_eq!(s.job_name.as_deref(), Some("t"));
    assert_eq!(s.observed_generation, Some(1));
}

#[test]
fn last_updated_at_moves_only_with_visible_changes() {
    let first = next_status(None, &working("1 of 2"), &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(
        next_status(
            Some(&first),
            &working("1 of 2"),
            &ctx("2026-08-01T12:00:09Z")
        ),
        None
    );

    let mut later = ctx("2026-08-01T12:00:09Z");
    later.generation = Some(2);
    let regen = next_status(Some(&first), &working("1 of 2"), &later).unwrap();
    assert_eq!(
        regen.last_updated_at, first.last_updated_at,
        "generation is not client-visible"
    );

    let moved = next_status(
        Some(&first),
        &working("2 of 2"),
        &ctx("2026-08-01T12:00:09Z"),
    )
    .unwrap();
    assert_eq!(
        moved.last_updated_at,
        Some(Time(ts("2026-08-01T12:00:09Z")))
    );
    assert_eq!(moved.created_at, first.created_at);
}

#[test]
fn terminal_status_never_changes() {
    let result = Map::from_iter([("content".to_owned(), json!([]))]);
    let done = Outcome::Completed {
        message: None,
        result,
    };
    let s = next_status(None, &done, &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(s.status, TaskStatus::Completed);
    assert!(s.result.is_some() && s.error.is_none() && s.input_requests.is_none());
    let failed = Outcome::Failed {
        message: "m".into(),
        error: TaskError {
            code: -32603,
            message: "m".into(),
            data: None,
        },
    };
    assert_eq!(
        next_status(Some(&s), &failed, &ctx("2026-08-01T12:00:02Z")),
        None
    );
}

#[test]
fn input_required_carries_requests_and_working_drops_them() {
    let requests = BTreeMap::from([("a".to_owned(), json!({"method": "roots/list"}))]);
    let ask = Outcome::InputRequired {
        message: "Waiting for input".into(),
        requests,
    };
    let s = next_status(None, &ask, &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(s.status, TaskStatus::InputRequired);
    assert_eq!(s.input_requests.as_ref().unwrap().len(), 1);
    let resumed = next_status(Some(&s), &working("Running"), &ctx("2026-08-01T12:00:02Z")).unwrap();
    assert_eq!(resumed.input_requests, None);
}

#[test]
fn failed_status_carries_error_and_message() {
    let failed = Outcome::Failed {
        message: "The tool container was killed".into(),
        error: TaskError {
            code: -32603,
            message: "oom".into(),
            data: Some(json!({"reason": "OOMKilled"})),
        },
    };
    let s = next_status(None, &failed, &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(s.status, TaskStatus::Failed);
    assert_eq!(s.error.unwrap().data.unwrap()["reason"], "OOMKilled");
    assert_eq!(
        s.status_message.as_deref(),
        Some("The tool container was killed")
    );
}

#[test]
fn writes_are_coalesced_but_terminal_ones_are_not() {
    use TaskStatus::{Completed, Working};
    let second = Duration::from_secs(1);
    let soon = Some(Duration::from_millis(300));
    assert_eq!(write_delay(None, second, None, Working), Duration::ZERO);
    assert_eq!(
        write_delay(soon, second, Some(Working), Working),
        Duration::from_millis(700)
    );
    assert_eq!(
        write_delay(Some(Duration::from_secs(5)), second, Some(Working), Working),
        Duration::ZERO
    );
    assert_eq!(
        write_delay(soon, second, Some(Working), Completed),
        Duration::ZERO
    );
}

/// Found end to end: an answer that arrived within a second of `input_required` being written
/// was coalesced away, so the task showed `input_required` until the tool's result and never
/// went back to `working`.
#[test]
fn status_changes_are_written_at_once() {
    use TaskStatus::{InputRequired, Working};
    let second = Duration::from_secs(1);
    let soon = Some(Duration::from_millis(10));
    assert_eq!(
        write_delay(soon, second, Some(InputRequired), Working),
        Duration::ZERO
    );
    assert_eq!(
        write_delay(soon, second, Some(Working), InputRequired),
        Duration::ZERO
    );
    assert_eq!(
        write_delay(soon, second, Some(InputRequired), InputRequired),
        Duration::from_millis(990)
    );
}

#[test]
fn transitions_emit_one_event_each() {
    assert_eq!(
        transition_event(Some(TaskStatus::Working), &working("x")),
        None
    );
    let ask = Outcome::InputRequired {
        message: "m".into(),
        requests: BTreeMap::new(),
    };
    assert_eq!(
        transition_event(Some(TaskStatus::Working), &ask)
            .unwrap()
            .reason,
        "InputRequired"
    );
    assert_eq!(
        transition_event(Some(TaskStatus::InputRequired), &working("x"))
            .unwrap()
            .reason,
        "InputReceived"
    );
    let tool_error = Outcome::Completed {
        message: None,
        result: Map::from_iter([("isError".to_owned(), json!(true))]),
    };
    let e = transition_event(Some(TaskStatus::Working), &tool_error).unwrap();
    assert_eq!((e.reason, e.warning), ("CompletedWithError", true));
    let cancelled = Outcome::Cancelled {
        message: "Cancelled".into(),
    };
    let e = transition_event(Some(TaskStatus::Working), &cancelled).unwrap();
    assert_eq!((e.reason, e.warning), ("Cancelled", false));
}

fn checkpoint(pod_uid: &str, bytes: u64, warnings: u64) -> Checkpoint {
    Checkpoint {
        pod_uid: pod_uid.into(),
        bytes,
        warnings,
        at: None,
    }
}

#[test]
fn the_checkpoint_is_recorded_and_read_back() {
    let mut c = ctx("2026-08-01T12:00:01Z");
    c.checkpoint = Some(checkpoint("pod-1", 1234, 2));
    let s = next_status(None, &working("Running"), &c).unwrap();
    // Beside the task's Succeeded condition.
    let types: Vec<&str> = s.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["Succeeded", CHECKPOINT_CONDITION]);
    assert_eq!(
        s.conditions[1].message,
        "pod pod-1: 1234 log bytes read, 2 output warnings reported"
    );
    assert_eq!(checkpoint_of(&s), Some(checkpoint("pod-1", 1234, 2)));
    assert_eq!(checkpoint_of(&McpTaskStatus::default()), None);
}

#[test]
fn more_bytes_alone_cause_no_write_but_a_warning_or_a_new_pod_does() {
    let mut c = ctx("2026-08-01T12:00:01Z");
    c.checkpoint = Some(checkpoint("pod-1", 100, 1));
    let first = next_status(None, &working("Running"), &c).unwrap();
    c.checkpoint = Some(checkpoint("pod-1", 9000, 1));
    assert_eq!(next_status(Some(&first), &working("Running"), &c), None);
    c.checkpoint = Some(checkpoint("pod-1", 9000, 2));
    let warned = next_status(Some(&first), &working("Running"), &c).unwrap();
    assert_eq!(checkpoint_of(&warned), Some(checkpoint("pod-1", 9000, 2)));
    assert_eq!(
        warned.last_updated_at, first.last_updated_at,
        "the checkpoint is not client-visible"
    );
    c.checkpoint = Some(checkpoint("pod-1", 9500, 2));
    let asked = next_status(Some(&warned), &working("Asked"), &c).unwrap();
    assert_eq!(
        checkpoint_of(&asked),
        Some(checkpoint("pod-1", 9500, 2)),
        "a write for another reason records the bytes too"
    );
    c.checkpoint = Some(checkpoint("pod-2", 0, 0));
    let moved = next_status(Some(&warned), &working("Running"), &c).unwrap();
    assert_eq!(checkpoint_of(&moved), Some(checkpoint("pod-2", 0, 0)));
    assert_eq!(moved.conditions.len(), 2, "Succeeded and one checkpoint");
}

#[test]
fn a_status_over_the_object_budget_is_refused_with_the_sizes() {
    let mut task = crate::fixtures::task();
    let small = next_status(None, &working("Running"), &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(check_budget(&task, &small), Ok(()));
    let mut result = Map::new();
    result.insert("text".into(), json!("r".repeat(600_000)));
    let completed = Outcome::Completed {
        message: None,
        result,
    };
    let big = next_status(None, &completed, &ctx("2026-08-01T12:00:01Z")).unwrap();
    assert_eq!(check_budget(&task, &big), Ok(()), "600 KB alone fits");
    task.spec.client_capabilities = Some(Map::from_iter([(
        "blob".to_owned(),
        json!("c".repeat(500_000)),
    )]));
    let err = check_budget(&task, &big).unwrap_err();
    assert!(
        err.starts_with("the task would take 110")
            && err
                .ends_with("with this completed status; at most 1048576 bytes fit one task object"),
        "{err}"
    );
}

#[test]
fn only_a_final_refusal_of_a_status_write_fails_the_task() {
    let api = |code: u16, message: &str| crate::error::Error::Kube {
        op: crate::error::KubeOp::Patch,
        kind: "McpTask status",
        name: "t".into(),
        source: kube::Error::Api(
            kube::core::Status::failure(message, "Invalid")
                .with_code(code)
                .boxed(),
        ),
    };
    assert_eq!(
        refused_write(&api(413, "Request entity too large: limit is 3145728")).as_deref(),
        Some("HTTP 413: Request entity too large: limit is 3145728")
    );
    assert!(refused_write(&api(422, "status.status: Invalid value")).is_some());
    assert!(refused_write(&api(500, "etcdserver: request is too large")).is_some());
    assert_eq!(refused_write(&api(500, "etcdserver: leader changed")), None);
    assert_eq!(refused_write(&api(409, "conflict")), None);
}

#[test]
fn an_existing_job_is_confirmed_once_in_the_job_created_condition() {
    let mut c = ctx("2026-08-01T12:00:01Z");
    c.job_uid = Some("job-uid".into());
    let first = next_status(None, &working("Running"), &c).unwrap();
    let created: Vec<_> = first
        .conditions
        .iter()
        .filter(|c| c.type_ == super::super::job_record::JOB_CREATED_CONDITION)
        .collect();
    assert_eq!(created.len(), 1, "{:?}", first.conditions);
    assert_eq!(created[0].message, "Job t created (uid job-uid)");
    // Written once: the same Job later changes nothing.
    c.now = ts("2026-08-01T12:00:09Z");
    assert_eq!(next_status(Some(&first), &working("Running"), &c), None);
    // Without the Job at hand the confirmation stays.
    c.job_uid = None;
    let later = next_status(Some(&first), &working("Step 2"), &c).unwrap();
    assert!(super::super::job_record::confirmed(Some(&later)));
}
