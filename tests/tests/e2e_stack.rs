//! The whole stack end to end: the Helm chart installed namespace-scoped (2 operator and
//! 2 front-end replicas, our `dev` images), the example tools registered and validated by the
//! real operator, and real clients reaching the front end through its Service (a NodePort on
//! the bridge address, as `make up` does), so every task is a real Job:
//!
//! 1. the official conformance suite's whole 2026-07-28 run: its tasks scenarios (all must
//!    pass but the one the suite skips) and its core scenarios against the core fixture tools
//!    of `examples/conformance/core-mcptools.yaml`, each failure explained in
//!    docs/CONFORMANCE.md; `test_trigger_tool_change` patches its own McpTool from its pod;
//! 2. the TypeScript (ext-tasks) and Python SDK clients' poll, input, listen and cancel flows;
//! 3. the restock report through `examples/clients/restock_report.py`.
//!
//! The release runs with the chart's default auth (TokenReview for the front end's audience,
//! RBAC on tools): every client sends a ServiceAccount token bound to the caller role. The
//! suite alone sends no `Authorization` header (its `server` command has no header or auth
//! option), so it goes through a localhost relay that adds the same token.

use std::time::{Duration, Instant};

use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::clients::{
    assert_python_flows, assert_typescript_flows, run_python_flows, run_restock_report,
    run_typescript_flows,
};
use mcp_task_operator_harness::conformance::{
    EXPLAINED, EXPLAINED_WITH_REAL_JOBS, assert_suite_passes_or_is_explained, run_suite,
    tasks_scenario_failures,
};
use mcp_task_operator_harness::fixture_tools::{
    CORE_FIXTURE_MANIFEST, CORE_FIXTURE_TOOLS, FIXTURE_MANIFEST, FIXTURE_TOOLS, repo_file,
};
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::stack::{NODE_IP, Release, TWO_REPLICAS, install, wait_tools_ready};
use mcp_task_operator_harness::token_relay::TokenRelay;
use mcp_task_operator_harness::{ensure_crds, kubectl, kubectl_ok, with_temp_ns};
use serde_json::{Value, json};

const RELEASE: &str = "e2e";
/// Polls `tasks/get` every 50 ms until `status`; returns the result, the time it took and
/// every change of status or statusMessage seen on the way (seconds since `since`, status,
/// message).
async fn time_to_status(
    mcp: &Mcp,
    id: &str,
    status: &str,
    since: Instant,
) -> (Value, Duration, Vec<String>) {
    let mut seen: Vec<String> = Vec::new();
    let mut last = (Value::Null, Value::Null);
    loop {
        let result = mcp.get_task(id).await.result().clone();
        let now = (result["status"].clone(), result["statusMessage"].clone());
        if now != last {
            seen.push(format!(
                "{:.1} s {} {}",
                since.elapsed().as_secs_f64(),
                now.0,
                now.1
            ));
            last = now;
        }
        if result["status"] == status {
            return (result, since.elapsed(), seen);
        }
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "task {id} not {status} in 60 s; last: {result}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How long real Jobs take for the steps the suite times (it gives confirm_delete 5 s from
/// tools/call to input_required): three confirm_delete calls at once, each answered once it
/// asks, then a 0-second slow_compute. Prints the times; the suite's scenarios assert.
async fn measure(mcp: &Mcp) {
    let one = |n: usize| async move {
        let file = format!("timing-{n}.txt");
        let started = Instant::now();
        let id = mcp
            .start_task("confirm_delete", json!({ "filename": file }))
            .await;
        let (_, to_input, seen) = time_to_status(mcp, &id, "input_required", started).await;
        if n == 1 {
            eprintln!("confirm_delete as a client polling tasks/get saw it: {seen:#?}");
        }
        let answered = Instant::now();
        let answer = json!({ "confirm-1": { "action": "accept", "content": { "confirm": true } } });
        mcp.update_task(&id, answer).await;
        let (done, to_done, _) = time_to_status(mcp, &id, "completed", answered).await;
        assert_eq!(
            done["result"]["content"][0]["text"],
            format!("Deleted {file}")
        );
        (to_input.as_secs_f64(), to_done.as_secs_f64())
    };
    let (a, b, c) = tokio::join!(one(1), one(2), one(3));
    let started = Instant::now();
    let id = mcp
        .start_task("slow_compute", json!({ "seconds": 0, "label": "t" }))
        .await;
    let (_, instant, _) = time_to_status(mcp, &id, "completed", started).await;
    eprintln!(
        "timings with real Jobs: confirm_delete tools/call -> input_required {:.1} / {:.1} / \
         {:.1} s, tasks/update -> completed {:.1} / {:.1} / {:.1} s; slow_compute(0) \
         tools/call -> completed {:.1} s",
        a.0,
        b.0,
        c.0,
        a.1,
        b.1,
        c.1,
        instant.as_secs_f64()
    );
}

#[tokio::test]
async fn chart_serves_conformance_clients_and_restock_report_with_real_jobs() {
    with_temp_ns("e2e-stack", |client, ns| async move {
        let begun = Instant::now();
        ensure_crds(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let port = install(&ns, RELEASE, TWO_REPLICAS);
        let token = caller_token(&client, &ns, RELEASE, "e2e-client").await;
        eprintln!(
            "chart installed and rolled out in {:.1} s",
            begun.elapsed().as_secs_f64()
        );

        // Every tool at once: the core fixtures change nothing the tasks scenarios see.
        let manifests = [
            FIXTURE_MANIFEST,
            CORE_FIXTURE_MANIFEST,
            "examples/restock-report/mcptool.yaml",
        ]
        .map(repo_file);
        let mut apply = vec!["apply", "-n", &ns];
        for manifest in &manifests {
            apply.extend(["-f", manifest.to_str().expect("UTF-8 path")]);
        }
        kubectl_ok(&apply);
        // Ready is the real operator's verdict on each tool.
        wait_tools_ready(&ns);

        let url = format!("http://{NODE_IP}:{port}/mcp");
        let mcp = Mcp::new(&url).with_token(&token);
        let mut tools = FIXTURE_TOOLS.to_vec();
        tools.extend(CORE_FIXTURE_TOOLS);
        tools.push("restock_report");
        mcp.wait_for_tools(&tools).await;
        measure(&mcp).await;

        // 1. The suite, through a localhost relay to the NodePort that adds the token: its
        // DNS-rebinding scenario runs only against a localhost URL. One run holds the tasks
        // scenarios too.
        let relay = TokenRelay::start(&format!("{NODE_IP}:{port}"), &token).await;
        let local_url = format!("http://127.0.0.1:{}/mcp", relay.port);
        let out = std::env::temp_dir().join(format!("mto-e2e-conformance-{ns}"));
        let started = Instant::now();
        let checks = run_suite(&local_url, &["--requirements", "2026-07-28"], &out).await;
        let _ = std::fs::remove_dir_all(&out);
        eprintln!(
            "conformance 2026-07-28 run (tasks and core scenarios) took {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let failures = tasks_scenario_failures(&checks);
        assert!(
            failures.is_empty(),
            "tasks scenario failures: {failures:#?}"
        );
        assert_suite_passes_or_is_explained(
            &checks,
            &[EXPLAINED, EXPLAINED_WITH_REAL_JOBS].concat(),
        );
        assert_tool_changed_itself(&ns, &mcp).await;
        drop(relay);

        // 2. and 3. The clients and the restock report, at the same time.
        let started = Instant::now();
        let report_args = ["--delay-ms", "20", "--token", &token];
        let (ts, py, report) = tokio::join!(
            run_typescript_flows(&url, Some(&token)),
            run_python_flows(&url, Some(&token)),
            run_restock_report(&url, &report_args),
        );
        eprintln!(
            "clients and restock report took {:.1} s",
            started.elapsed().as_secs_f64()
        );
        assert_typescript_flows(&ts);
        assert_python_flows(&py);
        assert_restock_report(&report);
        assert_both_replicas_served(&ns);
        eprintln!("whole test took {:.1} s", begun.elapsed().as_secs_f64());
    })
    .await;
}

/// `test_trigger_tool_change`, called by the suite, rewrote its own McpTool from its pod (with
/// its ServiceAccount's token): the description names one of its tasks, and `tools/list`
/// serves the new description once the operator has validated the new generation.
async fn assert_tool_changed_itself(ns: &str, mcp: &Mcp) {
    let name = "conformance-test-trigger-tool-change";
    let description = kubectl_ok(&[
        "get",
        "mcptool",
        name,
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.description}",
    ]);
    let task = description
        .split("(last: ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(")."))
        .unwrap_or_else(|| panic!("{name} was not changed by its pod: {description:?}"));
    let tool = kubectl_ok(&[
        "get",
        "mcptask",
        task,
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.tool}",
    ]);
    assert_eq!(tool, "test_trigger_tool_change", "{description}");
    // Its token may patch that McpTool and nothing else.
    let sa = format!("system:serviceaccount:{ns}:conformance-trigger-tool-change");
    for (verb, object, allowed) in [
        ("patch", format!("mcptools/{name}"), "yes"),
        ("patch", "mcptools/conformance-greet".to_owned(), "no"),
        ("list", "mcptools".to_owned(), "no"),
        ("create", "mcptasks".to_owned(), "no"),
    ] {
        let out = kubectl(&["auth", "can-i", verb, &object, "-n", ns, "--as", &sa]);
        let answer = String::from_utf8_lossy(&out.stdout);
        assert_eq!(answer.trim(), allowed, "can {sa} {verb} {object}?");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = mcp.request("tools/list", json!({}), false).await;
        let listed = reply.result()["tools"]
            .as_array()
            .and_then(|tools| {
                tools
                    .iter()
                    .find(|t| t["name"] == "test_trigger_tool_change")
            })
            .map(|t| t["description"].clone());
        if listed.as_ref().and_then(Value::as_str) == Some(description.as_str()) {
            eprintln!("test_trigger_tool_change's pod changed its McpTool: {description}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "tools/list never served {description:?}; it has {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every front-end replica answered requests through the Service (kube-proxy spreads the
/// clients' connections), read from each pod's `/metrics` through the API server's proxy.
fn assert_both_replicas_served(ns: &str) {
    let selector =
        format!("app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=mcp-frontend");
    let pods = kubectl_ok(&[
        "get",
        "pods",
        "-n",
        ns,
        "-l",
        &selector,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    let pods: Vec<&str> = pods.split_whitespace().collect();
    assert_eq!(pods.len(), 2, "front-end pods: {pods:?}");
    for pod in pods {
        let path = format!("/api/v1/namespaces/{ns}/pods/{pod}:8080/proxy/metrics");
        let metrics = kubectl_ok(&["get", "--raw", &path]);
        let served: f64 = metrics
            .lines()
            .filter(|l| l.starts_with("mcp_frontend_requests_total{"))
            // MCP requests only, not the kubelet's probes.
            .filter(|l| l.contains("method=\"tools/call\"") || l.contains("method=\"tasks/"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        eprintln!("front end {pod} answered {served} tools/call and tasks/* requests");
        assert!(served > 0.0, "{pod} answered no request:\n{metrics}");
    }
}

/// The report's task completed having recounted every product, with the 13 products under
/// the default threshold (examples/README.md lists them). At 20 ms per product the whole
/// recount takes about 1.3 s, so a client polling every second may see no progress message.
fn assert_restock_report(stdout: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with(": completed - recounted 64 of 64 SKUs")),
        "the task did not complete:\n{stdout}"
    );
    let structured: Value = lines
        .iter()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no structuredContent line:\n{stdout}"));
    let low: Vec<&str> = structured["lowStock"]
        .as_array()
        .expect("lowStock")
        .iter()
        .map(|p| p["sku"].as_str().expect("sku"))
        .collect();
    assert_eq!(
        low,
        [
            "SKU-0004", "SKU-0008", "SKU-0012", "SKU-0016", "SKU-0020", "SKU-0031", "SKU-0035",
            "SKU-0039", "SKU-0043", "SKU-0047", "SKU-0054", "SKU-0058", "SKU-0062"
        ],
        "{stdout}"
    );
    assert_eq!(structured["recounted"], 64);
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("13 of 64 SKUs have fewer than 10 units")),
        "{stdout}"
    );
}
