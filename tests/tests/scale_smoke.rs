//! `make scale-smoke`: a small `make scale` for `make test`. `MTO_SCALE_SMOKE_TASKS` (150) tasks
//! at once on the KWOK fake nodes (`hack/kwok.sh start 10` first), through the operator's whole
//! path: Job, pod, log follow, status writes, result. Asserts that every task completes with
//! the scripted result, and that the operator's own API requests per task (its
//! `mcp_operator_api_requests_total`, so other clients of a shared API server do not count),
//! apart from its status writes, Events and Lease renewals, stay under
//! [`MAX_REQUESTS_PER_TASK`]: a count, never a time. docs/BENCHMARKS.md ("`make scale`") has
//! the figures it is derived from.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::start_leader_with;
use futures::StreamExt;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::faults::{rss_kib, tcp_connections};
use mcp_task_operator_harness::kwok::{
    NO_SUCH_IMAGE, RUN_FOR_ANNOTATION, ensure_fake_nodes, fake_pod_template,
};
use mcp_task_operator_harness::operator::{create_task, create_tool, result_text, tool};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;

/// The tool's name, and its container's (which picks kwok's log script `fleet.log`: four
/// status lines over 45 s, the result line at 55 s).
const TOOL: &str = "fleet";
/// The script's result text.
const RESULT_TEXT: &str = "fleet: done";
/// How long each fake container runs.
const RUN_FOR: &str = "60s";
/// Tasks created at once by default (`MTO_SCALE_SMOKE_TASKS`).
const DEFAULT_TASKS: usize = 150;
/// Task creates in flight at once.
const CONCURRENCY: usize = 32;
/// The operator's requests per task (status writes, Events and Lease renewals left out) may
/// not exceed this. Measured (docs/BENCHMARKS.md, "make scale"): 3.07 at 300 tasks, the same
/// at 1,000 — one Job create, one log stream, one fresh read before the terminal write, and
/// the watches' first lists. Before the operator's caches about 15.7; with kwok cutting log
/// streams short (too few inotify instances, `hack/kwok.sh`) 13.4 log reads per task at 300.
/// The headroom is for a loaded machine (a failed read read again), not for growth.
const MAX_REQUESTS_PER_TASK: f64 = 6.0;
/// The operator's TCP connections may not exceed this while the tasks run: the API calls of
/// its reconciles (`MCP_OPERATOR_MAX_RECONCILES`, 32), its Events and watches over HTTP/1.1
/// (46-71 measured at 300 tasks), and the followed logs over HTTP/2, 80 on a connection
/// (`operator/src/log_clients.rs`). With a connection per followed log (HTTP/1.1, as before)
/// it was 346 at 300 tasks.
const MAX_CONNECTIONS: usize = 100;
/// Leader-election timing loose enough for a machine whose API server is slow under load: the
/// smoke run measures requests, not failovers.
const LEASE: [(&str, &str); 3] = [
    ("LEASE_DURATION_SECONDS", "60"),
    ("LEASE_RENEW_DEADLINE_SECONDS", "40"),
    ("LEASE_RETRY_PERIOD_SECONDS", "5"),
];
/// A guard against a hang, not an assertion on time: the tasks take about two minutes.
const GIVE_UP: Duration = Duration::from_secs(600);

/// What a version of a task says: its spec, labels, annotations and status, with the status's
/// times left out (conditions' `lastTransitionTime`, `lastUpdatedAt`). Two versions that differ
/// only in these times say the same.
fn said(task: &McpTask) -> serde_json::Value {
    let mut status = serde_json::to_value(&task.status).unwrap_or_default();
    if let Some(status) = status.as_object_mut() {
        status.remove("lastUpdatedAt");
        for condition in status
            .get_mut("conditions")
            .and_then(serde_json::Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            condition
                .as_object_mut()
                .map(|c| c.remove("lastTransitionTime"));
        }
    }
    json!({
        "spec": task.spec,
        "labels": task.metadata.labels,
        "annotations": task.metadata.annotations,
        "status": status,
    })
}

/// What the status writes of the namespace's tasks said, as a watch saw them.
#[derive(Debug, Default)]
struct Writes {
    /// Changes seen (new versions of a task), over all tasks.
    changes: usize,
    /// Of those, the ones that said nothing new: only the status's times moved (the task's
    /// name, and what it said).
    repeats: Vec<String>,
}

/// Watches the tasks of `tasks`' namespace until `stop` fires, and counts their status writes.
async fn watch_writes(tasks: Api<McpTask>, mut stop: tokio::sync::oneshot::Receiver<()>) -> Writes {
    use kube::runtime::{WatchStreamExt, watcher};
    let mut last: BTreeMap<String, (Option<String>, serde_json::Value)> = BTreeMap::new();
    let mut writes = Writes::default();
    let mut events = std::pin::pin!(watcher(tasks, watcher::Config::default()).applied_objects());
    loop {
        let task = tokio::select! {
            _ = &mut stop => break,
            next = events.next() => match next {
                Some(Ok(task)) => task,
                Some(Err(_)) => continue,
                None => break,
            },
        };
        let (name, rv, now) = (task.name_any(), task.resource_version(), said(&task));
        let Some((seen_rv, seen)) = last.get(&name) else {
            last.insert(name, (rv, now));
            continue;
        };
        // A relist shows versions seen before.
        if *seen_rv == rv {
            continue;
        }
        if *seen == now {
            writes.repeats.push(format!("{name}: {}", now["status"]));
        }
        writes.changes += 1;
        last.insert(name, (rv, now));
    }
    writes
}

/// `mcp_operator_api_requests_total` by (verb, resource), from the operator's metrics text.
fn requests(metrics: &str) -> BTreeMap<(String, String), f64> {
    let mut counts = BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("mcp_operator_api_requests_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            let start = format!("{name}=\"");
            let from = labels.find(&start)? + start.len();
            let len = labels[from..].find('"')?;
            Some(labels[from..from + len].to_owned())
        };
        if let (Some(verb), Some(resource), Ok(n)) = (
            label("verb"),
            label("resource"),
            value.trim().parse::<f64>(),
        ) {
            *counts.entry((verb, resource)).or_default() += n;
        }
    }
    counts
}

/// Whether `task` runs its tool: not ended, and its status shows a line of the script.
fn following(task: &McpTask) -> bool {
    let message = task
        .status
        .as_ref()
        .and_then(|s| s.status_message.as_deref());
    !task.is_terminal() && message.is_some_and(|m| m.starts_with("fleet: "))
}

/// Whether a request series is one the bound leaves out: status writes (under their own
/// budget), Events (one per transition) and Lease renewals (by time, not by task).
fn left_out((verb, resource): &(String, String)) -> bool {
    matches!(
        (verb.as_str(), resource.as_str()),
        ("patch", "mcptasks/status") | ("create" | "patch", "events") | (_, "leases")
    )
}

#[tokio::test]
#[ignore = "needs the KWOK fake nodes: make scale-smoke"]
async fn every_task_of_a_small_fleet_completes_within_a_bounded_request_count() {
    let count: usize = std::env::var("MTO_SCALE_SMOKE_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_TASKS);
    ensure_fake_nodes().await;
    with_temp_ns("scale-smoke", |client, ns| async move {
        ensure_crds(&client).await;
        let operator = start_leader_with(&ns, &LEASE).await;
        let idle_rss = rss_kib(operator.pid()).unwrap_or_default();
        let template = fake_pod_template(TOOL, json!({RUN_FOR_ANNOTATION: RUN_FOR}));
        let spec = json!({"ttlMs": 3_600_000, "template": template});
        create_tool(
            &client,
            &ns,
            &tool(TOOL, NO_SUCH_IMAGE, &[], spec, json!({})),
        )
        .await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let (stop_watch, stopped) = tokio::sync::oneshot::channel();
        let watch = tokio::spawn(watch_writes(tasks.clone(), stopped));
        let names: Vec<String> = futures::stream::iter(0..count)
            .map(|n| {
                let (client, ns) = (client.clone(), ns.clone());
                async move {
                    create_task(&client, &ns, TOOL, json!({"n": n}))
                        .await
                        .name_any()
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let begun = Instant::now();
        // The most tasks seen running their tool at once (their status shows a line of the
        // script), and the most TCP connections the operator held then.
        let (mut most_running, mut most_connections, mut most_rss) = (0, 0, 0);
        let ended = loop {
            let list = tasks
                .list(&ListParams::default())
                .await
                .expect("list tasks");
            let running = list.items.iter().filter(|t| following(t)).count();
            most_running = most_running.max(running);
            most_rss = most_rss.max(rss_kib(operator.pid()).unwrap_or_default());
            most_connections =
                most_connections.max(tcp_connections(operator.pid()).unwrap_or_default());
            let ended: Vec<McpTask> = list
                .items
                .into_iter()
                .filter(McpTask::is_terminal)
                .collect();
            if ended.len() >= names.len() {
                break ended;
            }
            assert!(
                begun.elapsed() < GIVE_UP,
                "{} of {count} tasks terminal after {GIVE_UP:?}",
                ended.len()
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
        };
        let wrong: Vec<String> = ended
            .iter()
            .filter(|t| {
                t.status.as_ref().map(|s| s.status) != Some(TaskStatus::Completed)
                    || result_text(t) != RESULT_TEXT
            })
            .map(|t| format!("{}: {:?}", t.name_any(), t.status))
            .take(3)
            .collect();
        assert!(
            wrong.is_empty(),
            "tasks without the scripted result: {wrong:?}"
        );

        // Every status write says something new: one that only moves the times is a write
        // made from a cached copy older than the operator's own last write (it decided from
        // the status that write replaced).
        tokio::time::sleep(Duration::from_secs(2)).await;
        let _ = stop_watch.send(());
        let writes = watch.await.expect("the status watch");
        eprintln!(
            "scale-smoke: {:.2} changes per task seen by a watch (the record, the status \
             writes), {} of them repeats",
            writes.changes as f64 / count as f64,
            writes.repeats.len()
        );
        assert!(
            writes.repeats.is_empty(),
            "{} status writes said nothing new (only times moved), e.g. {:?}",
            writes.repeats.len(),
            writes.repeats.iter().take(2).collect::<Vec<_>>()
        );

        let (code, metrics) = operator
            .get("/metrics")
            .await
            .expect("the operator's metrics");
        assert_eq!(code, 200);
        let counts = requests(&metrics);
        let per_task = |keep: &dyn Fn(&(String, String)) -> bool| {
            counts
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(_, n)| n)
                .sum::<f64>()
                / count as f64
        };
        let bounded = per_task(&|k| !left_out(k));
        let jobs = counts
            .get(&("create".to_owned(), "jobs".to_owned()))
            .copied()
            .unwrap_or_default();
        assert!(
            jobs >= count as f64,
            "the operator counted {jobs} Job creates for {count} tasks: is \
             mcp_operator_api_requests_total exported?"
        );
        let mut shown: Vec<_> = counts.iter().collect();
        shown.sort_by(|a, b| b.1.total_cmp(a.1));
        let shown: Vec<String> = shown
            .iter()
            .map(|((verb, resource), n)| format!("{verb} {resource} {:.2}", *n / count as f64))
            .collect();
        eprintln!(
            "scale-smoke: {count} tasks completed; operator requests per task: {bounded:.2} \
             bounded, {:.2} in all; by series: {}",
            per_task(&|_| true),
            shown.join(", ")
        );
        eprintln!(
            "scale-smoke: at most {most_running} tasks running at once; the operator held at \
             most {most_connections} TCP connections and {} MiB (VmRSS; {} MiB idle)",
            most_rss / 1024,
            idle_rss / 1024
        );
        assert!(
            most_running >= count * 4 / 5 && most_running > MAX_CONNECTIONS,
            "only {most_running} of {count} tasks were seen running at once: too few to tell \
             how the operator's connections grow"
        );
        assert!(
            most_connections <= MAX_CONNECTIONS,
            "the operator held {most_connections} TCP connections with {most_running} tasks \
             running (bound {MAX_CONNECTIONS}): are its log streams multiplexed over HTTP/2 \
             (MCP_OPERATOR_LOG_STREAMS_PER_CONNECTION)?"
        );
        assert!(
            bounded <= MAX_REQUESTS_PER_TASK,
            "the operator made {bounded:.2} API requests per task (status writes, Events and \
             Leases left out), over the bound of {MAX_REQUESTS_PER_TASK}: {}",
            shown.join(", ")
        );
    })
    .await;
}
