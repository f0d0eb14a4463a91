//! Real MCP servers nobody here wrote, registered as `McpServer`s and run by the real operator
//! through the bridge, each call a real Job: the reference "everything" server (npm) and
//! mcp-server-time (PyPI), from `examples/mcp-servers/`.
//!
//! Discovery offers their tools with the servers' own schemas; the long-running operation's
//! progress becomes the task's `statusMessage`; an elicitation becomes `input_required` and the
//! answer goes back to the server; a cancel reaches the server and the task ends `cancelled`;
//! structured results and tool errors pass through.

mod common;

use std::time::Duration;

use common::prepare_examples_blocking;
use k8s_openapi::api::batch::v1::Job;
use kube::api::ListParams;
use kube::{Api, Client};
use mcp_task_operator_crds::{McpServer, McpTask, McpTool, TaskStatus};
use mcp_task_operator_harness::mcp_servers::start_operator;
use mcp_task_operator_harness::operator::{
    Operator, TaskRecorder, answer, create_task, request_cancel, result_text, wait_status,
    wait_task, wait_terminal,
};
use mcp_task_operator_harness::{ensure_crds, kubectl_ok, with_temp_ns};
use serde_json::json;
use tokio::task::block_in_place;

/// Longest a server's discovery (image start, initialize, tools/list) may take here.
const DISCOVERY: &str = "--timeout=180s";

/// Waits (`kubectl wait`, within `timeout`) until every object of `kind` in `ns` is Ready.
fn wait_all_ready(ns: &str, kind: &str, timeout: &str) {
    let condition = "--for=condition=Ready";
    kubectl_ok(&["wait", "-n", ns, condition, kind, "--all", timeout]);
}

async fn start(client: &Client, ns: &str) -> Operator {
    prepare_examples_blocking(client).await;
    let operator = start_operator(ns).await;
    block_in_place(|| {
        for file in [
            "examples/mcp-servers/everything.yaml",
            "examples/mcp-servers/time.yaml",
        ] {
            let path = mcp_task_operator_harness::chart_dir()
                .join("../..")
                .join(file);
            kubectl_ok(&["apply", "-n", ns, "-f", path.to_str().expect("UTF-8 path")]);
        }
        wait_all_ready(ns, "mcpserver", DISCOVERY);
        wait_all_ready(ns, "mcptool", "--timeout=60s");
    });
    operator
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_mcp_servers_become_task_tools_that_report_progress_ask_and_stop() {
    with_temp_ns("mcp-server", |client, ns| async move {
        let _operator = start(&client, &ns).await;
        let recorder = TaskRecorder::start(&client, &ns).await;

        // Discovery: the offered tools, with the servers' own schemas, and what was left out.
        let servers: Api<McpServer> = Api::namespaced(client.clone(), &ns);
        let everything = servers.get("everything").await.expect("server");
        let status = everything.status.expect("status");
        assert_eq!(status.tool_count, Some(5), "{status:?}");
        assert!(status.server_version.as_deref().is_some_and(|v| v.starts_with("mcp-servers/everything")), "{status:?}");
        assert!(status.skipped.iter().any(|s| s.name == "get-env" && s.reason == "not in spec.tools"), "{status:?}");
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let long = tools.get("everything-trigger-long-running-operation").await.expect("tool");
        assert_eq!(long.spec.input_schema["properties"]["duration"]["type"], "number", "{:?}", long.spec.input_schema);
        assert_eq!(long.spec.description.as_deref(), Some("Demonstrates a long running operation with progress updates."));
        let time = servers.get("time").await.expect("server").status.expect("status");
        let names: Vec<&str> = time.tools.iter().map(|t| t.mcp_name.as_str()).collect();
        assert_eq!(names, ["time_get_current_time", "time_convert_time"], "{time:?}");

        // Progress becomes statusMessage; the result is the server's.
        let args = json!({"duration": 6, "steps": 3});
        let task = create_task(&client, &ns, "trigger-long-running-operation", args).await;
        let name = task.metadata.name.expect("name");
        let done = wait_task(&client, &ns, &name, Duration::from_secs(180), |t| t.is_terminal()).await;
        assert_eq!(done.task_status(), TaskStatus::Completed, "{:?}", done.status);
        assert_eq!(result_text(&done), "Long running operation completed. Duration: 6 seconds, Steps: 3.");
        let messages: Vec<String> = recorder.of(&name).iter().filter_map(|s| s.message.clone()).collect();
        assert!(messages.iter().any(|m| m == "1/3" || m == "2/3"), "progress never shown: {messages:?}");

        // An elicitation: input_required with the server's own schema, answered, delivered. The
        // bridge declares elicitation to the server only for a client that declared it.
        let task: McpTask = serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
            "metadata": {"name": mcp_task_operator_crds::task_id::generate()},
            "spec": {"tool": "trigger-elicitation-request", "owner": "tests", "arguments": {}, "ttlMs": 3_600_000,
                     "clientCapabilities": {"elicitation": {}}},
        }))
        .expect("an McpTask");
        let task = Api::<McpTask>::namespaced(client.clone(), &ns).create(&Default::default(), &task).await.expect("created");
        let name = task.metadata.name.expect("name");
        let asking = wait_task(&client, &ns, &name, Duration::from_secs(180), |t| t.task_status() == TaskStatus::InputRequired).await;
        let requests = asking.status.and_then(|s| s.input_requests).expect("input requests");
        let request = &requests["elicitation-1"];
        assert_eq!(request["params"]["requestedSchema"]["properties"]["check"]["type"], "boolean", "{request}");
        answer(&client, &ns, &name, json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada", "check": true}}})).await;
        let done = wait_terminal(&client, &ns, &name).await;
        assert_eq!(done.task_status(), TaskStatus::Completed, "{:?}", done.status);
        let text = done.status.as_ref().and_then(|s| s.result.as_ref()).map(|r| r.to_value()["content"].to_string()).unwrap_or_default();
        assert!(text.contains("Name: Ada"), "{text}");

        // Cancel: the bridge tells the server, which ignores it; the task still ends cancelled.
        let task = create_task(&client, &ns, "trigger-long-running-operation", json!({"duration": 300, "steps": 300})).await;
        let name = task.metadata.name.expect("name");
        wait_task(&client, &ns, &name, Duration::from_secs(180), |t| {
            t.status.as_ref().and_then(|s| s.status_message.as_deref()).is_some_and(|m| m.ends_with("/300"))
        })
        .await;
        request_cancel(&client, &ns, &name).await;
        let done = wait_task(&client, &ns, &name, Duration::from_secs(120), |t| t.is_terminal()).await;
        assert_eq!(done.task_status(), TaskStatus::Cancelled, "{:?}", done.status);

        // The Python server: a structured result, and its tool error as isError.
        let args = json!({"source_timezone": "Europe/Paris", "time": "14:30", "target_timezone": "Asia/Tokyo"});
        let task = create_task(&client, &ns, "time_convert_time", args).await;
        let done = wait_task(&client, &ns, task.metadata.name.as_deref().expect("name"), Duration::from_secs(180), |t| t.is_terminal()).await;
        let result = done.status.as_ref().and_then(|s| s.result.as_ref()).expect("a result").to_value();
        assert_eq!(result["structuredContent"]["time_difference"], "+8.0h", "{result:?}");
        let task = create_task(&client, &ns, "time_get_current_time", json!({"timezone": "Mars/Olympus"})).await;
        let done = wait_status(&client, &ns, task.metadata.name.as_deref().expect("name"), TaskStatus::Completed).await;
        let result = done.status.as_ref().and_then(|s| s.result.as_ref()).expect("a result").to_value();
        assert_eq!(result["isError"], true, "{result:?}");

        // The discovery Jobs are gone once their tools are offered.
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let left = jobs.list(&ListParams::default().labels("mcptasks.io/server")).await.expect("jobs");
        let live: Vec<_> = left.items.iter().filter(|j| j.metadata.deletion_timestamp.is_none()).collect();
        assert!(live.is_empty(), "discovery Jobs left: {:?}", live.iter().map(|j| &j.metadata.name).collect::<Vec<_>>());
    })
    .await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_not_ready_and_says_why() {
    with_temp_ns("mcp-server-bad", |client, ns| async move {
        ensure_crds(&client).await;
        let _operator = start_operator(&ns).await;
        let servers: Api<McpServer> = Api::namespaced(client.clone(), &ns);
        let broken: McpServer = serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
            "metadata": {"name": "broken"},
            "spec": {"discoveryTimeoutSeconds": 60, "template": {"spec": {"containers": [{
                "name": "server", "image": "localhost/busybox:1.35",
                "command": ["sh", "-c", "echo 'missing API key' >&2; exit 3"]
            }]}}}
        }))
        .expect("an McpServer");
        servers
            .create(&Default::default(), &broken)
            .await
            .expect("create");
        let failed = mcp_task_operator_harness::wait_for(
            &servers,
            "broken",
            |s: Option<&McpServer>| {
                s.and_then(|s| s.status.as_ref())
                    .is_some_and(|st| st.conditions.iter().any(|c| c.reason == "DiscoveryFailed"))
            },
            Duration::from_secs(120),
        )
        .await;
        let condition = failed.status.expect("status").conditions.remove(0);
        assert_eq!(condition.status, "False");
        assert!(
            condition.message.contains("before answering initialize"),
            "{}",
            condition.message
        );
        assert!(
            condition.message.contains("missing API key"),
            "{}",
            condition.message
        );
    })
    .await;
}
