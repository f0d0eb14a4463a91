//! Real MCP clients against the real front end binary: the official TypeScript client with the
//! Tasks library (`tests/clients/ts/tasks.mjs`) and the official Python SDK with a task-claiming
//! client extension (`tests/clients/py/tasks.py`), each doing poll, input, cancel and listen, and
//! a 2025-era Python SDK over 2025-11-25. The flows and their checks live in
//! `mcp_task_operator_harness::clients`, shared with the end-to-end test of the installed chart.

use mcp_task_operator_harness::clients::{
    assert_python_flows, assert_typescript_flows, clients_dir, run_json, run_python_flows,
    run_typescript_flows, script, steps,
};
use mcp_task_operator_harness::fixture_tools::{FIXTURE_TOOLS, serve_fixtures};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;
use tokio::process::Command;

/// Runs `test` against a front end serving the fixture tools in a fresh namespace.
async fn with_frontend<F, Fut>(test: F)
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    with_temp_ns("clients", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        Mcp::new(&frontend.url).wait_for_tools(&FIXTURE_TOOLS).await;
        test(frontend.url.clone()).await;
    })
    .await;
}

#[tokio::test]
async fn typescript_client_with_ext_tasks_polls_answers_input_listens_and_cancels() {
    with_frontend(|url| async move {
        assert_typescript_flows(&run_typescript_flows(&url, None).await);
    })
    .await;
}

#[tokio::test]
async fn python_sdk_with_a_tasks_extension_polls_answers_input_listens_and_cancels() {
    with_frontend(|url| async move {
        assert_python_flows(&run_python_flows(&url, None).await);
    })
    .await;
}

#[tokio::test]
async fn legacy_python_sdk_calls_container_tools_synchronously_over_2025_11_25() {
    with_frontend(|url| async move {
        let mut command = Command::new(clients_dir().join("py-legacy/bin/python"));
        command.arg(script("py/legacy.py")).arg(&url);
        let lines = run_json(command).await;

        // Negotiated through a stateless initialize: no session.
        let initialized = steps(&lines, "initialized")[0];
        assert_eq!(initialized["protocolVersion"], "2025-11-25");
        assert_eq!(initialized["server"], "mcp-task-operator");
        // Tools, without the tasks extension or listChanged, which it could not use.
        assert_eq!(initialized["capabilities"], json!({ "tools": {} }));
        assert!(initialized["sessionId"].is_null(), "{initialized}");
        let names = &steps(&lines, "tools")[0]["names"];
        for tool in FIXTURE_TOOLS {
            assert!(
                names.as_array().is_some_and(|n| n.contains(&json!(tool))),
                "{tool} missing from {names}"
            );
        }
        // Task-optional: answered synchronously with the task's result.
        let optional = steps(&lines, "optional")[0];
        assert_eq!(optional["isError"], false, "{optional}");
        assert_eq!(optional["text"], "Computed legacy in 1 s");
        assert_eq!(optional["structured"]["label"], "legacy");
        // Task-forbidden: synchronous as for everybody.
        let forbidden = steps(&lines, "forbidden")[0];
        assert_eq!(forbidden["isError"], false, "{forbidden}");
        assert_eq!(forbidden["text"], "Hello, legacy!");
        // Task-required: a JSON-RPC error the client reads, naming the tool and the extension.
        let required = steps(&lines, "required")[0];
        assert_eq!(required["outcome"], "error", "{required}");
        assert_eq!(required["code"], -32021, "{required}");
        let message = required["message"].as_str().expect("message");
        assert!(
            message.contains("failing_job")
                && message.contains("2026-07-28")
                && message.contains("io.modelcontextprotocol/tasks"),
            "{message}"
        );
        assert_eq!(
            steps(&lines, "after")[0]["tools"],
            json!(names.as_array().map(Vec::len))
        );
    })
    .await;
}
