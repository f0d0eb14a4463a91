//! Section 2: `tools/call` → `CreateTaskResult` through the front end, beside a bare API-server
//! create of the same McpTask, alternating one of each so both see the same noise.

use std::time::{Duration, Instant};

use kube::Api;
use kube::api::PostParams;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::fixture_tools::mark_tools_ready;
use mcp_task_operator_harness::frontend::{Frontend, UNLIMITED};
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{create_tool, shell_tool};
use serde_json::json;

use crate::cluster::{ANONYMOUS, task_manifest};
use crate::report::Section;
use crate::sections::Bench;
use crate::stats::{ms, quantile, ratio};

/// The tool the calls name; no operator runs, so its tasks never start.
const TOOL: &str = "bench-call";

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    create_tool(&client, ns, &shell_tool(TOOL, "true", json!({}))).await;
    mark_tools_ready(&client, ns).await;
    let frontend = Frontend::start(ns, UNLIMITED).await;
    let mcp = Mcp::new(&frontend.url);
    mcp.wait_for_tools(&[TOOL]).await;
    let api: Api<McpTask> = Api::namespaced(client.clone(), ns);

    let mut calls = Vec::new();
    let mut creates = Vec::new();
    let warmup = 10;
    for n in 0..config.calls + warmup {
        let started = Instant::now();
        let reply = mcp.call_tool(TOOL, json!({"n": n})).await;
        let call = started.elapsed();
        if reply.body["result"]["resultType"] != "task" {
            return Err(format!("tools/call made no task: {}", reply.body));
        }
        let task = task_manifest(TOOL, ANONYMOUS);
        let started = Instant::now();
        api.create(&PostParams::default(), &task)
            .await
            .map_err(|e| format!("bare create failed: {e}"))?;
        let create = started.elapsed();
        if n >= warmup {
            calls.push(call);
            creates.push(create);
        }
    }
    for (what, samples) in [
        ("tools/call → CreateTaskResult (front end)", &mut calls),
        ("bare create of the McpTask (kube client)", &mut creates),
    ] {
        section.row(vec![
            what.to_owned(),
            samples.len().to_string(),
            ms(quantile(samples, 0.5)),
            ms(quantile(samples, 0.99)),
            ms(mean(samples)),
        ]);
    }
    let (call, create) = (quantile(&mut calls, 0.5), quantile(&mut creates, 0.5));
    section.note(format!(
        "tools/call ÷ bare create: median {}, p99 {} (goal ≤ 1.5×); {} warm-up pairs discarded",
        ratio(call.as_secs_f64(), create.as_secs_f64()),
        ratio(
            quantile(&mut calls, 0.99).as_secs_f64(),
            quantile(&mut creates, 0.99).as_secs_f64()
        ),
        warmup
    ));
    drop(frontend);
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "2. tools/call → CreateTaskResult beside a bare create",
        &["what", "n", "median", "p99", "mean"],
    )
}

fn mean(samples: &[Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.iter().sum::<Duration>() / samples.len() as u32
}
