//! Issue 36 item 4 on a real cluster: a task runs the McpTool its call was authorized on
//! (`spec.toolUid`, `spec.toolGeneration`), never another object that answers to the same MCP
//! name by the time the operator creates its Job.

mod common;

use common::{prepare_examples, start_operator, wait_failed};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, McpTool, task_id};
use mcp_task_operator_harness::operator::{
    WAIT, create_tool, failure_reason, shell_tool, status_message,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// A shell tool of MCP name `echo` whose result is the text `text`.
fn echo_tool(object_name: &str, text: &str) -> McpTool {
    let script = format!(
        r#"printf '{{"mcp":"result","result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}\n'"#
    );
    shell_tool(object_name, &script, json!({"name": "echo"}))
}

/// Creates a task of `echo` as the front end does: bound to `tool`'s UID and generation.
async fn create_bound_task(client: &Client, ns: &str, tool: &McpTool) -> String {
    let name = task_id::generate();
    let task: McpTask = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "tool": "echo", "owner": "tests", "arguments": {}, "ttlMs": 3_600_000,
            "toolUid": tool.uid(), "toolGeneration": tool.metadata.generation,
        },
    }))
    .expect("an McpTask");
    Api::<McpTask>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &task)
        .await
        .expect("create the task");
    name
}

#[tokio::test]
async fn a_task_whose_tool_was_replaced_after_the_call_fails_tool_changed_and_runs_nothing() {
    with_temp_ns("sec-tool-swap", |client, ns| async move {
        prepare_examples(&client).await;
        let original = create_tool(&client, &ns, &echo_tool("echo", "original")).await;
        let name = create_bound_task(&client, &ns, &original).await;
        // Before any operator runs: another author's object takes the MCP name.
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        tools
            .delete("echo", &DeleteParams::default())
            .await
            .expect("delete the original tool");
        let original_uid = original.uid().expect("a stored tool has a UID");
        let gone = await_condition(tools.clone(), "echo", conditions::is_deleted(&original_uid));
        tokio::time::timeout(WAIT, gone)
            .await
            .expect("the original tool is deleted")
            .expect("watch");
        let impostor = create_tool(&client, &ns, &echo_tool("echo", "impostor")).await;
        assert_ne!(impostor.uid(), original.uid());

        let _operator = start_operator(&client, &ns, &[]).await;
        let failed = wait_failed(&client, &ns, &name).await;
        assert_eq!(
            failure_reason(&failed),
            "ToolChanged",
            "{:?}",
            failed.status
        );
        let message = status_message(&failed);
        assert!(message.contains("UID"), "{message}");
        let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), &ns);
        assert!(
            jobs.get_opt(&name).await.expect("get the Job").is_none(),
            "no Job ran the impostor"
        );
    })
    .await;
}
