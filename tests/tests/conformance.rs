//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, from `MTO_CLIENTS`)
//! against the real front end binary: every tasks scenario must pass. The fixture tools are the
//! McpTools in `examples/conformance/mcptools.yaml`, played by the test-side status writer.

use std::path::Path;

use mcp_task_operator_tests::fixture_tools::{FIXTURE_TOOLS, serve_fixtures};
use mcp_task_operator_tests::frontend::Frontend;
use mcp_task_operator_tests::mcp_client::Mcp;
use mcp_task_operator_tests::with_temp_ns;
use serde_json::Value;
use tokio::process::Command;

/// The suite's tasks scenarios (protocol reference B18).
const SCENARIOS: [&str; 10] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// The one scenario the suite itself skips ("pending subscriptions/listen rewrite"); our own
/// listen tests in `frontend.rs` cover what it would check.
const SKIPPED_BY_THE_SUITE: &str = "tasks-status-notifications";

/// The suite's checks for one scenario: (check id, status).
async fn run_scenario(url: &str, scenario: &str, out: &Path) -> Vec<(String, String)> {
    let clients = std::env::var("MTO_CLIENTS")
        .expect("MTO_CLIENTS is not set: run the integration tests through `make test`");
    let clients = Path::new(&clients);
    let dir = out.join(scenario);
    let output = Command::new(clients.join("node22"))
        .arg(clients.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args([
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            "--timeout",
            "120000",
        ])
        .arg("-o")
        .arg(&dir)
        .kill_on_drop(true)
        .output()
        .await
        .expect("the conformance suite runs");
    let log = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let checks = std::fs::read_dir(&dir)
        .ok()
        .and_then(|mut entries| entries.next())
        .and_then(|entry| std::fs::read_to_string(entry.ok()?.path().join("checks.json")).ok())
        .and_then(|text| serde_json::from_str::<Vec<Value>>(&text).ok())
        .unwrap_or_else(|| panic!("{scenario} wrote no checks.json:\n{log}"));
    if !output.status.success() {
        eprintln!("{scenario} exited with {}:\n{log}", output.status);
    }
    checks
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (field("id"), field("status"))
        })
        .collect()
}

#[tokio::test]
async fn every_tasks_scenario_of_the_official_conformance_suite_passes() {
    with_temp_ns("conformance", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let frontend = Frontend::start(&ns, &[]).await;
        Mcp::new(&frontend.url).wait_for_tools(&FIXTURE_TOOLS).await;
        let out = std::env::temp_dir().join(format!("mto-conformance-{ns}"));

        let mut failures = Vec::new();
        for scenario in SCENARIOS {
            let checks = run_scenario(&frontend.url, scenario, &out).await;
            let passed = checks.iter().filter(|(_, s)| s == "SUCCESS").count();
            eprintln!("{scenario}: {passed}/{} checks passed", checks.len());
            for (id, status) in &checks {
                let skipped_scenario = scenario == SKIPPED_BY_THE_SUITE && status == "SKIPPED";
                if status != "SUCCESS" && !skipped_scenario {
                    failures.push(format!("{scenario}/{id}: {status}"));
                }
            }
            if scenario != SKIPPED_BY_THE_SUITE && passed == 0 {
                failures.push(format!("{scenario}: no check ran"));
            }
        }
        let _ = std::fs::remove_dir_all(&out);
        assert!(failures.is_empty(), "conformance failures: {failures:#?}");
    })
    .await;
}
