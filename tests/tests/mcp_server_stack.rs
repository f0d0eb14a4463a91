//! Real MCP servers through the installed chart (its default auth: TokenReview with the
//! audience, RBAC on tools), the front end and real clients: the McpServers of
//! `examples/mcp-servers/` are discovered by the chart's operator with the chart's bridge
//! image, their tools appear in `tools/list` with the servers' own schemas, and the official
//! Python and TypeScript SDK clients, and a raw client, call them as tasks and plainly.

mod common;

use common::prepare_examples_blocking;
use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::clients::{run_restock_report, run_restock_report_ts};
use mcp_task_operator_harness::mcp_client::{Mcp, framed};
use mcp_task_operator_harness::stack::{Release, install, mcp_url, wait_tools_ready};
use mcp_task_operator_harness::{chart_dir, kubectl_ok, with_temp_ns};
use serde_json::json;
use tokio::task::block_in_place;

const RELEASE: &str = "servers";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_call_real_mcp_servers_as_tasks_through_the_chart() {
    with_temp_ns("mcp-server-stack", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let port = block_in_place(|| install(&ns, RELEASE, &["operator.replicaCount=1", "frontend.replicaCount=1"]));
        let token = caller_token(&client, &ns, RELEASE, "server-caller").await;
        block_in_place(|| {
            for file in ["everything.yaml", "time.yaml"] {
                let path = chart_dir().join("../../examples/mcp-servers").join(file);
                kubectl_ok(&["apply", "-n", &ns, "-f", path.to_str().expect("UTF-8 path")]);
            }
            kubectl_ok(&["wait", "-n", &ns, "--for=condition=Ready", "mcpserver", "--all", "--timeout=180s"]);
            wait_tools_ready(&ns);
        });
        let url = mcp_url(port);
        let mcp = Mcp::new(&url).with_token(&token);
        mcp.wait_for_tools(&["trigger-long-running-operation", "time_convert_time"]).await;

        // tools/list: the server's own description and schema.
        let listed = mcp.request("tools/list", json!({}), false).await;
        let tools = listed.result()["tools"].as_array().cloned().unwrap_or_default();
        let long = tools.iter().find(|t| t["name"] == "trigger-long-running-operation").expect("listed");
        assert_eq!(long["inputSchema"]["properties"]["steps"]["type"], "number", "{long}");
        assert_eq!(long["description"], "Demonstrates a long running operation with progress updates.");

        // The Python SDK follows the long-running operation's progress to its result.
        let args = r#"{"duration": 4, "steps": 4}"#;
        let py = run_restock_report(&url, &["--token", &token, "--tool", "trigger-long-running-operation", "--arguments", args]).await;
        println!("--- Python SDK, trigger-long-running-operation\n{py}");
        assert!(py.contains("working - ") && py.contains("/4"), "{py}");
        assert!(py.contains("Long running operation completed. Duration: 4 seconds, Steps: 4."), "{py}");

        // The TypeScript client with ext-tasks: the Python server's structured result.
        let args = r#"{"source_timezone": "Europe/Paris", "time": "14:30", "target_timezone": "Asia/Tokyo"}"#;
        let ts = run_restock_report_ts(&url, &["--token", &token, "--tool", "time_convert_time", "--arguments", args]).await;
        println!("--- TypeScript client, time_convert_time\n{ts}");
        assert!(ts.contains(r#""time_difference":"+8.0h""#), "{ts}");

        // An elicitation through input_required and tasks/update.
        let id = mcp.start_task("trigger-elicitation-request", json!({})).await;
        let asking = mcp.wait_status(&id, "input_required").await;
        let schema = &asking["inputRequests"]["elicitation-1"]["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["check"]["type"], "boolean", "{asking}");
        let answer = json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada", "check": true}}});
        mcp.update_task(&id, answer).await.result();
        let done = mcp.wait_status(&id, "completed").await;
        assert!(done["result"]["content"].to_string().contains("Name: Ada"), "{done}");

        // tasks/cancel stops a running server call.
        let id = mcp.start_task("trigger-long-running-operation", json!({"duration": 300, "steps": 300})).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let got = mcp.get_task(&id).await.result().clone();
            if got["statusMessage"].as_str().is_some_and(|m| m.ends_with("/300")) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never made progress: {got}");
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        mcp.cancel_task(&id).await.result();
        mcp.wait_status(&id, "cancelled").await;

        // A client without the tasks extension gets a plain result from a quick tool.
        let params = json!({"name": "time_get_current_time", "arguments": {"timezone": "Etc/UTC"}});
        let (headers, body) = framed("tools/call", params, false);
        let plain = mcp.send(&headers, &body).await;
        let result = plain.result();
        assert_ne!(result["resultType"], "task", "{result}");
        assert_eq!(result["structuredContent"]["timezone"], "Etc/UTC", "{result}");
    })
    .await;
}
