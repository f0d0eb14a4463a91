//! Section 4: 1,000, 5,000 and 10,000 completed McpTasks in one namespace, with one front end
//! and one operator watching it: resident memory of both, `tasks/get` latency, API-server
//! requests per cached `tasks/get`, and proof that the operator leaves terminal tasks alone.

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use mcp_task_operator_crds::task_id;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::operator::Operator;
use rand::seq::SliceRandom;

use crate::cluster::{
    BENCH_FIELD_MANAGER, apiserver_requests, create_completed_tasks, resident_mib, sum_counter,
    task_writers,
};
use crate::load;
use crate::mcp::{addr_of, tasks_get};
use crate::report::Section;
use crate::sections::Bench;
use crate::stats::ms;

/// Connections of the tasks/get load at each level.
const CONNECTIONS: usize = 16;
/// Distinct task IDs the load cycles through.
const SAMPLE_IDS: usize = 512;
/// Creates in flight while filling the namespace.
const CREATE_CONCURRENCY: usize = 32;
/// Cache misses sent to prove the request counter sees the front end's reads.
const CONTROL_MISSES: usize = 50;
/// The API-server series a `tasks/get` cache miss adds to (a GET of one McpTask).
const TASK_GETS: [(&str, &str); 2] = [("resource", "mcptasks"), ("verb", "GET")];

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    let mut operator = start_operator(ns, 0).await;
    let frontend = Frontend::start(ns, &[]).await;
    let addr = addr_of(&frontend.url)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (fe0, _) = resident_mib(frontend.pid())?;
    let (op0, _) = resident_mib(operator.pid())?;
    section.note(format!(
        "resident memory with 0 tasks: front end {fe0:.1} MiB, operator {op0:.1} MiB"
    ));
    section.note(
        "the front end runs throughout (its cache grows with the namespace); the operator is \
         stopped while tasks are added (a task is created, then made completed through the \
         status subresource: an operator running in between would start its Job) and started \
         afresh at each level, so its figure is a fresh start with that many tasks",
    );

    let mut ids: Vec<String> = Vec::new();
    for &level in &config.scale {
        drop(operator);
        let started = Instant::now();
        let more = level.saturating_sub(ids.len());
        ids.extend(create_completed_tasks(&client, ns, "bench", more, CREATE_CONCURRENCY).await?);
        let fill = started.elapsed();
        operator = start_operator(ns, level).await;
        let reconciles = settle(&operator).await;
        // The front end's watch sees the last status patches within this margin.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (fe_rss, fe_peak) = resident_mib(frontend.pid())?;
        let (op_rss, op_peak) = resident_mib(operator.pid())?;

        let mut sample = ids.clone();
        sample.shuffle(&mut rand::rng());
        sample.truncate(SAMPLE_IDS);
        let target = tasks_get(addr, &sample);
        let idle_start = apiserver_requests(&TASK_GETS)?;
        tokio::time::sleep(config.warmup + config.load_time).await;
        let idle_end = apiserver_requests(&TASK_GETS)?;
        let result = load::run(&target, CONNECTIONS, config.warmup, config.load_time).await;
        let load_end = apiserver_requests(&TASK_GETS)?;
        let during = load_end - idle_end;
        let idle = idle_end - idle_start;
        let total_gets = result.ok + result.failed;
        let jobs = count::<Job>(&client, ns).await?;
        let pods = count::<Pod>(&client, ns).await?;
        section.row(vec![
            level.to_string(),
            format!("{fe_rss:.1} MiB (peak {fe_peak:.1})"),
            format!("{op_rss:.1} MiB (peak {op_peak:.1})"),
            format!(
                "{:.0} req/s · {} · {}{}",
                result.rps,
                ms(result.p50),
                ms(result.p99),
                if result.failed > 0 {
                    format!(" ({} failed)", result.failed)
                } else {
                    String::new()
                }
            ),
            format!(
                "{:.4} ({during:.0} GETs during {} tasks/get; {idle:.0} in an idle window as long)",
                during / (result.ok.max(1) as f64),
                total_gets
            ),
            format!("{jobs} Jobs, {pods} pods; {reconciles:.0} reconciles at start"),
            format!(
                "{:.0} s ({:.0}/s)",
                fill.as_secs_f64(),
                more as f64 / fill.as_secs_f64()
            ),
        ]);
    }

    control_misses(addr, section).await?;
    let writers = task_writers(&client, ns).await?;
    let others: Vec<String> = writers
        .iter()
        .filter(|(manager, _)| {
            manager.as_str() != BENCH_FIELD_MANAGER && !manager.contains("mto-bench")
        })
        .map(|(manager, n)| format!("{manager} ({n})"))
        .collect();
    section.note(format!(
        "field managers in the tasks' managedFields after the run: {writers:?}; \
         writers other than the harness: {}",
        if others.is_empty() {
            "none (the operator wrote nothing)".to_owned()
        } else {
            others.join(", ")
        }
    ));
    drop(frontend);
    drop(operator);
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "4. Scale: completed McpTasks in the namespace",
        &[
            "tasks",
            "front end VmRSS",
            "operator VmRSS",
            "tasks/get (16 conns, random IDs)",
            "API-server GETs of McpTasks per tasks/get",
            "operator work",
            "fill time",
        ],
    )
}

/// Starts an operator for `ns` on a Lease of its own (the previous one was killed holding
/// its Lease) and waits until it leads.
async fn start_operator(ns: &str, level: usize) -> Operator {
    let operator = Operator::start(
        ns,
        &format!("{ns}-lease-{level}"),
        &format!("operator-{level}"),
        &[],
    )
    .await;
    operator.wait_leading().await;
    operator
}

/// Waits until the operator's McpTask reconcile count has not moved for 3 s (at most 120 s);
/// returns the count.
async fn settle(operator: &Operator) -> f64 {
    let reconciles = || async {
        operator
            .get("/metrics")
            .await
            .map(|(_, text)| {
                sum_counter(
                    &text,
                    "mcp_operator_reconciliations_total",
                    &[("controller", "mcptask")],
                )
            })
            .unwrap_or_default()
    };
    let started = Instant::now();
    let mut last = reconciles().await;
    let mut still_since = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = reconciles().await;
        if now != last {
            last = now;
            still_since = Instant::now();
        } else if still_since.elapsed() >= Duration::from_secs(3) {
            break;
        }
    }
    last
}

/// Proves the request counter sees the front end's reads: unknown (valid) IDs miss the cache,
/// so each must add one GET.
async fn control_misses(addr: std::net::SocketAddr, section: &mut Section) -> Result<(), String> {
    let unknown: Vec<String> = (0..CONTROL_MISSES).map(|_| task_id::generate()).collect();
    let before = apiserver_requests(&TASK_GETS)?;
    for id in &unknown {
        load::once(&tasks_get(addr, std::slice::from_ref(id))).await?;
    }
    let after = apiserver_requests(&TASK_GETS)?;
    section.note(format!(
        "control: {CONTROL_MISSES} tasks/get of unknown IDs (cache misses) added {:.0} GETs of \
         McpTasks to apiserver_request_total, so the counter does see the front end's reads",
        after - before
    ));
    Ok(())
}

async fn count<K>(client: &Client, ns: &str) -> Result<usize, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.list_metadata(&Default::default())
        .await
        .map(|l| l.items.len())
        .map_err(|e| format!("cannot list in {ns}: {e}"))
}
