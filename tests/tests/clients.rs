//! Real MCP clients against the real front end binary: the official TypeScript client with the
//! Tasks library (`tests/clients/ts/tasks.mjs`) and the official Python SDK with a task-claiming
//! client extension (`tests/clients/py/tasks.py`), each doing poll, input, cancel and listen.

use std::path::{Path, PathBuf};

use mcp_task_operator_tests::fixture_tools::{FIXTURE_TOOLS, serve_fixtures};
use mcp_task_operator_tests::frontend::Frontend;
use mcp_task_operator_tests::mcp_client::Mcp;
use mcp_task_operator_tests::with_temp_ns;
use serde_json::{Value, json};
use tokio::process::Command;

/// The client installation `hack/clients.sh` made.
fn clients_dir() -> PathBuf {
    std::env::var("MTO_CLIENTS")
        .expect("MTO_CLIENTS is not set: run the integration tests through `make test`")
        .into()
}

/// This checkout's `tests/clients/<path>`.
fn script(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("clients")
        .join(path)
}

/// Runs `command`, panicking with its output unless it succeeds; returns its JSON stdout lines.
async fn run(mut command: Command) -> Vec<Value> {
    let output = command
        .kill_on_drop(true)
        .output()
        .await
        .expect("the client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client failed with {}:\n{stdout}\n{stderr}",
        output.status
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The lines of `step`.
fn steps<'a>(lines: &'a [Value], step: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["step"] == step).collect()
}

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
        let clients = clients_dir();
        // ESM resolves packages next to the script, so run a copy beside the clients' modules.
        let dir = std::env::temp_dir().join(format!("mto-ts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let modules = dir.join("node_modules");
        if !modules.exists() {
            std::os::unix::fs::symlink(clients.join("node_modules"), &modules)
                .expect("link node_modules");
        }
        std::fs::copy(script("ts/tasks.mjs"), dir.join("tasks.mjs")).expect("copy script");
        let mut command = Command::new(clients.join("node22"));
        command.arg(dir.join("tasks.mjs")).arg(&url);
        let lines = run(command).await;

        assert_eq!(steps(&lines, "connected")[0]["era"], "modern");
        let poll = steps(&lines, "poll")[0];
        assert_eq!(
            (&poll["kind"], &poll["status"], &poll["text"]),
            (
                &json!("task"),
                &json!("completed"),
                &json!("Computed ts in 1 s")
            )
        );
        let input = steps(&lines, "input")[0];
        assert_eq!(input["kind"], "elicitation");
        assert_eq!(input["delivery"], "task-update");
        assert_eq!(steps(&lines, "input-done")[0]["text"], "Deleted ts.txt");
        let notifications = steps(&lines, "notification");
        assert!(notifications.iter().all(|n| n["taskId"] == true));
        assert!(
            notifications
                .iter()
                .all(|n| n["subscriptionId"].as_str().is_some_and(|s| !s.is_empty()))
        );
        assert_eq!(
            notifications.last().expect("notifications")["status"],
            "completed"
        );
        assert_eq!(
            steps(&lines, "listen-done")[0]["text"],
            "Computed listened in 2 s"
        );
        let cancel = steps(&lines, "cancel")[0];
        assert_eq!(cancel["status"], "cancelled");
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

#[tokio::test]
async fn python_sdk_with_a_tasks_extension_polls_answers_input_listens_and_cancels() {
    with_frontend(|url| async move {
        let mut command = Command::new(clients_dir().join("py/bin/python"));
        command.arg(script("py/tasks.py")).arg(&url);
        let lines = run(command).await;

        assert_eq!(
            steps(&lines, "connected")[0]["protocolVersion"],
            "2026-07-28"
        );
        // Both claimed calls got a task handle, not an immediate result.
        let created = steps(&lines, "created");
        assert_eq!(created.len(), 2);
        assert!(created.iter().all(|c| c["status"] == "working"));
        assert_eq!(steps(&lines, "poll")[0]["text"], "Computed py in 1 s");
        assert_eq!(steps(&lines, "input")[0]["message"], "Delete py.txt?");
        assert_eq!(steps(&lines, "input-done")[0]["text"], "Deleted py.txt");
        assert_eq!(steps(&lines, "cancel-ack")[0]["resultType"], "complete");
        assert_eq!(steps(&lines, "cancel")[0]["status"], "cancelled");
        let notifications = steps(&lines, "notification");
        assert!(notifications.iter().all(|n| n["taskId"] == true));
        assert!(notifications.iter().all(|n| !n["subscriptionId"].is_null()));
        let last = notifications.last().expect("notifications");
        assert_eq!(last["status"], "completed");
        assert_eq!(last["text"], "Computed listened in 2 s");
    })
    .await;
}

#[tokio::test]
async fn legacy_python_sdk_calls_container_tools_synchronously_over_2025_11_25() {
    with_frontend(|url| async move {
        let mut command = Command::new(clients_dir().join("py-legacy/bin/python"));
        command.arg(script("py/legacy.py")).arg(&url);
        let lines = run(command).await;

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
