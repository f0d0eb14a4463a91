//! Section 5: end-to-end throughput of a trivial tool (busybox printing one result line) from
//! `tools/call` to a client polling `completed`, split into phases; beside the same pod run as
//! bare Jobs created directly (what Kubernetes alone costs on this node).

use std::time::{Duration, Instant, SystemTime};

use futures::future::join_all;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_harness::frontend::{Frontend, UNLIMITED};
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, Operator, TaskRecorder, create_tool, shell_tool,
};
use serde_json::json;

use crate::phases::PhaseRecorder;
use crate::report::Section;
use crate::sections::Bench;
use crate::stats::{median_worst, ms, ratio};

/// The tool's whole work: one result line.
const SCRIPT: &str =
    r#"echo '{"mcp":"result","result":{"content":[{"type":"text","text":"done"}]}}'"#;
/// The tool's MCP name.
const TOOL: &str = "bench-echo";
/// How often the client polls (tasks/get) and the bare-Job baseline lists Jobs.
const POLL: Duration = Duration::from_millis(200);
/// Longest wait for one batch.
const BATCH_LIMIT: Duration = Duration::from_secs(300);

/// One task's (or bare Job's) timeline on this machine's clock.
#[derive(Clone, Debug)]
struct Timeline {
    name: String,
    called: SystemTime,
    answered: SystemTime,
    done: Option<SystemTime>,
}

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    let _operator = Operator::start_leader(ns).await;
    let frontend = Frontend::start(ns, UNLIMITED).await;
    create_tool(&client, ns, &shell_tool(TOOL, SCRIPT, json!({}))).await;
    let mcp = Mcp::new(&frontend.url);
    mcp.wait_for_tools(&[TOOL]).await;
    let recorder = TaskRecorder::start(&client, ns).await;
    let phases = PhaseRecorder::start(&client, ns);

    // One task alone first: warms the node's image and pod paths.
    let single = through_mcp(&mcp, 1).await?;
    let tasks = through_mcp(&mcp, config.e2e_tasks).await?;
    let jobs = bare_jobs(&client, ns, config.e2e_tasks).await?;

    // Each batch to three end points: the client's own view (an MCP client polling until it
    // sees `completed`; a Job lister until `succeeded`), and two the cluster records the same
    // way for both, through one watch: the pod seen stopped, and the Job seen succeeded.
    let natural = |t: &Timeline| t.done;
    let stopped = |t: &Timeline| phases.of(&t.name).stopped;
    let succeeded = |t: &Timeline| phases.of(&t.name).succeeded;
    wait_phases(&phases, &tasks, &jobs).await?;
    let ends: [(&str, EndAt<'_>); 3] = [
        (
            "the caller sees it done (MCP: completed; Jobs: succeeded)",
            &natural,
        ),
        ("the pod seen stopped (same end for both)", &stopped),
        ("the Job seen succeeded (same end for both)", &succeeded),
    ];
    for (end, at) in ends {
        let task = Batch::of(&tasks, at);
        let job = Batch::of(&jobs, at);
        section.row(vec![
            format!("{} tasks at once via MCP", tasks.len()),
            end.to_owned(),
            format!("{:.2} tasks/s", task.rate),
            format!("{} / {}", ms(task.median), ms(task.worst)),
            ratio(task.rate, job.rate),
        ]);
        section.row(vec![
            format!("{} bare Jobs at once (same pod)", jobs.len()),
            end.to_owned(),
            format!("{:.2} Jobs/s", job.rate),
            format!("{} / {}", ms(job.median), ms(job.worst)),
            "1.00×".to_owned(),
        ]);
    }
    let mut single_total: Vec<Duration> = single
        .iter()
        .filter_map(|t| t.done.map(|d| since(t.called, d)))
        .collect();
    let (single_median, _) = median_worst(&mut single_total);
    section.note(format!(
        "one task alone: tools/call → client sees completed in {}",
        ms(single_median)
    ));

    // Where the time goes, per task of the batch (medians).
    let mut split: [(&str, Vec<Duration>); 6] = [
        ("tools/call → CreateTaskResult", Vec::new()),
        ("answered → Job created", Vec::new()),
        ("Job created → pod running", Vec::new()),
        ("pod running → container stopped", Vec::new()),
        ("container stopped → completed visible (watch)", Vec::new()),
        ("completed visible → client poll sees it", Vec::new()),
    ];
    for t in &tasks {
        let p = phases.of(&t.name);
        let terminal = recorder
            .of(&t.name)
            .into_iter()
            .find(|r| r.status.is_some_and(TaskStatus::is_terminal))
            .map(|r| r.seen_at);
        split[0].1.push(since(t.called, t.answered));
        let points = [
            Some(t.answered),
            p.job,
            p.running,
            p.stopped,
            terminal,
            t.done,
        ];
        for (i, pair) in points.windows(2).enumerate() {
            if let (Some(a), Some(b)) = (pair[0], pair[1]) {
                split[i + 1].1.push(since(a, b));
            }
        }
    }
    let breakdown: Vec<String> = split
        .iter_mut()
        .map(|(what, samples)| format!("{what} {}", ms(median_worst(samples).0)))
        .collect();
    section.note(format!(
        "where a task's time goes (medians): {}",
        breakdown.join("; ")
    ));
    drop(frontend);
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "5. End-to-end throughput of a trivial tool",
        &[
            "run",
            "to",
            "throughput",
            "call → end, median / worst",
            "÷ bare Jobs",
        ],
    )
}

/// When one task or Job reached an end point, if it did.
type EndAt<'a> = &'a dyn Fn(&Timeline) -> Option<SystemTime>;

/// A batch's throughput and times from call to one end point.
struct Batch {
    /// Count over the time from the first call to the last end.
    rate: f64,
    median: Duration,
    worst: Duration,
}

impl Batch {
    /// The figures of `timelines` to the end point `at`.
    fn of(timelines: &[Timeline], at: EndAt<'_>) -> Self {
        let first = timelines.iter().map(|t| t.called).min();
        let ends: Vec<(SystemTime, SystemTime)> = timelines
            .iter()
            .filter_map(|t| Some((t.called, at(t)?)))
            .collect();
        let last = ends.iter().map(|(_, end)| *end).max();
        let rate = match (first, last) {
            (Some(first), Some(last)) if ends.len() == timelines.len() => {
                timelines.len() as f64
                    / last.duration_since(first).unwrap_or_default().as_secs_f64()
            }
            _ => 0.0,
        };
        let mut totals: Vec<Duration> = ends.iter().map(|(a, b)| since(*a, *b)).collect();
        let (median, worst) = median_worst(&mut totals);
        Self {
            rate,
            median,
            worst,
        }
    }
}

/// Waits until the watch has seen every pod stopped and every Job succeeded (the callers saw
/// them done already; the watch may trail them a little).
async fn wait_phases(
    phases: &PhaseRecorder,
    tasks: &[Timeline],
    jobs: &[Timeline],
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let missing = tasks.iter().chain(jobs).find(|t| {
            let p = phases.of(&t.name);
            p.stopped.is_none() || p.succeeded.is_none()
        });
        let Some(missing) = missing else {
            return Ok(());
        };
        if started.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "{}: pod stopped or Job succeeded not seen in 60 s",
                missing.name
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn since(earlier: SystemTime, later: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or_default()
}

/// Starts `count` tasks at once through the front end and polls each until completed.
async fn through_mcp(mcp: &Mcp, count: usize) -> Result<Vec<Timeline>, String> {
    let calls = (0..count).map(|n| async move {
        let called = SystemTime::now();
        let reply = mcp.call_tool(TOOL, json!({"n": n})).await;
        let answered = SystemTime::now();
        let id = reply.body["result"]["taskId"]
            .as_str()
            .ok_or_else(|| format!("tools/call made no task: {}", reply.body))?
            .to_owned();
        Ok::<_, String>(Timeline {
            name: id,
            called,
            answered,
            done: None,
        })
    });
    until_done(calls, "tasks not completed", async |timelines| {
        let pending = timelines.iter_mut().filter(|t| t.done.is_none());
        join_all(pending.map(|t| async move {
            let reply = mcp.get_task(&t.name).await;
            match reply.body["result"]["status"].as_str() {
                Some("completed") => t.done = Some(SystemTime::now()),
                Some("failed" | "cancelled") => t.done = Some(SystemTime::UNIX_EPOCH),
                _ => {}
            }
        }))
        .await;
        match timelines
            .iter()
            .find(|t| t.done == Some(SystemTime::UNIX_EPOCH))
        {
            Some(bad) => Err(format!("task {} did not complete", bad.name)),
            None => Ok(()),
        }
    })
    .await
}

/// Creates `count` Jobs running the tool's pod directly and lists them until all succeeded.
async fn bare_jobs(client: &Client, ns: &str, count: usize) -> Result<Vec<Timeline>, String> {
    let api: Api<Job> = Api::namespaced(client.clone(), ns);
    let creates = (0..count).map(|n| {
        let api = api.clone();
        async move {
            let name = format!("bare-{n}");
            let job: Job = serde_json::from_value(json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name},
                "spec": {"backoffLimit": 0, "template": {"spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": false,
                    "terminationGracePeriodSeconds": 2,
                    "containers": [{
                        "name": "tool", "image": BUSYBOX_IMAGE, "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c", SCRIPT],
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "128Mi"}},
                    }],
                }}},
            }))
            .map_err(|e| format!("bare Job manifest: {e}"))?;
            let called = SystemTime::now();
            api.create(&PostParams::default(), &job)
                .await
                .map_err(|e| format!("cannot create Job {name}: {e}"))?;
            Ok::<_, String>(Timeline { name, called, answered: SystemTime::now(), done: None })
        }
    });
    until_done(creates, "bare Jobs not done", async |timelines| {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("cannot list Jobs: {e}"))?;
        let now = SystemTime::now();
        for job in list {
            let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) > 0;
            let name = job.metadata.name.unwrap_or_default();
            if let Some(t) = timelines
                .iter_mut()
                .find(|t| t.name == name && t.done.is_none())
                && succeeded
            {
                t.done = Some(now);
            }
        }
        Ok(())
    })
    .await
}

/// Runs the `starts` at once, then `poll` every [`POLL`] until every timeline is done; after
/// [`BATCH_LIMIT`] the error is `what` with the limit.
async fn until_done(
    starts: impl IntoIterator<Item = impl Future<Output = Result<Timeline, String>>>,
    what: &str,
    mut poll: impl AsyncFnMut(&mut [Timeline]) -> Result<(), String>,
) -> Result<Vec<Timeline>, String> {
    let mut timelines = join_all(starts)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    while timelines.iter().any(|t| t.done.is_none()) {
        if started.elapsed() > BATCH_LIMIT {
            return Err(format!("{what} in {BATCH_LIMIT:?}"));
        }
        poll(&mut timelines).await?;
        tokio::time::sleep(POLL).await;
    }
    Ok(timelines)
}
