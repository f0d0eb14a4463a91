//! A warm pool of a bridged MCP server (issue 38): `McpServer.spec.tools[].warmPool` gives the
//! offered tool pods whose server is started and initialized before any call (`mcp-bridge
//! --warm`); a client's `tools/call` through the front end claims one, and with
//! `immediateResultMs` comes back as a plain result. Real operator, front end, bridge and the
//! minimal Rust MCP server.

use std::time::Instant;

use kube::api::ListParams;
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::mcp_servers::{
    apply_ready, ensure_rust_mcp_server_image, rust_server, start_operator,
};
use mcp_task_operator_harness::warm_pools::wait_ready_pod;
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;
use tokio::task::block_in_place;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_servers_call_comes_back_as_a_plain_result_from_a_claimed_pod() {
    with_temp_ns("warm-server", |client, ns| async move {
        ensure_crds(&client).await;
        block_in_place(|| ensure_rust_mcp_server_image(env!("CARGO_BIN_EXE_rust-mcp-server")));
        let _operator = start_operator(&ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        let mcp = Mcp::new(&frontend.url);

        let mut server = rust_server("srv", &[]);
        server["spec"]["tools"] = json!([
            {"name": "work", "immediateResultMs": 10_000,
             "warmPool": {"minReady": 1, "maxReady": 1}},
        ]);
        apply_ready(&client, &ns, server).await;
        wait_ready_pod(&client, &ns, "srv-work").await;
        mcp.wait_for_tools(&["work"]).await;

        let called = Instant::now();
        let reply = mcp.call_tool("work", json!({})).await;
        let took = called.elapsed();
        let result = reply.result();
        assert_eq!(result["resultType"], "complete", "{}", reply.body);
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("done at "), "{result}");
        eprintln!("warm bridged call: tools/call -> result in {took:?}");

        // The call's task ran in the pool's pod: its Job is the warm Job, not one named after it.
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let listed = tasks
            .list(&ListParams::default())
            .await
            .expect("tasks")
            .items;
        let [task] = listed.as_slice() else {
            panic!("one task expected: {listed:?}");
        };
        let job = task
            .status
            .as_ref()
            .and_then(|s| s.job_name.clone())
            .unwrap_or_default();
        assert!(
            job.starts_with("srv-work-w"),
            "{job} is not a warm Job of srv-work"
        );
        assert_ne!(job, task.name_any());
    })
    .await;
}
