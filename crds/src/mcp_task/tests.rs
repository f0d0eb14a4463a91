//! Unit tests of the McpTask helpers: status fallbacks, expiry, cancel, outstanding input.

use serde_json::json;

use super::*;

fn task(yaml: &str) -> McpTask {
    serde_yaml::from_str(yaml).expect("fixture is an McpTask")
}

const NEW: &str = r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTask
metadata: {name: mzxw6ytbmzxw6ytbmzxw6ytbmzxw6ytb, creationTimestamp: "2026-08-01T12:00:00Z"}
spec: {tool: echo, owner: alice, ttlMs: 60000}
"#;

fn at(text: &str) -> Timestamp {
    text.parse().expect("timestamp")
}

#[test]
fn a_task_without_status_is_working_since_its_creation() {
    let task = task(NEW);
    assert_eq!(task.task_id(), "mzxw6ytbmzxw6ytbmzxw6ytbmzxw6ytb");
    assert_eq!(task.task_status(), TaskStatus::Working);
    assert!(!task.is_terminal());
    assert_eq!(task.created_at(), Some(at("2026-08-01T12:00:00Z")));
    assert_eq!(task.last_updated_at(), task.created_at());
}

#[test]
fn status_times_win_over_metadata() {
    let mut task = task(NEW);
    task.status = Some(McpTaskStatus {
        created_at: Some(Time(at("2026-08-01T11:59:59Z"))),
        last_updated_at: Some(Time(at("2026-08-01T12:00:05Z"))),
        ..McpTaskStatus::default()
    });
    assert_eq!(task.created_at(), Some(at("2026-08-01T11:59:59Z")));
    assert_eq!(task.last_updated_at(), Some(at("2026-08-01T12:00:05Z")));
}

#[test]
fn expiry_is_creation_plus_ttl_and_never_without_ttl() {
    let mut task = task(NEW);
    assert_eq!(task.expires_at(), Some(at("2026-08-01T12:01:00Z")));
    // Not ended: never expired, even past its expiry (the operator may be away).
    assert!(!task.is_expired(at("2026-08-01T12:01:00Z")));
    task.status = Some(McpTaskStatus {
        status: TaskStatus::Completed,
        ..McpTaskStatus::default()
    });
    assert!(!task.is_expired(at("2026-08-01T12:00:59Z")));
    assert!(task.is_expired(at("2026-08-01T12:01:00Z")));
    task.spec.ttl_ms = None;
    assert_eq!(task.expires_at(), None);
    assert!(!task.is_expired(at("2999-01-01T00:00:00Z")));
}

#[test]
fn an_extended_expiry_moves_the_ttl_later_and_never_earlier() {
    let mut task = task(NEW);
    let extended = |at: Timestamp| McpTaskStatus {
        status: TaskStatus::Failed,
        expires_at: Some(Time(at)),
        ..McpTaskStatus::default()
    };
    task.status = Some(extended(at("2026-08-01T12:05:00Z")));
    assert_eq!(task.expires_at(), Some(at("2026-08-01T12:05:00Z")));
    assert_eq!(task.ttl_ms(), Some(300_000));
    assert!(!task.is_expired(at("2026-08-01T12:04:59Z")));
    assert!(task.is_expired(at("2026-08-01T12:05:00Z")));
    // An older expiresAt never shortens the requested TTL.
    task.status = Some(extended(at("2026-08-01T12:00:30Z")));
    assert_eq!(task.expires_at(), Some(at("2026-08-01T12:01:00Z")));
    assert_eq!(task.ttl_ms(), Some(60_000));
    task.spec.ttl_ms = None;
    assert_eq!(task.expires_at(), None);
    assert_eq!(task.ttl_ms(), None);
}

#[test]
fn cancel_is_requested_by_the_annotation() {
    let mut task = task(NEW);
    assert!(!task.is_cancel_requested());
    task.metadata.annotations = Some(
        [(
            CANCEL_REQUESTED_ANNOTATION.to_string(),
            "2026-08-01T12:00:30Z".to_string(),
        )]
        .into(),
    );
    assert!(task.is_cancel_requested());
}

#[test]
fn terminal_statuses_are_completed_failed_and_cancelled() {
    let terminal: Vec<TaskStatus> = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ]
    .into_iter()
    .filter(|s| s.is_terminal())
    .collect();
    assert_eq!(
        terminal,
        [
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled
        ]
    );
    for status in [TaskStatus::InputRequired, TaskStatus::Cancelled] {
        assert_eq!(serde_json::to_value(status).expect("json"), status.as_str());
    }
}

#[test]
fn outstanding_input_requests_skip_answered_keys_and_other_statuses() {
    let mut task = task(NEW);
    let request = json!({"method": "elicitation/create", "params": {"message": "ok?"}});
    task.status = Some(McpTaskStatus {
        status: TaskStatus::InputRequired,
        input_requests: Some([("a".into(), request.clone()), ("b".into(), request)].into()),
        ..McpTaskStatus::default()
    });
    assert_eq!(task.outstanding_input_requests().len(), 2);
    task.spec.input_responses = Some([("a".into(), json!({"action": "accept"}).into())].into());
    let keys: Vec<&str> = task.outstanding_input_requests().into_keys().collect();
    assert_eq!(keys, ["b"]);
    if let Some(status) = task.status.as_mut() {
        status.status = TaskStatus::Working;
    }
    assert!(task.outstanding_input_requests().is_empty());
}
