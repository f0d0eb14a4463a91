//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, from `MTO_CLIENTS`)
//! as a child process: its tasks scenarios and a runner that collects every check it wrote.
//! `tests/tests/conformance.rs` runs it against a front end process with a test-side status
//! writer, `tests/tests/e2e_stack.rs` against the installed chart with real Jobs.

use std::path::Path;

use serde_json::Value;
use tokio::process::Command;

/// The suite's tasks scenarios (protocol reference B18).
pub const SCENARIOS: [&str; 10] = [
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
pub const SKIPPED_BY_THE_SUITE: &str = "tasks-status-notifications";

/// One check the suite wrote.
#[derive(Debug, Clone)]
pub struct Check {
    /// The scenario that ran it.
    pub scenario: String,
    /// The check's id.
    pub id: String,
    /// `SUCCESS`, `FAILURE`, `WARNING`, `INFO` or `SKIPPED`.
    pub status: String,
    /// The suite's explanation when it did not pass.
    pub message: String,
}

/// Runs the suite with `selection` (e.g. `--scenario tasks-lifecycle`) against `url`, writing
/// its results under `out`, and returns its checks. The suite sends no auth headers.
pub async fn run_suite(url: &str, selection: &[&str], out: &Path) -> Vec<Check> {
    let clients = std::env::var("MTO_CLIENTS")
        .expect("MTO_CLIENTS is not set: run the integration tests through `make test`");
    let clients = Path::new(&clients);
    let output = Command::new(clients.join("node22"))
        .arg(clients.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", url, "--timeout", "120000"])
        .args(selection)
        .arg("-o")
        .arg(out)
        .kill_on_drop(true)
        .output()
        .await
        .expect("the conformance suite runs");
    let log = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let mut checks = Vec::new();
    for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
        // Result directories are `server-<scenario>-<timestamp>`, the timestamp an ISO time
        // with `-` for `:` and `.` (24 characters, e.g. `2026-11-30T02-48-29-182Z`).
        let dir = entry.file_name().to_string_lossy().into_owned();
        let Some(scenario) = dir
            .strip_prefix("server-")
            .and_then(|rest| rest.len().checked_sub(25).map(|end| rest[..end].to_owned()))
        else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path().join("checks.json"))
            .unwrap_or_else(|e| panic!("{dir} has no checks.json ({e}):\n{log}"));
        let list: Vec<Value> = serde_json::from_str(&text).expect("checks.json is JSON");
        for c in list {
            let field = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            checks.push(Check {
                scenario: scenario.clone(),
                id: field("id"),
                status: field("status"),
                message: field("errorMessage"),
            });
        }
    }
    assert!(!checks.is_empty(), "the suite wrote no checks:\n{log}");
    checks
}

/// The suite's checks for one scenario.
pub async fn run_scenario(url: &str, scenario: &str, out: &Path) -> Vec<Check> {
    run_suite(url, &["--scenario", scenario], &out.join(scenario)).await
}

/// Runs every scenario of [`SCENARIOS`] against `url`, one after the other, printing a line per
/// scenario, and returns what did not pass: every check but SUCCESS (the skipped scenario's
/// SKIPPED aside) and every other scenario in which no check ran.
pub async fn run_tasks_scenarios(url: &str, out: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    for scenario in SCENARIOS {
        let started = std::time::Instant::now();
        let checks = run_scenario(url, scenario, out).await;
        let passed = checks.iter().filter(|c| c.status == "SUCCESS").count();
        eprintln!(
            "{scenario}: {passed}/{} checks passed in {:.1} s",
            checks.len(),
            started.elapsed().as_secs_f64()
        );
        for c in &checks {
            let skipped_scenario = scenario == SKIPPED_BY_THE_SUITE && c.status == "SKIPPED";
            if c.status != "SUCCESS" && !skipped_scenario {
                failures.push(format!("{scenario}/{}: {}: {}", c.id, c.status, c.message));
            }
        }
        if scenario != SKIPPED_BY_THE_SUITE && passed == 0 {
            failures.push(format!("{scenario}: no check ran"));
        }
    }
    failures
}
