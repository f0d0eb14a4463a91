//! Tests for McpTool validation and its Ready condition, from inline YAML fixtures.

use serde_json::json;

use super::*;
use crate::fixtures::{tool, tool_from};

fn named(name: &str, uid: &str, created: &str, mcp_name: Option<&str>) -> McpTool {
    let mut t = tool();
    t.metadata.name = Some(name.into());
    t.metadata.uid = Some(uid.into());
    t.metadata.creation_timestamp = Some(Time(created.parse().unwrap()));
    t.spec.name = mcp_name.map(str::to_owned);
    t
}

fn invalid(t: &McpTool) -> ToolInvalid {
    validate_tool(t, std::slice::from_ref(t), &ToolPolicy::default()).unwrap_err()
}

#[test]
fn valid_tool_reports_name_and_image() {
    let t = tool();
    assert_eq!(
        validate_tool(&t, std::slice::from_ref(&t), &ToolPolicy::default()),
        Ok(ValidTool {
            mcp_name: "restock_report".into(),
            image: "example.com/report:1".into()
        })
    );
}

#[test]
fn invalid_tools_say_what_to_fix() {
    let mut bad_name = tool();
    bad_name.spec.name = Some("restock report".into());
    assert_eq!(invalid(&bad_name).reason(), "InvalidName");

    let mut no_image = tool();
    no_image.spec.template.spec.as_mut().unwrap().containers[0].image = None;
    assert_eq!(
        invalid(&no_image),
        ToolInvalid::NoImage {
            container: "main".into()
        }
    );

    let mut two = tool();
    let spec = two.spec.template.spec.as_mut().unwrap();
    spec.containers.push(spec.containers[0].clone());
    assert_eq!(invalid(&two), ToolInvalid::NoToolContainer);

    let mut not_object = tool();
    not_object.spec.input_schema = json!({"type": "string"}).as_object().unwrap().clone();
    assert_eq!(
        invalid(&not_object),
        ToolInvalid::SchemaNotObject {
            field: "inputSchema"
        }
    );

    let mut bad_schema = tool();
    bad_schema.spec.output_schema = Some(
        json!({"type": "object", "properties": {"n": {"type": "integr"}}})
            .as_object()
            .unwrap()
            .clone(),
    );
    let err = invalid(&bad_schema);
    assert_eq!(err.reason(), "InvalidSchema");
    assert!(
        err.to_string()
            .starts_with("spec.outputSchema is not a valid JSON Schema: "),
        "{err}"
    );

    let mut bad_pattern = tool();
    bad_pattern.spec.input_schema =
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "("}}})
            .as_object()
            .unwrap()
            .clone();
    assert_eq!(invalid(&bad_pattern).reason(), "InvalidSchema");
}

#[test]
fn start_inputs_must_be_valid_input_requests() {
    let t = tool_from(
        r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTool
metadata: {name: migrate, namespace: tools, uid: u}
spec:
  inputSchema: {type: object}
  startInputs:
    confirm:
      method: elicitation/create
      params: {message: "Really?", requestedSchema: {type: object, properties: {ok: {type: object}}}}
  template: {spec: {containers: [{name: tool, image: i}]}}
"#,
    );
    let err = invalid(&t);
    assert_eq!(err.reason(), "InvalidStartInput");
    assert!(err.to_string().contains("\"confirm\""), "{err}");
}

#[test]
fn oldest_tool_keeps_a_duplicate_mcp_name() {
    let old = named("a-old", "u1", "2026-08-01T10:00:00Z", Some("report"));
    let new = named("b-new", "u2", "2026-08-01T11:00:00Z", Some("report"));
    let other = named("c", "u3", "2026-08-01T09:00:00Z", Some("other"));
    let all = [old.clone(), new.clone(), other];
    assert!(validate_tool(&old, &all, &ToolPolicy::default()).is_ok());
    assert_eq!(
        validate_tool(&new, &all, &ToolPolicy::default()),
        Err(ToolInvalid::DuplicateName {
            name: "report".into(),
            other: "a-old".into()
        })
    );
    let mut deleting = old.clone();
    deleting.metadata.deletion_timestamp = Some(Time("2026-08-01T12:00:00Z".parse().unwrap()));
    assert!(
        validate_tool(&new, &[deleting, new.clone()], &ToolPolicy::default()).is_ok(),
        "a deleted tool frees its name"
    );
}

#[test]
fn default_mcp_name_is_the_object_name() {
    let a = named("report", "u1", "2026-08-01T10:00:00Z", None);
    let b = named("b", "u2", "2026-08-01T11:00:00Z", Some("report"));
    assert_eq!(
        validate_tool(&b, &[a.clone(), b.clone()], &ToolPolicy::default())
            .unwrap_err()
            .reason(),
        "DuplicateName"
    );
}

#[test]
fn ready_condition_reports_the_result_and_keeps_transition_time() {
    let t0 = "2026-08-01T10:00:00Z".parse().unwrap();
    let t1 = "2026-08-01T11:00:00Z".parse().unwrap();
    let ok = validate_tool(&tool(), &[], &ToolPolicy::default());
    let ready = ready_condition(&ok, Some(3), None, t0);
    assert_eq!(
        (
            ready.type_.as_str(),
            ready.status.as_str(),
            ready.reason.as_str()
        ),
        ("Ready", "True", "Valid")
    );
    assert_eq!(ready.observed_generation, Some(3));
    let again = ready_condition(&ok, Some(4), Some(&ready), t1);
    assert_eq!(again.last_transition_time, Time(t0));
    let failed = ready_condition(
        &Err(ToolInvalid::NoToolContainer),
        Some(5),
        Some(&again),
        t1,
    );
    assert_eq!(
        (failed.status.as_str(), failed.reason.as_str()),
        ("False", "NoToolContainer")
    );
    assert_eq!(failed.last_transition_time, Time(t1));
    assert!(failed.message.contains("name one of them \"tool\""));
}

#[test]
fn a_template_the_tool_policy_refuses_makes_the_tool_not_ready() {
    let t = tool_from(
        r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTool
metadata: {name: root, namespace: tools, uid: u}
spec:
  inputSchema: {type: object}
  template:
    spec:
      serviceAccountName: mto-operator
      containers: [{name: tool, image: i, securityContext: {privileged: true}}]
"#,
    );
    let policy = ToolPolicy {
        forbidden_service_accounts: vec!["mto-operator".into()],
        ..ToolPolicy::default()
    };
    let err = validate_tool(&t, std::slice::from_ref(&t), &policy).unwrap_err();
    assert_eq!(err.reason(), "TemplateNotAllowed");
    let t0 = "2026-08-01T10:00:00Z".parse().unwrap();
    let ready = ready_condition(&Err(err), Some(1), None, t0);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "TemplateNotAllowed")
    );
    assert!(
        ready
            .message
            .starts_with("spec.template.spec.serviceAccountName \"mto-operator\" is not allowed"),
        "{}",
        ready.message
    );

    let no_account = ToolPolicy::default();
    let err = validate_tool(&t, std::slice::from_ref(&t), &no_account).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("spec.template.spec.containers[0].securityContext.privileged is not"),
        "{err}"
    );
    let permissive = ToolPolicy {
        allow_privileged: true,
        ..ToolPolicy::default()
    };
    assert!(validate_tool(&t, std::slice::from_ref(&t), &permissive).is_ok());
}
