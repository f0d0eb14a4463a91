//! The real MCP clients of `tests/clients/` (the TypeScript client with ext-tasks and the Python
//! SDK with a tasks extension) and `examples/clients/restock_report.py` as child processes, with
//! the checks of the flows they run (poll, input, listen, cancel against the fixture tools).
//! `tests/tests/clients.rs` checks the same flows against a front end process.

use std::path::PathBuf;

use serde_json::{Value, json};
use tokio::process::Command;

/// The client installation `hack/clients.sh` made (`MTO_CLIENTS`).
pub fn clients_dir() -> PathBuf {
    std::env::var("MTO_CLIENTS")
        .expect("MTO_CLIENTS is not set: run the integration tests through `make test`")
        .into()
}

/// This checkout's `tests/clients/<path>`.
pub fn script(path: &str) -> PathBuf {
    crate::repo_dir().join("tests/clients").join(path)
}

/// Runs `command`, panicking with its output unless it succeeds; returns its stdout.
pub async fn run_ok(mut command: Command) -> String {
    let output = command
        .kill_on_drop(true)
        .output()
        .await
        .expect("the client starts");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client failed with {}:\n{stdout}\n{stderr}",
        output.status
    );
    stdout
}

/// Runs `command` like [`run_ok`] and parses every stdout line as JSON.
pub async fn run_json(command: Command) -> Vec<Value> {
    run_ok(command)
        .await
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The lines of `step`.
pub fn steps<'a>(lines: &'a [Value], step: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["step"] == step).collect()
}

/// Runs `tests/clients/ts/tasks.mjs` against `url` (sending `token` as its bearer token, when
/// given) and returns its lines.
pub async fn run_typescript_flows(url: &str, token: Option<&str>) -> Vec<Value> {
    let clients = clients_dir();
    // ESM resolves packages next to the script, so run a copy beside the clients' modules.
    let dir = std::env::temp_dir().join(format!(
        "mto-ts-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::os::unix::fs::symlink(clients.join("node_modules"), dir.join("node_modules"))
        .expect("link node_modules");
    std::fs::copy(script("ts/tasks.mjs"), dir.join("tasks.mjs")).expect("copy script");
    let mut command = Command::new(clients.join("node22"));
    command.arg(dir.join("tasks.mjs")).arg(url);
    with_token(&mut command, token);
    let lines = run_json(command).await;
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

/// Checks the TypeScript client's poll, input, listen and cancel flows.
pub fn assert_typescript_flows(lines: &[Value]) {
    assert_eq!(steps(lines, "connected")[0]["era"], "modern");
    let poll = steps(lines, "poll")[0];
    assert_eq!(
        (&poll["kind"], &poll["status"], &poll["text"]),
        (
            &json!("task"),
            &json!("completed"),
            &json!("Computed ts in 1 s")
        )
    );
    assert_large_result_gzip_coded(lines);
    let input = steps(lines, "input")[0];
    assert_eq!(input["kind"], "elicitation");
    assert_eq!(input["delivery"], "task-update");
    assert_eq!(steps(lines, "input-done")[0]["text"], "Deleted ts.txt");
    let notifications = steps(lines, "notification");
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
        steps(lines, "listen-done")[0]["text"],
        "Computed listened in 2 s"
    );
    assert_eq!(steps(lines, "cancel")[0]["status"], "cancelled");
}

/// The `large` step: the 12,000-character result arrived whole, and the client's own HTTP
/// stack asked for, got and decoded a gzip-coded `tasks/get` answer (the completed one; the
/// polls before it are small and sent as they are).
fn assert_large_result_gzip_coded(lines: &[Value]) {
    let large = steps(lines, "large")[0];
    assert_eq!(large["same"], true, "{large}");
    let encodings = large["encodings"].as_array().expect("encodings");
    assert_eq!(
        encodings.last(),
        Some(&json!("gzip")),
        "the completed answer: {large}"
    );
    assert!(
        encodings.iter().all(|e| e.is_null() || e == "gzip"),
        "{large}"
    );
}

/// Runs `tests/clients/py/tasks.py` against `url` (sending `token` as its bearer token, when
/// given) and returns its lines.
pub async fn run_python_flows(url: &str, token: Option<&str>) -> Vec<Value> {
    let mut command = Command::new(clients_dir().join("py/bin/python"));
    command.arg(script("py/tasks.py")).arg(url);
    with_token(&mut command, token);
    run_json(command).await
}

/// Gives a test client its bearer token in `MCP_BEARER_TOKEN` (never on the command line).
fn with_token(command: &mut Command, token: Option<&str>) {
    if let Some(token) = token {
        command.env("MCP_BEARER_TOKEN", token);
    }
}

/// Checks the Python SDK's poll, input, cancel and listen flows.
pub fn assert_python_flows(lines: &[Value]) {
    assert_eq!(
        steps(lines, "connected")[0]["protocolVersion"],
        "2026-07-28"
    );
    // The three claimed calls got a task handle, not an immediate result.
    let created = steps(lines, "created");
    assert_eq!(created.len(), 3);
    assert!(created.iter().all(|c| c["status"] == "working"));
    assert_eq!(steps(lines, "poll")[0]["text"], "Computed py in 1 s");
    assert_large_result_gzip_coded(lines);
    // The stand-in asks "Delete py.txt?", the real tool adds " This cannot be undone."
    let message = steps(lines, "input")[0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.starts_with("Delete py.txt?"), "{message}");
    assert_eq!(steps(lines, "input-done")[0]["text"], "Deleted py.txt");
    assert_eq!(steps(lines, "cancel-ack")[0]["resultType"], "complete");
    assert_eq!(steps(lines, "cancel")[0]["status"], "cancelled");
    let notifications = steps(lines, "notification");
    assert!(notifications.iter().all(|n| n["taskId"] == true));
    assert!(notifications.iter().all(|n| !n["subscriptionId"].is_null()));
    let last = notifications.last().expect("notifications");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["text"], "Computed listened in 2 s");
}

/// Runs `examples/clients/restock_report.py URL EXTRA...` with the Python SDK; returns stdout.
pub async fn run_restock_report(url: &str, extra: &[&str]) -> String {
    let path = crate::repo_dir().join("examples/clients/restock_report.py");
    let mut command = Command::new(clients_dir().join("py/bin/python"));
    command.arg(path).arg(url).args(extra);
    run_ok(command).await
}

/// Runs `examples/clients/restock_report.mjs URL EXTRA...` with the TypeScript client and
/// ext-tasks (their packages found through `NODE_PATH` and `node-path.mjs`); returns stdout.
pub async fn run_restock_report_ts(url: &str, extra: &[&str]) -> String {
    let clients = clients_dir();
    let examples = crate::repo_dir().join("examples/clients");
    let mut command = Command::new(clients.join("node22"));
    command
        .env("NODE_PATH", clients.join("node_modules"))
        .arg("--import")
        .arg(examples.join("node-path.mjs"))
        .arg(examples.join("restock_report.mjs"))
        .arg(url)
        .args(extra);
    run_ok(command).await
}
