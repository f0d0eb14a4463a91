//! McpTool reconcile tests against a mocked API server.

use axum::http::Method;
use serde_json::{Value, json};

use super::*;
use crate::fixtures::api::{Call, run};
use crate::fixtures::tool;

const TOOLS: &str = "/apis/mcptasks.io/v1alpha1/namespaces/tools/mcptools";

fn tool_list(items: &[McpTool]) -> Value {
    json!({"apiVersion": "mcptasks.io/v1alpha1", "kind": "McpToolList", "metadata": {}, "items": items})
}

/// Reconciles `tool` among the namespace's tools `listed`: the list of them, the status write,
/// then its Event.
async fn reconcile_among(tool: McpTool, listed: &[McpTool]) -> (Action, Vec<Value>) {
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(listed)),
        Call::ok(
            Method::PATCH,
            &format!("{TOOLS}/report/status"),
            serde_json::to_value(&tool).unwrap(),
        ),
        Call::event("tools"),
    ];
    run(reconcile, tool, calls).await
}

#[tokio::test]
async fn valid_tool_becomes_ready_with_an_event() {
    let (_, bodies) = reconcile_among(tool(), &[tool()]).await;
    let status = &bodies[1]["status"];
    assert_eq!(status["conditions"][0]["type"], "Ready");
    assert_eq!(status["conditions"][0]["status"], "True");
    assert_eq!(status["mcpName"], "restock_report");
    assert_eq!(status["image"], "example.com/report:1");
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(bodies[2]["reason"], "Valid");
    assert_eq!(bodies[2]["type"], "Normal");
}

#[tokio::test]
async fn duplicate_name_is_not_ready_and_rechecked_soon() {
    let mut older = tool();
    older.metadata.name = Some("older".into());
    older.metadata.uid = Some("older-uid".into());
    older.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-01-01T00:00:00Z".parse().unwrap(),
    ));
    let mut t = tool();
    t.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-02-01T00:00:00Z".parse().unwrap(),
    ));
    let (action, bodies) = reconcile_among(t.clone(), &[older, t]).await;
    let condition = &bodies[1]["status"]["conditions"][0];
    assert_eq!(condition["status"], "False");
    assert_eq!(condition["reason"], "DuplicateName");
    assert_eq!(bodies[2]["type"], "Warning");
    assert_eq!(action, Action::requeue(DUPLICATE_RECHECK));
}
