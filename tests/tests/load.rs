//! The load run (`make load`; `LOAD_SECONDS`, default 600): the Helm chart installed
//! namespace-scoped with two front-end replicas, and for that long a mixed load through the
//! front end Service: client sessions that each call a tool (a copy of the conformance
//! `slow_compute` whose tasks live one minute, so the namespace reaches a steady state), poll
//! `tasks/get` at the advised `pollIntervalMs` until the task is terminal, listen to some tasks
//! and cancel others. Every ~10 s the resident memory (VmRSS) of each front-end and operator
//! process and of kube-apiserver, etcd, kubelet, containerd and the other cluster components is
//! sampled. Prints the error rate and latency percentiles per method and, per component, the
//! mean memory of the first and last thirds with a verdict; writes the samples to
//! `$CARGO_TARGET_DIR/load/`. Figures only: nothing here is a timed assertion.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use common::prepare_examples_blocking;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::faults::{component_pid, find_container_pid, pods_ready, rss_kib};
use mcp_task_operator_harness::fixture_tools::apply_tool;
use mcp_task_operator_harness::stack::{NODE_IP, Release, TWO_REPLICAS, install};
use mcp_task_operator_harness::traffic::{Record, Traffic, percentile, wait_for_tools};
use mcp_task_operator_harness::{chart_dir, with_temp_ns};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::task::block_in_place;

const RELEASE: &str = "load";
const FRONTEND: &str = "app.kubernetes.io/instance=load,app.kubernetes.io/component=mcp-frontend";
const OPERATOR: &str = "app.kubernetes.io/instance=load,app.kubernetes.io/component=operator";
/// The load's tool: `slow_compute` under another name, its tasks deleted a minute after
/// creation.
const TOOL: &str = "load_compute";
const TASK_TTL_MS: u64 = 60_000;
/// Time between two memory samples.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Cluster components whose memory is sampled (PIDs from `.state/pids`).
const COMPONENTS: [&str; 7] = [
    "kube-apiserver",
    "etcd",
    "kubelet",
    "containerd",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
];

/// One memory sample: seconds since the start, component, VmRSS in KiB.
type Sample = (f64, String, u64);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a 10-minute load on the shared cluster: run by `make load`"]
async fn mixed_load_keeps_errors_latency_and_memory_in_bounds() {
    with_temp_ns("load", |client, ns| async move {
        let seconds: u64 = std::env::var("LOAD_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(600);
        let sessions: u64 = std::env::var("LOAD_SESSIONS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(6);
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let port = block_in_place(|| install(&ns, RELEASE, TWO_REPLICAS));
        let token = caller_token(&client, &ns, RELEASE, "load-client").await;
        apply_load_tool(&client, &ns).await;
        let url = format!("http://{NODE_IP}:{port}/mcp");
        while !(pods_ready(&client, &ns, FRONTEND, 2).await
            && pods_ready(&client, &ns, OPERATOR, 2).await)
        {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let record = Record::default();
        let traffic = Traffic::new(&url, record.clone()).with_token(&token);
        wait_for_tools(&traffic, &[TOOL]).await;
        let started = Instant::now();
        let until = started + Duration::from_secs(seconds);
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let sampler = tokio::spawn(sample_memory(
            client.clone(),
            ns.clone(),
            started,
            until,
            samples.clone(),
        ));
        let workers: Vec<_> = (0..sessions)
            .map(|seed| tokio::spawn(session(traffic.clone(), until, seed)))
            .collect();
        let mut tasks = 0;
        for worker in workers {
            tasks += worker.await.expect("session ran");
        }
        sampler.await.expect("sampler ran");
        let took = started.elapsed();

        let samples = samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let report = report(&record, &samples, tasks, sessions, took);
        println!("{report}");
        write_files(&samples, &report);
    })
    .await;
}

/// Applies the conformance `slow_compute` as [`TOOL`] with a one-minute task TTL.
async fn apply_load_tool(client: &Client, ns: &str) {
    let path = chart_dir().join("../../examples/conformance/mcptools.yaml");
    let text = std::fs::read_to_string(&path).expect("read the conformance tools");
    let mut tool = serde_yaml::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).expect("YAML"))
        .find(|t| t["spec"]["name"] == "slow_compute")
        .expect("slow_compute in the conformance tools");
    tool["metadata"] = json!({ "name": "load-compute" });
    tool["spec"]["name"] = json!(TOOL);
    tool["spec"]["ttlMs"] = json!(TASK_TTL_MS);
    let api: Api<McpTool> = Api::namespaced(client.clone(), ns);
    apply_tool(&api, tool).await;
}

/// One client: call, poll at the advised interval until terminal (cancelling one task in
/// seven, listening to one in three), again, until `until`. Returns how many tasks it ran.
async fn session(traffic: Traffic, until: Instant, seed: u64) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tasks = 0;
    while Instant::now() < until {
        let cancel = rng.random_ratio(1, 7);
        let seconds = if cancel {
            120
        } else {
            rng.random_range(1..=15)
        };
        let params = json!({"name": TOOL, "arguments": {"seconds": seconds, "label": "load"}});
        let Ok(created) = traffic.call("tools/call", params).await else {
            continue;
        };
        let Some(id) = created["taskId"].as_str().map(str::to_owned) else {
            continue;
        };
        tasks += 1;
        let interval = Duration::from_millis(created["pollIntervalMs"].as_u64().unwrap_or(1000));
        let listener = rng
            .random_ratio(1, 3)
            .then(|| traffic.listen(vec![id.clone()]));
        let cancel_at =
            cancel.then(|| Instant::now() + Duration::from_millis(rng.random_range(1000..5000)));
        let mut cancelled = false;
        loop {
            let Ok(got) = traffic.call("tasks/get", json!({"taskId": id})).await else {
                break;
            };
            if matches!(
                got["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            ) {
                break;
            }
            if !cancelled && cancel_at.is_some_and(|at| Instant::now() >= at) {
                cancelled = traffic
                    .call("tasks/cancel", json!({"taskId": id}))
                    .await
                    .is_ok();
            }
            tokio::time::sleep(interval).await;
        }
        if let Some(listener) = listener {
            // A listener ends once its task was notified terminal.
            if tokio::time::timeout(Duration::from_secs(60), listener)
                .await
                .is_err()
            {
                eprintln!("listen for {id} never saw its terminal status");
            }
        }
    }
    tasks
}

/// Samples every [`SAMPLE_EVERY`] until `until`: each of our containers' main process (looked
/// up again each time, in case a container restarted) and each cluster component.
async fn sample_memory(
    client: Client,
    ns: String,
    started: Instant,
    until: Instant,
    samples: Arc<Mutex<Vec<Sample>>>,
) {
    let pods: Api<Pod> = Api::namespaced(client, &ns);
    loop {
        let at = started.elapsed().as_secs_f64();
        let mut taken: Vec<Sample> = Vec::new();
        for (selector, container, kind) in [
            (FRONTEND, "mcp-frontend", "frontend"),
            (OPERATOR, "operator", "operator"),
        ] {
            let Ok(list) = pods.list(&ListParams::default().labels(selector)).await else {
                continue;
            };
            let mut list = list.items;
            list.sort_by_key(ResourceExt::name_any);
            for (i, pod) in list.iter().enumerate() {
                if let Some(kib) = find_container_pid(pod, container).ok().and_then(rss_kib) {
                    taken.push((at, format!("{kind}-{i}"), kib));
                }
            }
        }
        for component in COMPONENTS {
            if let Some(kib) = component_pid(component).and_then(rss_kib) {
                taken.push((at, component.to_owned(), kib));
            }
        }
        samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(taken);
        if Instant::now() + SAMPLE_EVERY > until {
            return;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
}

/// The printed report: latency and errors per method, memory per component.
fn report(
    record: &Record,
    samples: &[Sample],
    tasks: usize,
    sessions: u64,
    took: Duration,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "load: {sessions} sessions, {tasks} tasks in {:.0} s against 2 front-end replicas\n",
        took.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "| method | requests | errors | error rate | p50 ms | p90 ms | p99 ms | max ms |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let failed = record.failed_counts();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for (method, mut latencies) in record.latencies() {
        let errors = failed.get(&method).copied().unwrap_or(0);
        let total = latencies.len() as u64 + errors;
        let _ = writeln!(
            out,
            "| {method} | {total} | {errors} | {:.3} % | {:.1} | {:.1} | {:.1} | {:.1} |",
            errors as f64 * 100.0 / total.max(1) as f64,
            ms(percentile(&mut latencies, 50.0)),
            ms(percentile(&mut latencies, 90.0)),
            ms(percentile(&mut latencies, 99.0)),
            ms(percentile(&mut latencies, 100.0)),
        );
    }
    for f in record.failures().iter().take(10) {
        let _ = writeln!(out, "error: {} after {:?}: {}", f.method, f.took, f.what);
    }
    let _ = writeln!(
        out,
        "\n| component | samples | first third MiB | middle third MiB | last third MiB | \
         change first → last | change middle → last | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let end = samples.iter().map(|s| s.0).fold(0.0, f64::max);
    let mut by_component: BTreeMap<&str, Vec<(f64, u64)>> = BTreeMap::new();
    for (at, component, kib) in samples {
        by_component.entry(component).or_default().push((*at, *kib));
    }
    for (component, series) in by_component {
        let mean = |from: f64, to: f64| {
            let window: Vec<u64> = series
                .iter()
                .filter(|(at, _)| *at >= from && *at <= to)
                .map(|(_, kib)| *kib)
                .collect();
            window.iter().sum::<u64>() as f64 / window.len().max(1) as f64 / 1024.0
        };
        let first = mean(0.0, end / 3.0);
        let middle = mean(end / 3.0, end * 2.0 / 3.0);
        let last = mean(end * 2.0 / 3.0, end);
        let change = (last - first) / first.max(0.001) * 100.0;
        // The first third holds the warm-up (caches filling until the first tasks expire); the
        // middle → last change shows whether growth goes on after it.
        let settled = (last - middle) / middle.max(0.001) * 100.0;
        // Flat: within 10 % or 4 MiB; a run this short cannot tell slow growth from noise.
        let verdict = if (last - first).abs() <= 4.0 || change.abs() <= 10.0 {
            "flat"
        } else if last > first {
            "GROWING"
        } else {
            "shrinking"
        };
        let _ = writeln!(
            out,
            "| {component} | {} | {first:.1} | {middle:.1} | {last:.1} | {change:+.1} % | \
             {settled:+.1} % | {verdict} |",
            series.len()
        );
    }
    out
}

/// Writes the samples (CSV) and the report (Markdown) under `$CARGO_TARGET_DIR/load/`.
fn write_files(samples: &[Sample], report: &str) {
    let dir = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| chart_dir().join("../../target"))
        .join("load");
    std::fs::create_dir_all(&dir).expect("create the load directory");
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let mut csv = String::from("seconds,component,vmrss_kib\n");
    for (at, component, kib) in samples {
        let _ = writeln!(csv, "{at:.1},{component},{kib}");
    }
    let csv_path = dir.join(format!("memory-{stamp}.csv"));
    let report_path = dir.join(format!("report-{stamp}.md"));
    std::fs::write(&csv_path, csv).expect("write the memory samples");
    std::fs::write(&report_path, report).expect("write the report");
    println!(
        "samples: {}\nreport: {}",
        csv_path.display(),
        report_path.display()
    );
}
