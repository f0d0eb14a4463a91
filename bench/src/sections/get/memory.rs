//! Memory per cached task in the front end, fast path on and off: two fresh front ends, their
//! resident memory before `n` completed tasks (1 KiB results) are created and after each has
//! been polled once (so the fast path holds an answer for each). Then what a stored task with
//! the largest arguments costs the front end and the operator.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::Api;
use mcp_task_operator_crds::{McpTask, RawJson};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::operator::Operator;
use serde_json::json;

use super::setup::{SIZES, anonymous, wait_completed};
use crate::cluster::{
    ANONYMOUS, create_completed_task_as, create_completed_task_with, resident_mib, task_manifest,
};
use crate::load;
use crate::mcp::{addr_of, tasks_get};
use crate::report::Section;
use crate::sections::Bench;

/// Tasks created at once.
const CREATE_CONCURRENCY: usize = 16;

/// Measures the memory per cached task, fast path on and off.
pub async fn measure(bench: &Bench<'_>) -> Result<Section, String> {
    let n = bench.config.memory_tasks;
    let mut table = Section::new(
        &format!(
            "1d. front end memory per cached task ({n} completed tasks, 1 KiB results, each polled once)"
        ),
        &["front end", "RSS before", "RSS after", "per task"],
    );
    if n == 0 {
        table.note("not measured: MTO_BENCH_MEMORY_TASKS=0");
        return Ok(table);
    }
    let ns = bench.ns;
    let frontends = [
        (
            "fast path (default)",
            Frontend::start(ns, &anonymous(true)).await,
        ),
        (
            "full path (FAST_GET=false)",
            Frontend::start(ns, &anonymous(false)).await,
        ),
    ];
    // Idle for a moment, so the start-up allocations have settled.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before: Vec<f64> = frontends
        .iter()
        .map(|(_, f)| resident_mib(f.pid()).map(|(rss, _)| rss))
        .collect::<Result<_, _>>()?;
    let api: Api<McpTask> = Api::namespaced(bench.client.clone(), ns);
    let text = "x".repeat(SIZES[0].0);
    let ids: Vec<String> = futures::stream::iter(0..n)
        .map(|_| create_completed_task_as(&api, "bench", ANONYMOUS, &text))
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect()
        .await?;
    for ((name, frontend), before) in frontends.iter().zip(before) {
        let addr = addr_of(&frontend.url)?;
        // The last task created is in the cache once it answers.
        if let Some(last) = ids.last() {
            wait_completed(&tasks_get(addr, std::slice::from_ref(last))).await?;
        }
        for id in &ids {
            let answer = load::once(&tasks_get(addr, std::slice::from_ref(id))).await?;
            if answer.status != 200 {
                return Err(format!("tasks/get {id} answered {}", answer.status));
            }
        }
        let (after, _) = resident_mib(frontend.pid())?;
        table.row(vec![
            (*name).to_owned(),
            format!("{before:.1} MiB"),
            format!("{after:.1} MiB"),
            format!("{:.2} KiB", (after - before) * 1024.0 / n as f64),
        ]);
    }
    table.note(
        "one measurement, not rounds: RSS (VmRSS from /proc) grows in allocator-sized steps, \
         so the figure is an estimate of the order of magnitude",
    );
    Ok(table)
}

/// Bytes of the `[0,0,…]` arguments of each stored task in [`measure_stored`]: the most a call
/// may send (`MCP_FRONTEND_MAX_ARGUMENT_BYTES`, 64 KiB), in the shape that costs the most as a
/// parsed tree (a 32-byte value per two bytes of JSON).
const STORED_ARGUMENT_BYTES: usize = 64 * 1024;

/// Measures what one stored task with 64 KiB of `[0,0,…]` arguments costs the front end and the
/// operator (both cache every task of their namespace): their resident memory before `n`
/// completed tasks are created and once both have them (issue 36, item 1).
pub async fn measure_stored(bench: &Bench<'_>) -> Result<Section, String> {
    let n = bench.config.memory_tasks;
    let mut table = Section::new(
        &format!(
            "1e. memory per stored task with 64 KiB `[0,0,…]` arguments ({n} completed tasks)"
        ),
        &["process", "RSS before", "RSS after", "per task"],
    );
    if n == 0 {
        table.note("not measured: MTO_BENCH_MEMORY_TASKS=0");
        return Ok(table);
    }
    let ns = bench.ns;
    let frontend = Frontend::start(ns, &anonymous(true)).await;
    let operator = Operator::start_leader(ns).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pids = [("front end", frontend.pid()), ("operator", operator.pid())];
    let before: Vec<f64> = pids
        .iter()
        .map(|(_, pid)| resident_mib(*pid).map(|(rss, _)| rss))
        .collect::<Result<_, _>>()?;
    let api: Api<McpTask> = Api::namespaced(bench.client.clone(), ns);
    let zeros = vec![0; STORED_ARGUMENT_BYTES / 2 - 1];
    let ids: Vec<String> = futures::stream::iter(0..n)
        .map(|_| {
            let mut task = task_manifest("bench", ANONYMOUS);
            task.spec.arguments = RawJson::new(&json!({"zeros": zeros})).ok();
            create_completed_task_with(&api, task, "ok")
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect()
        .await?;
    // Both caches hold every task once the front end answers the last one; the operator's
    // watch delivers at the same pace (a few seconds of margin).
    let addr = addr_of(&frontend.url)?;
    if let Some(last) = ids.last() {
        wait_completed(&tasks_get(addr, std::slice::from_ref(last))).await?;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    for ((name, pid), before) in pids.iter().zip(before) {
        let (after, _) = resident_mib(*pid)?;
        table.row(vec![
            (*name).to_owned(),
            format!("{before:.1} MiB"),
            format!("{after:.1} MiB"),
            format!("{:.0} KiB", (after - before) * 1024.0 / n as f64),
        ]);
    }
    table.note(format!(
        "arguments of {STORED_ARGUMENT_BYTES} bytes each; one measurement, not rounds (RSS grows in \
         allocator-sized steps)"
    ));
    Ok(table)
}
