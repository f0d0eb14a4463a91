//! Section 2: `tools/call` → `CreateTaskResult` through the front end, beside a bare API-server
//! create of the same McpTask, in rounds of three (the front end as configured by default, the
//! front end without the `tools/call` fast path, `FAST_CALL=false`, and the bare create; which
//! goes first rotates round by round) so all see the same noise; each figure is the median of
//! the per-round ratios, with its p10–p90. The bare create sends a copy of the object a front
//! end stored for the call before it (spec, annotations and labels; a new name), so every write
//! costs the API server the same.

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
use crate::stats::{ms, nearest_rank, quantile, ratio};

/// The tool the calls name; no operator runs, so its tasks never start.
const TOOL: &str = "bench-call";

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    let tool = shell_tool(TOOL, "true", json!({}));
    create_tool(&client, ns, &tool).await;
    mark_tools_ready(&client, ns).await;
    let full_path: Vec<_> = UNLIMITED
        .iter()
        .copied()
        .chain([("FAST_CALL", "false")])
        .collect();
    let frontends = [
        Frontend::start(ns, UNLIMITED).await,
        Frontend::start(ns, &full_path).await,
    ];
    let clients = frontends.each_ref().map(|f| Mcp::new(&f.url));
    for mcp in &clients {
        mcp.wait_for_tools(&[TOOL]).await;
    }
    let api: Api<McpTask> = Api::namespaced(client.clone(), ns);

    // Per contender: the fast path, the full path, the bare create.
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let warmup = 10;
    // Until the first call has stored one: an object of the same tool.
    let mut template = task_manifest(TOOL, ANONYMOUS);
    for n in 0..config.calls + warmup {
        let mut round = [Duration::ZERO; 3];
        for k in 0..3 {
            let which = (n + k) % 3;
            round[which] = match clients.get(which) {
                Some(mcp) => {
                    let (call, id) = call(mcp, n).await?;
                    template = stored(&api, &id).await?;
                    call
                }
                None => create(&api, &template).await?,
            };
        }
        if n >= warmup {
            for (samples, time) in samples.iter_mut().zip(round) {
                samples.push(time);
            }
        }
    }
    let [mut calls, mut full_calls, mut creates] = samples;
    let per_round = |a: &[Duration], b: &[Duration]| -> Vec<f64> {
        a.iter()
            .zip(b)
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
            .collect()
    };
    let ratios = per_round(&calls, &creates);
    let full_ratios = per_round(&full_calls, &creates);
    let fast_over_full = per_round(&calls, &full_calls);
    for (what, samples) in [
        ("tools/call → CreateTaskResult (front end)", &mut calls),
        ("tools/call, full path (FAST_CALL=false)", &mut full_calls),
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
    let paired = pairs(&ratios);
    section.note(format!(
        "tools/call ÷ bare create, per round: median {:.2}× (p10–p90 {}–{}; goal ≤ 1.3×: {}); of \
         the medians {}, of the p99s {}; which of the three goes first rotates round by round; \
         {warmup} warm-up rounds discarded",
        paired.0,
        paired.1,
        paired.2,
        if paired.0 <= 1.3 { "met" } else { "missed" },
        ratio(
            quantile(&mut calls, 0.5).as_secs_f64(),
            quantile(&mut creates, 0.5).as_secs_f64()
        ),
        ratio(
            quantile(&mut calls, 0.99).as_secs_f64(),
            quantile(&mut creates, 0.99).as_secs_f64()
        ),
    ));
    let (full, low, high) = pairs(&full_ratios);
    let (fast, fast_low, fast_high) = pairs(&fast_over_full);
    section.note(format!(
        "full path (FAST_CALL=false) ÷ bare create, per round: median {full:.2}× (p10–p90 \
         {low}–{high}); fast path ÷ full path: median {fast:.2}× (p10–p90 {fast_low}–{fast_high})"
    ));
    drop(frontends);
    // The front end's own share, without the API server (after the process above has gone).
    section.note(crate::costs::call_in_process(&tool, config.rounds.max(1)).await?);
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "2. tools/call → CreateTaskResult beside a bare create",
        &["what", "n", "median", "p99", "mean"],
    )
}

/// One `tools/call` of [`TOOL`], timed, and the task ID it answered; an answer that is no
/// task is an error.
async fn call(mcp: &Mcp, n: usize) -> Result<(Duration, String), String> {
    let started = Instant::now();
    let reply = mcp.call_tool(TOOL, json!({"n": n})).await;
    let elapsed = started.elapsed();
    match reply.body["result"]["taskId"].as_str() {
        Some(id) if reply.body["result"]["resultType"] == "task" => Ok((elapsed, id.to_owned())),
        _ => Err(format!("tools/call made no task: {}", reply.body)),
    }
}

/// The McpTask the front end stored as `id`, as a template for a bare create: its spec,
/// annotations and labels.
async fn stored(api: &Api<McpTask>, id: &str) -> Result<McpTask, String> {
    let task = api
        .get(id)
        .await
        .map_err(|e| format!("cannot read McpTask {id}: {e}"))?;
    let mut copy = McpTask::new(id, task.spec);
    copy.metadata.annotations = task.metadata.annotations;
    copy.metadata.labels = task.metadata.labels;
    Ok(copy)
}

/// One bare create of a copy of `template` under a fresh task ID, timed.
async fn create(api: &Api<McpTask>, template: &McpTask) -> Result<Duration, String> {
    let mut task = template.clone();
    task.metadata.name = Some(mcp_task_operator_crds::task_id::generate());
    let started = Instant::now();
    api.create(&PostParams::default(), &task)
        .await
        .map_err(|e| format!("bare create failed: {e}"))?;
    Ok(started.elapsed())
}

/// Median, p10 and p90 of the per-round ratios, as `1.23×`.
fn pairs(ratios: &[f64]) -> (f64, String, String) {
    let mut sorted = ratios.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| nearest_rank(&sorted, q).unwrap_or(f64::NAN);
    (
        at(0.5),
        format!("{:.2}×", at(0.1)),
        format!("{:.2}×", at(0.9)),
    )
}

fn mean(samples: &[Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.iter().sum::<Duration>() / samples.len() as u32
}
