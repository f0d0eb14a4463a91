//! Section 1: `tasks/get` of one cached, completed task through one front end replica, beside a
//! bare axum handler returning the same bytes and a plain rmcp server with its own
//! `TaskManager`, at each connection count.

use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use serde_json::json;

use crate::cluster::create_completed_task;
use crate::load::{self, LoadResult};
use crate::mcp::{addr_of, tasks_get};
use crate::report::Section;
use crate::sections::Bench;
use crate::servers::{RMCP_TOOL, ServerProcess};
use crate::stats::{ms, ratio};

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    let api: kube::Api<mcp_task_operator_crds::McpTask> = kube::Api::namespaced(client.clone(), ns);
    let id = create_completed_task(&api, "bench").await?;
    let frontend = Frontend::start(ns, &[]).await;
    let frontend_target = tasks_get(addr_of(&frontend.url)?, std::slice::from_ref(&id));
    // The watch delivers the status a moment after it was written.
    let answer = wait_completed(&frontend_target).await?;

    let body_file = std::env::temp_dir().join(format!("mto-bench-{ns}.json"));
    std::fs::write(&body_file, &answer.body)
        .map_err(|e| format!("cannot write {}: {e}", body_file.display()))?;
    let axum = ServerProcess::start(&[
        "serve-axum",
        &answer.content_type,
        &body_file.to_string_lossy(),
    ])
    .await?;
    let axum_target = tasks_get(axum.addr, std::slice::from_ref(&id));

    let rmcp = ServerProcess::start(&["serve-rmcp"]).await?;
    let rmcp_url = format!("http://{}/mcp", rmcp.addr);
    let rmcp_id = Mcp::new(&rmcp_url).start_task(RMCP_TOOL, json!({})).await;
    let rmcp_target = tasks_get(rmcp.addr, std::slice::from_ref(&rmcp_id));
    let rmcp_answer = wait_completed(&rmcp_target).await?;

    section.note(format!(
        "answer sizes: front end {} B (`{}`), bare axum the same bytes, plain rmcp {} B",
        answer.body.len(),
        answer.content_type,
        rmcp_answer.body.len()
    ));
    for &connections in &config.connections {
        let mut results = Vec::new();
        for target in [&frontend_target, &rmcp_target, &axum_target] {
            results.push(load::run(target, connections, config.warmup, config.load_time).await);
        }
        let [front, plain, bare] = [&results[0], &results[1], &results[2]];
        section.row(vec![
            connections.to_string(),
            point(front),
            point(plain),
            point(bare),
            ratio(front.rps, plain.rps),
            ratio(front.rps, bare.rps),
        ]);
    }
    let stored = api
        .get(&id)
        .await
        .map_err(|e| format!("cannot read McpTask {id}: {e}"))?;
    section.note(format!(
        "in-process cost of the front end's steps for one cached tasks/get: {}",
        crate::costs::measure(&stored).join("; ")
    ));
    let _ = std::fs::remove_file(body_file);
    drop(frontend);
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "1. tasks/get of a cached task (one replica)",
        &[
            "connections",
            "front end req/s · p50 · p99",
            "plain rmcp TaskManager req/s · p50 · p99",
            "bare axum req/s · p50 · p99",
            "front end ÷ rmcp (req/s)",
            "front end ÷ axum (req/s)",
        ],
    )
}

fn point(result: &LoadResult) -> String {
    let failed = if result.failed > 0 {
        format!(" ({} failed)", result.failed)
    } else {
        String::new()
    };
    format!(
        "{:.0} · {} · {}{failed}",
        result.rps,
        ms(result.p50),
        ms(result.p99)
    )
}

/// Polls `target` until its task is completed; returns that answer.
async fn wait_completed(target: &load::Target) -> Result<load::Answer, String> {
    for _ in 0..200 {
        let answer = load::once(target).await?;
        if answer.status == 200
            && serde_json::from_slice::<serde_json::Value>(&answer.body)
                .is_ok_and(|v| v["result"]["status"] == "completed")
        {
            return Ok(answer);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Err(format!(
        "the task at {} never answered completed",
        target.addr
    ))
}
