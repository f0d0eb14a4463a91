//! A bridged MCP server cannot speak for the bridge (docs/SECURITY.md, "Bridged servers"). The
//! server runs in the tool container as the bridge's user, and its stderr goes to the pod's log
//! with the bridge's messages. Its tools are `messageNonce: true`, so only lines signed with the
//! task's nonce count; the server must not find that nonce: not in the contract's files, not in
//! its environment, not in the bridge's. Run by the real operator with the real bridge image.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::mcp_servers::{
    apply_ready, ensure_rust_mcp_server_image, rust_server, start_operator,
};
use mcp_task_operator_harness::operator::{create_task, result_text, wait_task};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;
use tokio::task::block_in_place;

/// Longest the call may take (pod start, server start, the call).
const CALL_WAIT: Duration = Duration::from_secs(180);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_server_finds_no_nonce_and_its_signed_stderr_is_not_a_message() {
    with_temp_ns("mcp-server-nonce", |client, ns| async move {
        ensure_crds(&client).await;
        block_in_place(|| ensure_rust_mcp_server_image(env!("CARGO_BIN_EXE_rust-mcp-server")));
        let _operator = start_operator(&ns).await;
        let env = [("RUST_MCP_SERVER_FORGE", "1")];
        apply_ready(&client, &ns, rust_server("srv", &env)).await;

        let task = create_task(&client, &ns, "forge", json!({})).await;
        let name = task.metadata.name.expect("a task name");
        let done = wait_task(&client, &ns, &name, CALL_WAIT, McpTask::is_terminal).await;
        // The server's own answer says where it found a nonce; a forged line it signed on
        // stderr would have been taken first ("forged by the server").
        assert_eq!(
            result_text(&done),
            "nonce found in: none",
            "{:?}",
            done.status
        );
        // The task did have a nonce: the bridge signed the result with it.
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let job = jobs.get(&name).await.expect("the task's Job");
        let annotations = job
            .spec
            .and_then(|s| s.template.metadata)
            .and_then(|m| m.annotations)
            .unwrap_or_default();
        assert!(
            annotations.contains_key("mcptasks.io/message-nonce"),
            "{annotations:?}"
        );
    })
    .await;
}
