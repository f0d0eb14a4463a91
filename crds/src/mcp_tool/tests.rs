//! Unit tests of the McpTool helpers and of its serde defaults.

use super::*;
use crate::start_input::{ElicitationMode, ElicitationParams, StartInputMethod};

fn tool(yaml: &str) -> McpTool {
    serde_yaml::from_str(yaml).expect("fixture is an McpTool")
}

const MINIMAL: &str = r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTool
metadata: {name: echo, namespace: tools, generation: 2}
spec:
  inputSchema: {type: object}
  template:
    spec:
      containers: [{name: main, image: "localhost/busybox:1.35"}]
"#;

#[test]
fn absent_fields_take_the_documented_defaults() {
    let tool = tool(MINIMAL);
    assert_eq!(tool.spec.task_support, TaskSupport::Optional);
    assert_eq!(tool.spec.ttl_ms, DEFAULT_TTL_MS);
    assert_eq!(tool.spec.poll_interval_ms, DEFAULT_POLL_INTERVAL_MS);
    assert_eq!(tool.spec.sync_timeout_seconds, DEFAULT_SYNC_TIMEOUT_SECONDS);
    assert_eq!(
        tool.spec.cancel_grace_period_seconds,
        DEFAULT_CANCEL_GRACE_PERIOD_SECONDS
    );
    assert_eq!(tool.task_ttl_ms(), Some(DEFAULT_TTL_MS));
}

#[test]
fn mcp_name_defaults_to_metadata_name() {
    let mut tool = tool(MINIMAL);
    assert_eq!(tool.mcp_name(), "echo");
    tool.spec.name = Some("restock_report".into());
    assert_eq!(tool.mcp_name(), "restock_report");
}

#[test]
fn the_only_container_or_the_one_named_tool_is_the_tool() {
    let mut tool = tool(MINIMAL);
    assert_eq!(tool.tool_container().map(|c| c.name.as_str()), Some("main"));
    let pod = tool.spec.template.spec.as_mut().expect("pod spec");
    let mut sidecar = pod.containers[0].clone();
    sidecar.name = "sidecar".into();
    pod.containers.insert(0, sidecar.clone());
    assert_eq!(tool.tool_container(), None);
    let pod = tool.spec.template.spec.as_mut().expect("pod spec");
    pod.containers[1].name = TOOL_CONTAINER_NAME.into();
    assert_eq!(tool.tool_container().map(|c| c.name.as_str()), Some("tool"));
    tool.spec.template.spec = None;
    assert_eq!(tool.tool_container(), None);
}

#[test]
fn zero_ttl_means_unlimited() {
    let mut tool = tool(MINIMAL);
    tool.spec.ttl_ms = 0;
    assert_eq!(tool.task_ttl_ms(), None);
}

#[test]
fn ready_needs_a_true_condition_for_the_current_generation() {
    let mut tool = tool(MINIMAL);
    assert!(!tool.is_ready());
    let condition: Condition = serde_json::from_value(serde_json::json!({
        "type": "Ready", "status": "True", "reason": "Valid", "message": "",
        "lastTransitionTime": "2026-08-01T12:00:00Z"
    }))
    .expect("condition");
    tool.status = Some(McpToolStatus {
        conditions: vec![condition],
        observed_generation: Some(1),
        ..McpToolStatus::default()
    });
    assert!(!tool.is_ready(), "status describes an older generation");
    if let Some(status) = tool.status.as_mut() {
        status.observed_generation = Some(2);
    }
    assert!(tool.is_ready());
}

#[test]
fn start_inputs_serialize_as_mcp_input_requests() {
    let input = StartInput {
        method: StartInputMethod::ElicitationCreate,
        params: ElicitationParams {
            mode: ElicitationMode::Form,
            message: "Continue?".into(),
            requested_schema: serde_json::from_value(serde_json::json!({"type": "object"})).ok(),
            url: None,
        },
    };
    assert_eq!(
        serde_json::to_value(&input).expect("json"),
        serde_json::json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Continue?", "requestedSchema": {"type": "object"}}
        })
    );
}

#[test]
fn the_schema_bounds_are_the_documented_constants() {
    use kube::CustomResourceExt;
    let crd = serde_json::to_value(McpTool::crd()).expect("CRD as JSON");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let bounds = |field: &str| {
        (
            spec[field]["minimum"].as_f64(),
            spec[field]["maximum"].as_f64(),
        )
    };
    #[allow(clippy::cast_precision_loss)]
    let expected = |min: i64, max: i64| (Some(min as f64), Some(max as f64));
    assert_eq!(
        bounds("pollIntervalMs"),
        expected(MIN_POLL_INTERVAL_MS, MAX_POLL_INTERVAL_MS)
    );
    assert_eq!(
        bounds("immediateResultMs"),
        expected(0, MAX_IMMEDIATE_RESULT_MS)
    );
    assert_eq!(tool(MINIMAL).spec.immediate_result_ms, 0);
}
