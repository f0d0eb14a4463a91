//! The `Succeeded` condition with the real operator and real Jobs: `kubectl wait` on an
//! `McpTask` returns when the task completes (`Succeeded=True`) or fails
//! (`Succeeded=False`), as it does for a Tekton TaskRun.

mod common;

use common::CONFORMANCE_TOOLS;
use kube::Api;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::kubectl;
use mcp_task_operator_harness::operator::{
    apply_example_tools, create_task, ensure_example_images, with_operator,
};
use serde_json::json;
use tokio::task::block_in_place;

/// `kubectl wait -n ns --for=<condition> mcptask/<name>` with a two-minute timeout.
fn wait_for(ns: &str, condition: &str, name: &str) -> std::process::Output {
    let target = format!("mcptask/{name}");
    let condition = format!("--for=condition={condition}");
    block_in_place(|| kubectl(&["wait", "-n", ns, &condition, "--timeout=120s", &target]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_wait_for_succeeded_returns_when_a_task_ends() {
    with_operator("op-conditions", async |client, ns, _| {
        ensure_example_images();
        apply_example_tools(&client, &ns, CONFORMANCE_TOOLS).await;
        let args = json!({"seconds": 3, "label": "wait"});
        let done = create_task(&client, &ns, "slow_compute", args).await;
        let failing = create_task(&client, &ns, "protocol_error_job", json!({})).await;
        let done = done.metadata.name.expect("name");
        let failing = failing.metadata.name.expect("name");

        let waited = wait_for(&ns, "Succeeded", &done);
        assert!(waited.status.success(), "{waited:?}");
        let waited = wait_for(&ns, "Succeeded=false", &failing);
        assert!(waited.status.success(), "{waited:?}");

        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        for (name, status, reason) in [
            (&done, "True", "Completed"),
            (&failing, "False", "ToolFailed"),
        ] {
            let task = tasks.get(name).await.expect("task");
            let task_status = task.status.expect("status");
            let conditions = &task_status.conditions;
            let succeeded: Vec<_> = conditions
                .iter()
                .filter(|c| c.type_ == "Succeeded")
                .collect();
            assert_eq!(succeeded.len(), 1, "{conditions:?}");
            let succeeded = succeeded[0];
            assert_eq!(succeeded.type_, "Succeeded");
            assert_eq!(
                (succeeded.status.as_str(), succeeded.reason.as_str()),
                (status, reason)
            );
            assert_eq!(succeeded.observed_generation, task.metadata.generation);
            assert_eq!(Some(succeeded.message.clone()), task_status.status_message);
        }
    })
    .await;
}
