//! The front end's mapping of tasks to the wire: the advised `pollIntervalMs` and hidden input
//! requests. That every input request the operator accepts reaches the client unchanged is
//! `tests/tests/wire_carry.rs` (it drives both crates).

use mcp_task_operator_crds::McpTask;
use serde_json::{Value, json};

use super::*;

fn task(status: &str, created: &str, extra: Value) -> McpTask {
    let mut task = json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
        "metadata": {"name": "t", "creationTimestamp": created},
        "spec": {"tool": "x", "owner": "o", "pollIntervalMs": 2000},
        "status": {"status": status},
    });
    merge(&mut task, extra);
    serde_json::from_value(task).expect("an McpTask")
}

fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, patch) => *base = patch,
    }
}

fn shown(task: &McpTask) -> Value {
    serde_json::to_value(detailed_task(task).expect("maps")).expect("serializes")
}

#[test]
fn poll_interval_is_raised_as_a_running_task_ages_and_kept_when_it_ends() {
    let young = task("working", &Timestamp::now().to_string(), json!({}));
    assert_eq!(shown(&young)["pollIntervalMs"], 2000);
    assert_eq!(
        serde_json::to_value(create_task_result(&young).expect("maps")).expect("json")["pollIntervalMs"],
        2000
    );
    let hour_ago = Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(3_600);
    let old = task("working", &hour_ago.to_string(), json!({}));
    assert_eq!(shown(&old)["pollIntervalMs"], 360_000);
    let done = task(
        "completed",
        &hour_ago.to_string(),
        json!({"status": {"result": {"content": []}}}),
    );
    assert_eq!(shown(&done)["pollIntervalMs"], 2000);
}

#[test]
fn a_task_asking_only_what_its_client_cannot_answer_shows_working() {
    let ask = json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Go?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}});
    let tasks_only = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let hidden = task(
        "input_required",
        "2026-08-01T12:00:00Z",
        json!({"spec": {"clientCapabilities": tasks_only},
               "status": {"inputRequests": {"go": ask.clone()}}}),
    );
    let json = shown(&hidden);
    assert_eq!(json["status"], "working", "{json}");
    assert!(json.get("inputRequests").is_none(), "{json}");

    let declared = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let visible = task(
        "input_required",
        "2026-08-01T12:00:00Z",
        json!({"spec": {"clientCapabilities": declared},
               "status": {"inputRequests": {"go": ask.clone()}}}),
    );
    let json = shown(&visible);
    assert_eq!(json["status"], "input_required");
    assert_eq!(json["inputRequests"]["go"], ask);
}

// Reads `crds/tests/fixtures/wire/<name>`: the JSON the Tasks extension prescribes for each
// stored state (`docs/DESIGN.md`).
use mcp_task_operator_crds::wire::read_fixture as fixture;

#[test]
fn rmcp_types_carry_every_fixture_state_exactly() {
    for case in mcp_task_operator_crds::wire::FIXTURE_CASES {
        let stored: McpTask = serde_yaml::from_str(&fixture(&format!("{case}.yaml"))).unwrap();
        let expected: Value = serde_json::from_str(&fixture(&format!("{case}.get.json"))).unwrap();
        // At creation, so the advised interval is the tool's own.
        let created = stored.created_at().expect("stored");
        let detailed = detailed_task_at(&stored, created).expect("maps");
        let get = rmcp::model::GetTaskResult::new(detailed);
        assert_eq!(serde_json::to_value(get).unwrap(), expected, "case {case}");
    }
    for case in ["new", "working"] {
        let stored: McpTask = serde_yaml::from_str(&fixture(&format!("{case}.yaml"))).unwrap();
        let expected: Value =
            serde_json::from_str(&fixture(&format!("{case}.create.json"))).unwrap();
        let mut created = serde_json::to_value(create_task_result(&stored).unwrap()).unwrap();
        // The fixture's interval is the tool's own; the seed advises it at once.
        if let Some(interval) = expected.get("pollIntervalMs") {
            created["pollIntervalMs"] = interval.clone();
        }
        assert_eq!(created, expected, "case {case}");
    }
}
