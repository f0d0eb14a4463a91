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
        created_at: Some(ts("2026-08-01T12:00:00Z")),
        expires_at: Some(ts("2026-08-01T13:00:00Z")),
        generation: Some(1),
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
