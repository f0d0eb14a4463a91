//! Section 7 (`make scale`): thousands of tasks at once on KWOK fake nodes, each level beside
//! the same number of bare Jobs of the same pod, run first in the same namespace.
//!
//! A fake pod runs no container: kwok plays its life (Running, then the containers exit after
//! the script's run time) and serves the script's log file through the API server as the log of
//! its container. [`STANDARD`]: `hack/kwok/logs/fleet.log`, four status lines over 45 s and the
//! result line at 55 s, the pod running 60 s; [`LONG`] (`make scale-long`): the same script ten
//! times slower. So the operator's whole path runs for each task (Job, pod, log follow, status
//! writes, result), and only the node is simulated.
//! docs/BENCHMARKS.md, "`make scale`", gives the method.

mod reading;
mod watch;

use std::time::{Duration, Instant, SystemTime};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_harness::faults::tcp_connections;
use mcp_task_operator_harness::frontend::{Frontend, UNLIMITED};
use mcp_task_operator_harness::kwok::{NO_SUCH_IMAGE, RUN_FOR_ANNOTATION, fake_pod_template};
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{Operator, create_tool, tool};
use rand::seq::SliceRandom;
use serde_json::json;

use self::reading::{Reading, describe};
use self::watch::Watch;
use crate::cluster::resident_mib;
use crate::config::Config;
use crate::load;
use crate::mcp::{addr_of, tasks_get};
use crate::report::Section;
use crate::stats::{ms, quantile, ratio};

/// What a fleet's fake pods play.
struct Script {
    /// The tool's MCP name, and its container's, which picks kwok's log script
    /// `hack/kwok/logs/<name>.log`.
    tool: &'static str,
    /// How long each fake pod runs; the script's result line comes 5 s before.
    run_for: Duration,
}

/// `make scale`: pods of a minute.
const STANDARD: Script = Script {
    tool: "fleet",
    run_for: Duration::from_secs(60),
};
/// `make scale-long`: pods of ten minutes, longer than 5,000 pods take to start here, so that a
/// level's pods all run at the same moment.
const LONG: Script = Script {
    tool: "fleet-long",
    run_for: Duration::from_secs(600),
};
/// The script's result text.
const RESULT_TEXT: &str = "fleet: done";
/// `tools/call`s, and bare Job creates, in flight at once.
const CONCURRENCY: usize = 32;
/// How many times a `tools/call` answered with `retryAfterMs` is tried.
const CALL_RETRIES: usize = 30;
/// How often memory is sampled and progress checked.
const SAMPLE: Duration = Duration::from_secs(2);
/// How long a level may take beyond its creates and the pods' run time: [`SLACK`], or
/// [`SLACK_PER_TASK`] for each task when that is more (5,000 pods start at 8-10 a second here).
const SLACK: Duration = Duration::from_secs(600);
const SLACK_PER_TASK: Duration = Duration::from_millis(200);
/// Connections and distinct task IDs of the tasks/get load.
const GET_CONNECTIONS: usize = 16;
const GET_IDS: usize = 512;
/// Series shown per level in the request breakdown.
const TOP_SERIES: usize = 8;

/// What one run (tasks, or bare Jobs) of a level measured.
struct Run {
    /// First create (or tools/call) → last Job seen.
    jobs_per_second: f64,
    /// First create → last pod seen (created by the Job controller).
    pods_per_second: f64,
    /// First create → last pod seen running.
    running_per_second: f64,
    /// Create → done, per object.
    to_done: Vec<Duration>,
    /// The most pods running at once.
    peak_running: usize,
    /// Requests by series over the run.
    requests: Vec<(reading::RequestKey, f64)>,
    /// etcd bytes added over the run.
    etcd_bytes: f64,
}

/// Runs one level (`count` bare Jobs, then `count` tasks) in namespace `ns`.
pub async fn run(
    config: &Config,
    client: Client,
    ns: &str,
    count: usize,
    section: &mut Section,
) -> Result<(), String> {
    mcp_task_operator_harness::ensure_crds(&client).await;
    let script = if config.fleet_long { &LONG } else { &STANDARD };
    let (tool_name, run_for) = (script.tool, script.run_for);
    let annotation = format!("{}s", run_for.as_secs());
    let template = fake_pod_template(tool_name, json!({RUN_FOR_ANNOTATION: annotation}));
    // The baseline first, in the empty namespace: the same pod as bare Jobs, created by the
    // harness; then its Jobs and pods go, so the tasks start from the same empty namespace.
    let slack = SLACK.max(SLACK_PER_TASK * u32::try_from(count).unwrap_or(u32::MAX));
    let jobs = bare_jobs(&client, ns, count, &template, run_for + slack).await?;
    clear_jobs(&client, ns).await?;

    let operator = Operator::start_leader(ns).await;
    let frontend = Frontend::start(ns, UNLIMITED).await;
    let spec = json!({"ttlMs": 3_600_000, "template": template});
    create_tool(
        &client,
        ns,
        &tool(tool_name, NO_SUCH_IMAGE, &[], spec, json!({})),
    )
    .await;
    let mcp = Mcp::new(&frontend.url);
    mcp.wait_for_tools(&[tool_name]).await;
    let pids = [operator.pid(), frontend.pid()];
    tokio::time::sleep(SAMPLE).await;
    let idle_rss = [resident_mib(pids[0])?.0, resident_mib(pids[1])?.0];

    // The tasks.
    let watch = Watch::start(&client, ns);
    let before = Reading::take(&pids).await?;
    let started = SystemTime::now();
    let called = Instant::now();
    let ids: Vec<String> = futures::stream::iter(0..count)
        .map(|n| {
            let mcp = &mcp;
            async move {
                // As a client does: an answer that says when to retry (a replica that lost
                // the API server for a moment, under this load) is retried, a few times.
                for _ in 0..CALL_RETRIES {
                    let reply = mcp.call_tool(tool_name, json!({"n": n})).await;
                    if let Some(id) = reply.body["result"]["taskId"].as_str() {
                        return Ok(id.to_owned());
                    }
                    let Some(after) = reply.body["error"]["data"]["retryAfterMs"].as_u64() else {
                        return Err(format!("tools/call made no task: {}", reply.body));
                    };
                    tokio::time::sleep(Duration::from_millis(after)).await;
                }
                Err(format!("tools/call made no task in {CALL_RETRIES} tries"))
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await?;
    let calls_per_second = count as f64 / called.elapsed().as_secs_f64();
    let limit = called.elapsed() + run_for + slack;
    let mut peak_rss = idle_rss;
    let mut rss_at_peak_running = (0, idle_rss[0]);
    let mut most_connections = 0;
    loop {
        let (ended, running) = watch.read(|s| (s.ended.len(), s.running_now()));
        let operator_rss = resident_mib(pids[0])?.0;
        peak_rss = [
            peak_rss[0].max(operator_rss),
            peak_rss[1].max(resident_mib(pids[1])?.0),
        ];
        most_connections = most_connections.max(tcp_connections(pids[0]).unwrap_or_default());
        if running > rss_at_peak_running.0 {
            rss_at_peak_running = (running, operator_rss);
        }
        if ended >= count {
            break;
        }
        if called.elapsed() > limit {
            return Err(format!(
                "{ended} of {count} tasks terminal after {:.0} s",
                called.elapsed().as_secs_f64()
            ));
        }
        tokio::time::sleep(SAMPLE).await;
    }
    let after = Reading::take(&pids).await?;
    let tasks = watch.read(|seen| {
        let ended = |id: &String| seen.ended.get(id);
        Run {
            jobs_per_second: per_second(started, seen.jobs.values(), count),
            pods_per_second: per_second(started, seen.pods_created.values(), count),
            running_per_second: per_second(started, seen.pods_running.values(), count),
            to_done: ids
                .iter()
                .filter_map(ended)
                .map(|e| e.at.duration_since(started).unwrap_or_default())
                .collect(),
            peak_running: seen.peak_running,
            requests: after.requests_since(&before),
            etcd_bytes: after.etcd_bytes - before.etcd_bytes,
        }
    });
    let (right, wrong) = watch.read(|seen| {
        let right = seen
            .ended
            .values()
            .filter(|e| e.status == TaskStatus::Completed && e.text == RESULT_TEXT)
            .count();
        let wrong: Vec<String> = seen
            .ended
            .iter()
            .filter(|(_, e)| e.status != TaskStatus::Completed || e.text != RESULT_TEXT)
            .take(3)
            .map(|(id, e)| format!("{id}: {:?} {}", e.status, e.text))
            .collect();
        (right, wrong)
    });
    drop(watch);

    // tasks/get from the cache at this size.
    let mut sample = ids.clone();
    sample.shuffle(&mut rand::rng());
    sample.truncate(GET_IDS);
    let target = tasks_get(addr_of(&frontend.url)?, &sample);
    let gets = load::run(&target, GET_CONNECTIONS, config.warmup, config.load_time).await;
    let cpu = |i: usize| (after.cpu_seconds[i] - before.cpu_seconds[i]) * 1000.0 / count as f64;
    let per_running = if rss_at_peak_running.0 > 0 {
        (rss_at_peak_running.1 - idle_rss[0]) * 1024.0 / rss_at_peak_running.0 as f64
    } else {
        0.0
    };
    drop(frontend);
    drop(operator);

    let mut task_done = tasks.to_done.clone();
    let mut job_done = jobs.to_done.clone();
    section.row(vec![
        count.to_string(),
        format!("{right} of {count}"),
        format!(
            "{} / {} / {}",
            secs(quantile(&mut task_done, 0.5)),
            secs(quantile(&mut task_done, 0.9)),
            secs(quantile(&mut task_done, 1.0))
        ),
        format!(
            "{} / {} / {}",
            secs(quantile(&mut job_done, 0.5)),
            secs(quantile(&mut job_done, 0.9)),
            secs(quantile(&mut job_done, 1.0))
        ),
        format!(
            "{:.1}/s ({} of bare {:.1}/s)",
            tasks.jobs_per_second,
            ratio(tasks.jobs_per_second, jobs.jobs_per_second),
            jobs.jobs_per_second
        ),
        format!(
            "{:.1}/s ({})",
            tasks.pods_per_second,
            ratio(tasks.pods_per_second, jobs.pods_per_second)
        ),
        format!(
            "{:.1}/s ({})",
            tasks.running_per_second,
            ratio(tasks.running_per_second, jobs.running_per_second)
        ),
        format!("{} ({} bare)", tasks.peak_running, jobs.peak_running),
        format!(
            "{:.0} MiB (idle {:.0}; {per_running:.1} KiB per running task; at most \
             {most_connections} TCP connections)",
            peak_rss[0], idle_rss[0]
        ),
        format!("{:.0} MiB (idle {:.0})", peak_rss[1], idle_rss[1]),
        format!("{:.1} / {:.1}", cpu(0), cpu(1)),
        format!(
            "{:.1} ({:.1} bare)",
            total(&tasks.requests) / count as f64,
            total(&jobs.requests) / count as f64
        ),
        format!(
            "{} ({} bare)",
            bytes_per_task(tasks.etcd_bytes, count),
            bytes_per_task(jobs.etcd_bytes, count)
        ),
        format!(
            "{:.0} req/s · p50 {} · p99 {}",
            gets.rps,
            ms(gets.p50),
            ms(gets.p99)
        ),
    ]);
    if count == config.fleet.first().copied().unwrap_or_default() {
        let run_for = run_for.as_secs();
        section.note(format!(
            "fake pods of tool {tool_name}: a task ends on its result line ({} s after its pod \
             started), a bare Job when its pod exits ({run_for} s): the terminal columns differ \
             by those 5 s by design. API requests and etcd bytes are cluster-wide counters: run \
             on an otherwise idle cluster",
            run_for - 5
        ));
    }
    section.note(format!(
        "{count} tasks: tools/call answered at {calls_per_second:.1}/s ({CONCURRENCY} in flight); \
         requests per task by series: {}; per bare Job: {}",
        breakdown(&tasks.requests, count),
        breakdown(&jobs.requests, count)
    ));
    if !wrong.is_empty() {
        section.note(format!(
            "{count} tasks: {} did not complete with the scripted result, e.g. {}",
            count - right,
            wrong.join("; ")
        ));
    }
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "7. Fleet: tasks at once on KWOK fake nodes, beside bare Jobs of the same pod",
        &[
            "tasks",
            "completed with the result",
            "tasks: first call → terminal p50 / p90 / last",
            "bare Jobs: first create → done p50 / p90 / last",
            "Jobs created",
            "pods created",
            "pods running",
            "most pods running at once",
            "operator VmRSS peak",
            "front end VmRSS peak",
            "CPU ms per task: operator / front end",
            "API requests per task (all clients)",
            "etcd bytes per task",
            "tasks/get at that size (16 conns)",
        ],
    )
}

/// Creates `count` Jobs of `template` at [`CONCURRENCY`] in flight and waits until all are
/// done (at most `limit` after the last create).
async fn bare_jobs(
    client: &Client,
    ns: &str,
    count: usize,
    template: &serde_json::Value,
    limit: Duration,
) -> Result<Run, String> {
    let api: Api<Job> = Api::namespaced(client.clone(), ns);
    let watch = Watch::start(client, ns);
    let before = Reading::take(&[]).await?;
    let started = SystemTime::now();
    futures::stream::iter(0..count)
        .map(|n| {
            let api = api.clone();
            async move {
                let job: Job = serde_json::from_value(json!({
                    "apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": format!("bare-{n}")},
                    "spec": {"backoffLimit": 0, "template": template},
                }))
                .map_err(|e| format!("bare Job manifest: {e}"))?;
                api.create(&PostParams::default(), &job)
                    .await
                    .map(drop)
                    .map_err(|e| format!("cannot create Job bare-{n}: {e}"))
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    let created = Instant::now();
    while watch.read(|s| s.jobs_done.len()) < count {
        if created.elapsed() > limit {
            let done = watch.read(|s| s.jobs_done.len());
            return Err(format!("{done} of {count} bare Jobs done after {limit:?}"));
        }
        tokio::time::sleep(SAMPLE).await;
    }
    let after = Reading::take(&[]).await?;
    Ok(watch.read(|seen| Run {
        jobs_per_second: per_second(started, seen.jobs.values(), count),
        pods_per_second: per_second(started, seen.pods_created.values(), count),
        running_per_second: per_second(started, seen.pods_running.values(), count),
        to_done: seen
            .jobs_done
            .values()
            .map(|at| at.duration_since(started).unwrap_or_default())
            .collect(),
        peak_running: seen.peak_running,
        requests: after.requests_since(&before),
        etcd_bytes: after.etcd_bytes - before.etcd_bytes,
    }))
}

/// Deletes every Job of `ns` (and so their pods) and waits until no pod is left (5 min at most).
/// One by one, [`CONCURRENCY`] at once: a single delete of 5,000 Jobs outlasts the API server's
/// request timeout.
async fn clear_jobs(client: &Client, ns: &str) -> Result<(), String> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let names: Vec<String> = jobs
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| format!("cannot list the bare Jobs: {e}"))?
        .items
        .into_iter()
        .filter_map(|job| job.metadata.name)
        .collect();
    futures::stream::iter(names)
        .map(|name| {
            let jobs = &jobs;
            async move {
                match jobs.delete(&name, &DeleteParams::background()).await {
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                    other => other
                        .map(drop)
                        .map_err(|e| format!("cannot delete the bare Job {name}: {e}")),
                }
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let begun = Instant::now();
    loop {
        let left = pods
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| format!("cannot list pods: {e}"))?
            .items
            .len();
        if left == 0 {
            return Ok(());
        }
        if begun.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "{left} pods of the bare Jobs still there after 5 min"
            ));
        }
        tokio::time::sleep(SAMPLE).await;
    }
}

/// `count` over the time from `started` to the latest of `times`.
fn per_second<'a>(
    started: SystemTime,
    times: impl Iterator<Item = &'a SystemTime>,
    count: usize,
) -> f64 {
    times
        .max()
        .and_then(|last| last.duration_since(started).ok())
        .map_or(0.0, |d| count as f64 / d.as_secs_f64().max(0.001))
}

fn total(requests: &[(reading::RequestKey, f64)]) -> f64 {
    requests.iter().map(|(_, n)| n).sum()
}

fn breakdown(requests: &[(reading::RequestKey, f64)], count: usize) -> String {
    requests
        .iter()
        .take(TOP_SERIES)
        .map(|(key, n)| format!("{} {:.2}", describe(key), n / count as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// etcd bytes added per task; etcd's compaction may free more than a run adds (the space of
/// the baseline's deleted Jobs, old revisions), which leaves nothing to report.
fn bytes_per_task(added: f64, count: usize) -> String {
    match added >= 0.0 {
        true => format!("{:.0}", added / count as f64),
        false => "n/a (etcd compacted more than the run added)".to_owned(),
    }
}
