//! Section 1: `tasks/get` of a cached, completed task through one front end replica (fast path
//! and full path), beside a plain rmcp server with its own `TaskManager`, an axum handler that
//! parses the JSON-RPC body and answers from a map of pre-serialized results, and bare axum;
//! then the result sizes, the auth modes and the memory per cached task. Every point is
//! measured in interleaved rounds ([`crate::rounds`]); harness and servers are pinned to
//! separate cores when there are two.

mod memory;
mod setup;

use crate::procs;
use crate::report::Section;
use crate::rounds::{self, Contender, Point};
use crate::sections::Bench;
use crate::stats::Spread;

use setup::{SIZES, Stack};

/// The connections of the size and auth points.
const CONNECTIONS: usize = 16;

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let config = bench.config;
    let stack = Stack::start(&bench).await?;
    let pinned = pin(&stack.pids());
    section.note(
        pinned
            .clone()
            .unwrap_or_else(|e| format!("NOT pinned: {e}")),
    );
    section.note(format!(
        "method: {} interleaved rounds per point; in each round every server is driven once \
         for {} ms (after {} ms unrecorded), in an order rotated round by round; each figure \
         is the median over the rounds, each ratio the median of the per-round paired ratios, \
         with its range (min–max) in parentheses; CPU is the server's utime+stime from \
         /proc/<pid>/stat per answered request; the machine is shared with other builds and the \
         cluster, so absolute figures move between runs, paired ratios much less",
        config.rounds,
        config.window.as_millis(),
        config.window.as_millis() / 4
    ));
    section.note(format!(
        "answer sizes: front end {} B at 1 KiB, {} B at 64 KiB, {} B at 512 KiB (the same result, re-serialized, \
         from the JSON-RPC axum baseline; bare axum returns the 1 KiB answer); plain rmcp {} B \
         at 1 KiB",
        stack.answer_bytes[0],
        stack.answer_bytes[1],
        stack.answer_bytes[2],
        stack.rmcp_answer_bytes
    ));
    let outcome = measure(&bench, &stack, section).await;
    let _ = procs::pin(
        std::process::id(),
        &format!("0-{}", procs::cpus().max(1) - 1),
    );
    outcome?;
    let api: kube::Api<mcp_task_operator_crds::McpTask> =
        kube::Api::namespaced(bench.client.clone(), bench.ns);
    let stored = api
        .get(&stack.ids[0])
        .await
        .map_err(|e| format!("cannot read McpTask {}: {e}", stack.ids[0]))?;
    section.note(format!(
        "in-process cost of the full path's steps for one cached tasks/get (1 KiB): {}",
        crate::costs::measure(&stored).join("; ")
    ));
    drop(stack);
    let memory = memory::measure(&bench).await?;
    section.tables.push(memory);
    Ok(())
}

/// The `stored` section: what a stored task with the largest arguments costs the front end
/// and the operator (`MTO_BENCH_SECTIONS=stored` runs it alone).
pub fn stored_section() -> Section {
    Section::new("1e. memory per stored task", &[])
}

/// Runs the `stored` section.
pub async fn run_stored(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    section.tables.push(memory::measure_stored(&bench).await?);
    Ok(())
}

async fn measure(bench: &Bench<'_>, stack: &Stack, section: &mut Section) -> Result<(), String> {
    let config = bench.config;
    let (rounds, window) = (config.rounds, config.window);
    let mut goal_rmcp = Vec::new();
    let mut goal_jsonrpc = Vec::new();
    for &connections in &config.connections {
        let contenders = [
            stack.fast[0].clone(),
            stack.full[0].clone(),
            stack.rmcp.clone(),
            stack.jsonrpc[0].clone(),
            stack.axum.clone(),
        ];
        let point = rounds::measure(&contenders, connections, rounds, window).await?;
        let vs_rmcp = Spread::of_ratios(&point.rps(0), &point.rps(2));
        let vs_jsonrpc = Spread::of_ratios(&point.rps(0), &point.rps(3));
        goal_rmcp.push(format!("{connections}: {}", vs_rmcp.ratio()));
        goal_jsonrpc.push(format!("{connections}: {}", vs_jsonrpc.ratio()));
        let mut row = vec![connections.to_string()];
        row.extend((0..contenders.len()).map(|c| cell(&point, c)));
        row.push(vs_rmcp.ratio());
        row.push(vs_jsonrpc.ratio());
        row.push(Spread::of_ratios(&point.rps(0), &point.rps(1)).ratio());
        row.push(Spread::of_ratios(&point.cpu_us(0), &point.cpu_us(2)).ratio());
        section.row(row);
    }
    section.note(format!(
        "goal fast path ≥ 1.5× plain rmcp (req/s), by connections: {}",
        goal_rmcp.join(", ")
    ));
    section.note(format!(
        "goal fast path ≥ 0.6× the JSON-RPC axum baseline (req/s), by connections: {}",
        goal_jsonrpc.join(", ")
    ));
    section.tables.push(sizes(stack, rounds, window).await?);
    section.tables.push(auth(stack, rounds, window).await?);
    Ok(())
}

/// The result sizes at [`CONNECTIONS`] connections.
async fn sizes(
    stack: &Stack,
    rounds: usize,
    window: std::time::Duration,
) -> Result<Section, String> {
    let mut table = Section::new(
        &format!("1b. tasks/get by result size ({CONNECTIONS} connections)"),
        &[
            "result text",
            "answer",
            "fast path req/s · p50 · CPU/req",
            "full path",
            "JSON-RPC axum",
            "fast ÷ full (req/s)",
            "fast ÷ JSON-RPC axum (req/s)",
            "fast path CPU/req ÷ its CPU/req at 1 KiB (goal ≤ 2×)",
            "with Accept-Encoding: gzip: answer sent · decode in the client",
            "fast path, gzip: req/s · p50 · CPU/req",
            "gzip CPU/req ÷ fast path CPU/req at 1 KiB (goal ≤ 2×)",
        ],
    );
    let contenders: Vec<Contender> = stack
        .fast
        .iter()
        .chain(&stack.full)
        .chain(&stack.jsonrpc)
        .chain(&stack.fast_gzip)
        .cloned()
        .collect();
    let point = rounds::measure(&contenders, CONNECTIONS, rounds, window).await?;
    let n = SIZES.len();
    for (s, (_, name)) in SIZES.iter().enumerate() {
        let sent = match stack.gzip[s] {
            Some((bytes, decode_us)) => format!("{bytes} B gzip · {decode_us:.0} µs"),
            None => "as it is (below GZIP_MIN_BYTES)".to_owned(),
        };
        table.row(vec![
            (*name).to_owned(),
            format!("{} B", stack.answer_bytes[s]),
            cell(&point, s),
            cell(&point, n + s),
            cell(&point, 2 * n + s),
            Spread::of_ratios(&point.rps(s), &point.rps(n + s)).ratio(),
            Spread::of_ratios(&point.rps(s), &point.rps(2 * n + s)).ratio(),
            Spread::of_ratios(&point.cpu_us(s), &point.cpu_us(0)).ratio(),
            sent,
            cell(&point, 3 * n + s),
            Spread::of_ratios(&point.cpu_us(3 * n + s), &point.cpu_us(0)).ratio(),
        ]);
    }
    table.note(
        "results are this checkout's Rust sources as text; a poll with Accept-Encoding: gzip \
         gets the answer gzip-coded from GZIP_MIN_BYTES (8192) on, compressed once per task \
         state; each gzip-coded answer was checked to decode to the plain answer's bytes",
    );
    Ok(table)
}

/// The auth modes at [`CONNECTIONS`] connections, fast path, 1 KiB.
async fn auth(
    stack: &Stack,
    rounds: usize,
    window: std::time::Duration,
) -> Result<Section, String> {
    let mut table = Section::new(
        &format!("1c. tasks/get by auth mode (fast path, 1 KiB, {CONNECTIONS} connections)"),
        &[
            "auth mode",
            "req/s · p50 · CPU/req",
            "÷ none (req/s)",
            "CPU/req ÷ none",
        ],
    );
    let mut none = stack.fast[0].clone();
    none.name = "none".to_owned();
    let contenders = [
        none,
        stack.static_tokens.clone(),
        stack.token_review.clone(),
    ];
    let point = rounds::measure(&contenders, CONNECTIONS, rounds, window).await?;
    for (c, contender) in contenders.iter().enumerate() {
        table.row(vec![
            contender.name.clone(),
            cell(&point, c),
            Spread::of_ratios(&point.rps(c), &point.rps(0)).ratio(),
            Spread::of_ratios(&point.cpu_us(c), &point.cpu_us(0)).ratio(),
        ]);
    }
    Ok(table)
}

/// Pins this process to CPU 0 and `servers` to CPU 1; says what it did.
fn pin(servers: &[u32]) -> Result<String, String> {
    let cpus = procs::cpus();
    if cpus < 2 {
        return Err(format!("{cpus} CPU"));
    }
    procs::pin(std::process::id(), "0")?;
    for &pid in servers {
        procs::pin(pid, &format!("1-{}", cpus - 1))?;
    }
    Ok(format!(
        "pinned: load generator (the harness) on CPU 0, every server on CPU{} 1{} ({cpus} CPUs \
         here; the cluster's processes are not pinned and share both)",
        if cpus > 2 { "s" } else { "" },
        if cpus > 2 {
            format!("–{}", cpus - 1)
        } else {
            String::new()
        }
    ))
}

/// One contender's medians: `req/s · p50 · CPU/req`, and failures if any.
fn cell(point: &Point, c: usize) -> String {
    let failed = match point.failed(c) {
        0 => String::new(),
        n => format!(" ({n} failed)"),
    };
    format!(
        "{:.0} · {:.2} ms · {:.1} µs{failed}",
        Spread::of(point.rps(c)).median,
        Spread::of(point.p50_ms(c)).median,
        Spread::of(point.cpu_us(c)).median
    )
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "1. tasks/get of a cached task (one replica, 1 KiB result)",
        &[
            "connections",
            "front end, fast path: req/s · p50 · CPU/req",
            "front end, full path (FAST_GET=false)",
            "plain rmcp TaskManager",
            "JSON-RPC axum (parses, answers from a map)",
            "bare axum (fixed bytes)",
            "fast ÷ rmcp (req/s; goal ≥ 1.5×)",
            "fast ÷ JSON-RPC axum (req/s; goal ≥ 0.6×)",
            "fast ÷ full path (req/s)",
            "CPU/req fast ÷ rmcp",
        ],
    )
}
