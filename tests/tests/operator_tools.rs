//! McpTool validation end to end: the operator's `Ready` condition (and Event) for a valid tool,
//! a bad schema and a duplicate MCP name; what the API server refuses before the operator sees
//! it (no tool container); and a task of a tool that does not exist.

mod common;

use std::time::Duration;

use common::{new_task, wait_failed};
use kube::Api;
use kube::api::PostParams;
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, create_tool, failure_reason, shell_tool, tool, tool_event, tool_ready,
    with_operator,
};
use mcp_task_operator_harness::{ensure_crds, wait_for, with_temp_ns};
use serde_json::json;

#[tokio::test]
async fn tools_are_validated_and_report_ready_with_a_reason() {
    with_operator("op-tools", async |client, ns, _| {
        let valid = shell_tool("valid", "echo ok", json!({"name": "valid_tool"}));
        create_tool(&client, &ns, &valid).await;
        let (status, reason, message) = tool_ready(&client, &ns, "valid").await;
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "Valid"),
            "{message}"
        );
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let stored = tools.get("valid").await.expect("get tool");
        let stored_status = stored.status.clone().expect("status");
        assert_eq!(stored_status.mcp_name.as_deref(), Some("valid_tool"));
        assert_eq!(stored_status.image.as_deref(), Some(BUSYBOX_IMAGE));
        assert_eq!(
            stored_status.observed_generation,
            stored.metadata.generation
        );
        assert_eq!(tool_event(&client, &ns, "valid", "Valid").await.0, "Normal");

        // A schema the CRD accepts (root type object) but no JSON Schema compiler does.
        let bad_schema = shell_tool(
            "bad-schema",
            "echo ok",
            json!({"inputSchema": {"type": "object", "properties": {"n": {"type": "nonsense"}}}}),
        );
        create_tool(&client, &ns, &bad_schema).await;
        let (status, reason, message) = tool_ready(&client, &ns, "bad-schema").await;
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "InvalidSchema")
        );
        assert!(
            message.starts_with("spec.inputSchema is not a valid JSON Schema"),
            "{message}"
        );
        let (kind, note) = tool_event(&client, &ns, "bad-schema", "InvalidSchema").await;
        assert_eq!(kind, "Warning");
        assert_eq!(note, message);

        // Same MCP name as the older `valid` (creation times have whole seconds): the younger
        // tool loses.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let duplicate = shell_tool("duplicate", "echo ok", json!({"name": "valid_tool"}));
        create_tool(&client, &ns, &duplicate).await;
        let (status, reason, message) = tool_ready(&client, &ns, "duplicate").await;
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "DuplicateName")
        );
        assert!(message.contains("\"valid\""), "{message}");
        assert_eq!(
            tool_ready(&client, &ns, "valid").await.0,
            "True",
            "the older one keeps it"
        );
        assert_eq!(
            tool_event(&client, &ns, "duplicate", "DuplicateName")
                .await
                .0,
            "Warning"
        );

        // When the older one goes, the younger takes the name at once (not at its next
        // 30-second recheck).
        tools
            .delete("valid", &Default::default())
            .await
            .expect("delete the older tool");
        let took_over = |t: Option<&McpTool>| {
            t.and_then(|t| t.status.as_ref()).is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
        };
        wait_for(&tools, "duplicate", took_over, Duration::from_secs(10)).await;
    })
    .await;
}

#[tokio::test]
async fn a_tool_without_a_tool_container_is_refused_before_the_operator_sees_it() {
    with_temp_ns("op-tools-refused", |client, ns| async move {
        ensure_crds(&client).await;
        // Two containers, neither named `tool`: the CRD's CEL rule refuses it at admission, so
        // the operator's NoToolContainer check only guards objects stored before the rule.
        let mut two = tool(
            "two",
            BUSYBOX_IMAGE,
            &["true"],
            json!({}),
            json!({"name": "a"}),
        );
        let spec = two.spec.template.spec.as_mut().expect("pod spec");
        let mut second = spec.containers[0].clone();
        second.name = "b".into();
        spec.containers.push(second);
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let refused = tools
            .create(&PostParams::default(), &two)
            .await
            .expect_err("refused");
        assert!(
            refused
                .to_string()
                .contains("a template with more than one container must have one named 'tool'"),
            "{refused}"
        );
        let mut none = tool("none", BUSYBOX_IMAGE, &["true"], json!({}), json!({}));
        none.spec
            .template
            .spec
            .as_mut()
            .expect("pod spec")
            .containers
            .clear();
        let refused = tools
            .create(&PostParams::default(), &none)
            .await
            .expect_err("refused");
        assert!(
            refused.to_string().contains("one named 'tool'"),
            "{refused}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_task_of_an_unknown_tool_fails_as_tool_not_found() {
    with_operator("op-tools-missing", async |client, ns, _| {
        let name = new_task(&client, &ns, "no_such_tool").await;
        let done = wait_failed(&client, &ns, &name).await;
        assert_eq!(failure_reason(&done), "ToolNotFound");
        assert!(done.status.as_ref().is_some_and(|s| s.job_name.is_none()));
    })
    .await;
}
