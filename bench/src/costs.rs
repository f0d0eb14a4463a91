//! What one cached `tasks/get` costs inside the front end, step by step, timed in-process on
//! the stored task itself: the figures behind "what stands between the front end and the bare
//! axum ceiling" in the report.

use std::time::{Duration, Instant};

use mcp_task_operator_crds::McpTask;
use mcp_task_operator_mcp_frontend::state::server_info_meta;
use mcp_task_operator_mcp_frontend::wire;
use rmcp::model::GetTaskResult;

/// Iterations per step.
const ITERATIONS: u32 = 20_000;

/// Times each step of answering `tasks/get` from a cache hit of `task`; one line per step.
pub fn measure(task: &McpTask) -> Vec<String> {
    let mut stripped = task.clone();
    stripped.metadata.managed_fields = None;
    let managed = serde_json::to_vec(&task.metadata.managed_fields)
        .map(|v| v.len())
        .unwrap_or_default();
    let detailed = wire::detailed_task(task).ok();
    let mut lines = vec![
        step(
            "clone the cached McpTask (as stored, with managedFields)",
            || drop(std::hint::black_box(task.clone())),
        ),
        step("clone the cached McpTask without managedFields", || {
            drop(std::hint::black_box(stripped.clone()))
        }),
        step(
            "map it to rmcp's DetailedTask (crds::wire + JSON round trip)",
            || drop(std::hint::black_box(wire::detailed_task(task))),
        ),
        step("build the serverInfo _meta", || {
            drop(std::hint::black_box(server_info_meta()))
        }),
    ];
    if let Some(detailed) = detailed {
        let mut result = GetTaskResult::new(detailed);
        result.meta = Some(server_info_meta());
        lines.push(step("serialize the GetTaskResult", || {
            drop(std::hint::black_box(serde_json::to_vec(&result)))
        }));
    }
    lines.push(format!(
        "managedFields of the stored task: {managed} B of JSON"
    ));
    lines
}

fn step(what: &str, mut f: impl FnMut()) -> String {
    for _ in 0..ITERATIONS / 10 {
        f();
    }
    let started = Instant::now();
    for _ in 0..ITERATIONS {
        f();
    }
    let each: Duration = started.elapsed() / ITERATIONS;
    format!("{what}: {:.1} µs", each.as_secs_f64() * 1e6)
}
