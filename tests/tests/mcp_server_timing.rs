//! An `McpServer`'s timing settings reach its McpTools and the clients: `immediateResultMs` and
//! `pollIntervalMs`, server-wide and per tool (a tool's own value wins). A bridged tool that
//! answers at once, with `immediateResultMs` set, comes back to a client that declared the
//! tasks extension as a plain result, not as a task polled every 2 s; that result and the
//! `subscriptions/listen` acknowledgement carry `serverInfo`. Run by the real operator with the
//! bridge image and the real front end.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use mcp_task_operator_crds::{McpServer, McpTool, task_id};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::mcp_servers::{
    DISCOVERY_WAIT, ensure_rust_mcp_server_image, rust_server, start_operator,
};
use mcp_task_operator_harness::{TEST_FIELD_MANAGER, ensure_crds, wait_for, with_temp_ns};
use serde_json::{Value, json};
use tokio::task::block_in_place;

/// Server-side applies `server` until it is stored with `spec.immediateResultMs`: suites run at
/// the same time on the shared cluster apply their own copy of the CRDs, and a copy from before
/// the field existed prunes it (the old CRD never keeps it).
async fn apply_with_timing(client: &Client, server: &Value) -> bool {
    let name = server["metadata"]["name"].as_str().expect("name");
    let ns = server["metadata"]["namespace"].as_str().expect("namespace");
    let servers: Api<McpServer> = Api::namespaced(client.clone(), ns);
    for _ in 0..10 {
        ensure_crds(client).await;
        let params = PatchParams::apply(TEST_FIELD_MANAGER).force();
        servers
            .patch(name, &params, &Patch::Apply(server))
            .await
            .expect("apply the McpServer");
        let stored = servers.get(name).await.expect("the McpServer");
        if stored.spec.immediate_result_ms.is_some() {
            return true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    false
}

/// The (immediateResultMs, pollIntervalMs) of the McpTool `name`, once the server made it.
async fn timing_of(client: &Client, ns: &str, name: &str) -> (i64, i64) {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let tool = wait_for(
        &tools,
        name,
        |t: Option<&McpTool>| t.is_some(),
        DISCOVERY_WAIT,
    )
    .await;
    (tool.spec.immediate_result_ms, tool.spec.poll_interval_ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_tool_that_answers_at_once_comes_back_as_an_immediate_result() {
    with_temp_ns("mcp-server-timing", |client, ns| async move {
        ensure_crds(&client).await;
        block_in_place(|| ensure_rust_mcp_server_image(env!("CARGO_BIN_EXE_rust-mcp-server")));
        let _operator = start_operator(&ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        let mcp = Mcp::new(&frontend.url);

        let mut server = rust_server("srv", &[]);
        server["metadata"]["namespace"] = json!(ns);
        server["spec"]["immediateResultMs"] = json!(1_000);
        server["spec"]["pollIntervalMs"] = json!(500);
        server["spec"]["tools"] = json!([
            {"name": "work", "immediateResultMs": 30_000, "pollIntervalMs": 250},
            {"name": "write-file"},
        ]);
        let kept = apply_with_timing(&client, &server).await;
        assert!(
            kept,
            "the McpServer CRD does not keep spec.immediateResultMs"
        );

        // The tool's own values win; the other tool has the server's.
        assert_eq!(timing_of(&client, &ns, "srv-work").await, (30_000, 250));
        assert_eq!(
            timing_of(&client, &ns, "srv-write-file").await,
            (1_000, 500)
        );

        // The call waits for the bridged server's answer and returns it as a plain result.
        mcp.wait_for_tools(&["work"]).await;
        let reply = mcp.call_tool("work", json!({})).await;
        let result = reply.result();
        assert_eq!(result["resultType"], "complete", "{}", reply.body);
        assert!(result.get("taskId").is_none(), "{result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("done at "), "{result}");
        let server_info = "io.modelcontextprotocol/serverInfo";
        assert_eq!(
            result["_meta"][server_info]["name"], "mcp-task-operator",
            "{result}"
        );

        // The listen acknowledgement names the server too (docs/CONFORMANCE.md), even when
        // it leaves every task out.
        let mut listen = mcp.listen("listen-1", &[&task_id::generate()]).await;
        let ack = listen.next().await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(
            ack["params"]["_meta"][server_info]["name"], "mcp-task-operator",
            "{ack}"
        );
    })
    .await;
}
