//! Per-caller reuse of a stateful server (issue 38): with `warmPool.reuse: perCaller`, one
//! caller's consecutive calls to an MCP server run in the same server process (its in-memory
//! state carries over), another caller's never do, and a session ends when idle. The fixture
//! server's `count` tool counts its calls in memory. Real operator, bridge (`mcp-bridge
//! --serve`) and the minimal Rust MCP server.

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Event;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::mcp_servers::{
    apply_ready, ensure_rust_mcp_server_image, rust_server, start_operator,
};
use mcp_task_operator_harness::operator::{WAIT, result_text, wait_terminal};
use mcp_task_operator_harness::warm_pools::wait_ready_pod;
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;
use tokio::task::block_in_place;

/// Idle time of a session, in seconds.
const IDLE_SECONDS: u64 = 15;

/// Runs the server's tool `tool` for `owner` (as the front end records the caller) and returns
/// the result's text and the Job it ran in.
async fn call(client: &Client, ns: &str, owner: &str, tool: &str) -> (String, String) {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let task: McpTask = serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "metadata": {"name": mcp_task_operator_crds::task_id::generate()},
        "spec": {"tool": tool, "owner": owner, "arguments": {}, "ttlMs": 3_600_000},
    }))
    .expect("an McpTask");
    let created = tasks
        .create(&PostParams::default(), &task)
        .await
        .expect("create a task");
    let done = wait_terminal(client, ns, &created.name_any()).await;
    assert_eq!(
        done.task_status(),
        TaskStatus::Completed,
        "{:?}",
        done.status
    );
    let job = done
        .status
        .as_ref()
        .and_then(|s| s.job_name.clone())
        .unwrap_or_default();
    (result_text(&done), job)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_calls_share_one_server_process_and_another_callers_never_do() {
    with_temp_ns("warm-session", |client, ns| async move {
        ensure_crds(&client).await;
        block_in_place(|| ensure_rust_mcp_server_image(env!("CARGO_BIN_EXE_rust-mcp-server")));
        let _operator = start_operator(&ns).await;
        let mut server = rust_server("srv", &[("RUST_MCP_SERVER_COUNT", "1")]);
        server["spec"]["warmPool"] = json!({
            "minReady": 1, "maxReady": 2, "idleSeconds": IDLE_SECONDS, "reuse": "perCaller",
        });
        server["spec"]["tools"] = json!([{"name": "count"}, {"name": "work"}]);
        apply_ready(&client, &ns, server).await;
        wait_ready_pod(&client, &ns, "srv-count").await;

        // Alice's calls count on in one process, whichever of the server's tools she calls.
        let (first, session) = call(&client, &ns, "alice", "count").await;
        assert_eq!(first, "1");
        let (second, again) = call(&client, &ns, "alice", "count").await;
        assert_eq!((second.as_str(), again.as_str()), ("2", session.as_str()));
        let (_, by_work) = call(&client, &ns, "alice", "work").await;
        assert_eq!(
            by_work, session,
            "another tool of the server runs in her session too"
        );
        let (third, _) = call(&client, &ns, "alice", "count").await;
        assert_eq!(third, "3");

        // Bob never gets Alice's process.
        let (bobs, bobs_job) = call(&client, &ns, "bob", "count").await;
        assert_eq!(
            bobs, "1",
            "bob's call ran in a process that counted alice's calls"
        );
        assert_ne!(bobs_job, session);
        let (alices, _) = call(&client, &ns, "alice", "count").await;
        assert_eq!(alices, "4");

        // Each call read only its own lines of the shared log: none took the earlier calls'
        // signed lines for unsigned ones.
        let events: Api<Event> = Api::namespaced(client.clone(), &ns);
        let listed = events
            .list(&ListParams::default())
            .await
            .expect("Events")
            .items;
        let odd: Vec<_> = listed
            .iter()
            .filter(|e| e.reason.as_deref() == Some("UnsignedMessageIgnored"))
            .map(|e| e.message.clone().unwrap_or_default())
            .collect();
        assert!(odd.is_empty(), "calls saw other calls' lines: {odd:?}");

        // Idle for longer than idleSeconds, her session ends; her next call starts afresh.
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let begun = Instant::now();
        while jobs
            .get_opt(&session)
            .await
            .expect("get Job")
            .is_some_and(|j| j.metadata.deletion_timestamp.is_none())
        {
            assert!(
                begun.elapsed() < WAIT + Duration::from_secs(IDLE_SECONDS),
                "the idle session {session} did not end"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let (fresh, fresh_job) = call(&client, &ns, "alice", "count").await;
        assert_eq!(fresh, "1");
        assert_ne!(fresh_job, session);
    })
    .await;
}
