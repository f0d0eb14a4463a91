//! Wire mapping tests: each McpTask fixture under `tests/fixtures/wire/` against the JSON the
//! Tasks extension prescribes for it (`docs/DESIGN.md`).

use serde_json::{Value, json};

use super::*;
use crate::mcp_task::McpTaskStatus;

use super::read_fixture as fixture;

fn task(case: &str) -> McpTask {
    serde_yaml::from_str(&fixture(&format!("{case}.yaml"))).expect("fixture is an McpTask")
}

fn expected(case: &str, kind: &str) -> Value {
    serde_json::from_str(&fixture(&format!("{case}.{kind}.json"))).expect("fixture is JSON")
}

/// The `tasks/get` result of `task`: the detailed task plus the `resultType` the front end's
/// rmcp type adds.
fn get_result(task: &McpTask) -> Value {
    let mut json = serde_json::to_value(build_detailed_task(task).expect("maps")).expect("json");
    json["resultType"] = json!("complete");
    json
}

fn get_json(case: &str) -> Value {
    get_result(&task(case))
}

/// The `CreateTaskResult` of `case`: the handle plus `resultType: task`.
fn create_json(case: &str) -> Value {
    let mut json = serde_json::to_value(build_task(&task(case)).expect("maps")).expect("json");
    json["resultType"] = json!("task");
    json
}

#[test]
fn get_task_result_matches_fixture_for_every_status() {
    for case in FIXTURE_CASES {
        assert_eq!(get_json(case), expected(case, "get"), "case {case}");
    }
}

#[test]
fn create_task_result_is_flat_with_result_type_task() {
    for case in ["new", "working"] {
        assert_eq!(create_json(case), expected(case, "create"), "case {case}");
    }
}

#[test]
fn create_task_result_never_inlines_payloads() {
    for case in FIXTURE_CASES {
        let json = create_json(case);
        assert_eq!(json["resultType"], "task", "case {case}");
        for key in [
            "result",
            "error",
            "inputRequests",
            "requestState",
            "task",
            "ttl",
        ] {
            assert!(json.get(key).is_none(), "case {case} has {key}");
        }
    }
}

#[test]
fn ttl_ms_is_always_present_and_null_when_unlimited() {
    for case in FIXTURE_CASES {
        let get = get_json(case);
        assert!(
            get.as_object().expect("object").contains_key("ttlMs"),
            "case {case}"
        );
        let ttl = &get["ttlMs"];
        assert!(
            ttl.is_null() || ttl.as_i64().is_some_and(|t| t > 0),
            "case {case}"
        );
    }
    assert_eq!(get_json("new")["ttlMs"], Value::Null);
    assert!(
        serde_json::to_string(&create_json("new"))
            .expect("json")
            .contains("\"ttlMs\":null")
    );
}

#[test]
fn poll_interval_ms_is_absent_when_unset() {
    assert!(get_json("new").get("pollIntervalMs").is_none());
    assert!(get_json("cancelled").get("pollIntervalMs").is_none());
    assert_eq!(get_json("working")["pollIntervalMs"], 2000);
}

#[test]
fn payload_keys_appear_only_with_their_status() {
    for case in FIXTURE_CASES {
        let get = get_json(case);
        let status = get["status"].as_str().expect("status is a string");
        assert_eq!(
            get.get("result").is_some(),
            status == "completed",
            "case {case}"
        );
        assert_eq!(
            get.get("error").is_some(),
            status == "failed",
            "case {case}"
        );
        assert_eq!(
            get.get("inputRequests").is_some(),
            status == "input_required",
            "case {case}"
        );
        assert!(get.get("requestState").is_none(), "case {case}");
        if let Some(result) = get.get("result") {
            assert_eq!(result["resultType"], "complete", "case {case}");
            assert!(result["content"].is_array(), "case {case}");
        }
    }
}

#[test]
fn answered_input_requests_are_dropped() {
    let get = get_json("input_required");
    let keys: Vec<&String> = get["inputRequests"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(keys, ["approve-1"]);
}

#[test]
fn all_answers_given_reports_working_until_the_operator_resumes() {
    let task = task("input_answered");
    assert_eq!(task.task_status(), TaskStatus::InputRequired);
    assert!(task.outstanding_input_requests().is_empty());
    assert_eq!(get_json("input_answered")["status"], "working");
}

#[test]
fn result_type_complete_overrides_and_related_task_meta_is_removed() {
    let get = get_json("completed");
    assert!(get["result"].get("_meta").is_none());
    let mut task = task("completed");
    let status = task.status.as_mut().expect("status");
    let mut result = status
        .result
        .as_ref()
        .and_then(RawJson::to_map)
        .expect("result");
    result.insert("resultType".into(), json!("task"));
    result.remove("content");
    status.result = Some(RawJson::from(result));
    let get = get_result(&task);
    assert_eq!(get["result"]["resultType"], "complete");
    assert_eq!(get["result"]["content"], json!([]));
}

#[test]
fn status_fields_fall_back_to_creation_timestamp() {
    let mut task = task("working");
    task.status = Some(McpTaskStatus {
        status: TaskStatus::Working,
        ..McpTaskStatus::default()
    });
    let json = serde_json::to_value(build_task(&task).expect("maps")).expect("json");
    assert_eq!(json["createdAt"], "2026-08-01T12:00:00Z");
    assert_eq!(json["lastUpdatedAt"], "2026-08-01T12:00:00Z");
}

#[test]
fn inconsistent_objects_are_errors_not_panics() {
    let mut never_stored = task("new");
    never_stored.metadata.creation_timestamp = None;
    assert!(matches!(
        build_task(&never_stored),
        Err(WireError::MissingCreationTime { .. })
    ));
    let without = |case: &str, strip: fn(&mut McpTaskStatus)| {
        let mut task = task(case);
        if let Some(status) = task.status.as_mut() {
            strip(status);
        }
        build_detailed_task(&task)
    };
    assert!(matches!(
        without("completed", |s| s.result = None),
        Err(WireError::MissingResult { .. })
    ));
    assert!(matches!(
        without("failed", |s| s.error = None),
        Err(WireError::MissingError { .. })
    ));
}

#[test]
fn input_requests_respect_declared_capabilities() {
    let form = json!({"method": "elicitation/create", "params": {"message": "ok?"}});
    let url = json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}});
    let sampling = json!({"method": "sampling/createMessage", "params": {}});
    let caps = |v: Value| v.as_object().cloned().expect("object");
    assert!(input_request_allowed(None, &url));
    let bare = caps(json!({"elicitation": {}}));
    assert!(input_request_allowed(Some(&bare), &form));
    assert!(!input_request_allowed(Some(&bare), &url));
    assert!(!input_request_allowed(Some(&bare), &sampling));
    let url_only = caps(json!({"elicitation": {"url": {}}}));
    assert!(!input_request_allowed(Some(&url_only), &form));
    assert!(input_request_allowed(Some(&url_only), &url));
    let none = caps(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    assert!(!input_request_allowed(Some(&none), &form));
    assert!(input_request_allowed(
        Some(&caps(json!({"sampling": {}}))),
        &sampling
    ));
}

#[test]
fn times_are_rfc3339_utc_whole_seconds() {
    let time: Timestamp = "2026-08-01T12:00:00.123456Z".parse().expect("timestamp");
    assert_eq!(format_time(time), "2026-08-01T12:00:00Z");
}
