//! The pool under a steady load: `tools/call`s of one tool arriving as a Poisson process at
//! a share of what the tool's `maxConcurrentTasks` allows (arrival rate × the tool's work time =
//! [`LOADS`] × the limit), the pool's waiting pods sampled every second. A call hit the pool when its
//! task ran in a claimed Job (`status.jobName` is not the task's own name: a cold Job is named
//! after its task).

use std::time::{Duration, Instant, SystemTime};

use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{printed_time, result_text};
use serde_json::json;
use tokio::task::JoinSet;

use super::setup::{STEADY, pool_state};

/// The offered loads, as shares of the tool's limit: the goal's 80 %, and 50 %, where the
/// pool has the slots the calls leave to refill in (a warm pod holds a slot while it starts).
pub const LOADS: [f64; 2] = [0.8, 0.5];
/// How often the pool is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// The width of one slice of the hit timeline.
pub const SLICE: Duration = Duration::from_secs(15);

/// The load point's settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The offered load, a share of the limit.
    pub load: f64,
    /// The tool's `maxConcurrentTasks` (and its pool's `maxReady`).
    pub limit: i64,
    /// What each call's tool does: sleep this long.
    pub work: Duration,
    /// Calls before the recorded window (the pool sizes itself by the last minute's calls).
    pub warmup: Duration,
    /// The recorded window.
    pub window: Duration,
}

impl Settings {
    /// Calls a second.
    pub fn rate(&self) -> f64 {
        self.load * self.limit as f64 / self.work.as_secs_f64()
    }
}

/// What the recorded window came to.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Calls made in the window.
    pub calls: usize,
    /// Of them, run in a claimed (warm) pod.
    pub hits: usize,
    /// Run in a cold Job of their own.
    pub misses: usize,
    /// Not completed (failed, or not ended in time).
    pub not_completed: usize,
    /// Waiting Jobs of the pool (started or not), one sample a second.
    pub waiting: Vec<usize>,
    /// Of them, with a ready pod.
    pub ready: Vec<usize>,
    /// Calls of the tool waiting for a slot (not ended, no Job yet), same samples.
    pub queued: Vec<usize>,
    /// Hits and calls per [`SLICE`] from the first call, warm-up included.
    pub timeline: Vec<(usize, usize)>,
    /// `tools/call` → the tool started, of the hits.
    pub hit_start: Vec<Duration>,
    /// `tools/call` → the tool started, of the misses.
    pub miss_start: Vec<Duration>,
}

/// Runs the load against the tool [`STEADY`] (McpTool `tool`, whose pool is sampled).
pub async fn run(
    client: &Client,
    ns: &str,
    mcp: &Mcp,
    tool: &str,
    settings: Settings,
) -> Result<Outcome, String> {
    let rate = settings.rate();
    let begun = Instant::now();
    let recording = begun + settings.warmup;
    let end = recording + settings.window;
    let sampler = tokio::spawn(sample(
        client.clone(),
        ns.to_owned(),
        tool.to_owned(),
        recording,
        end,
    ));
    let mut calls = JoinSet::new();
    let mut next = begun;
    loop {
        // Exponential gaps: 1 - U lies in (0, 1], so the logarithm is finite.
        let gap = -(1.0 - rand::random::<f64>()).ln() / rate;
        next += Duration::from_secs_f64(gap);
        if next >= end {
            break;
        }
        tokio::time::sleep_until(next.into()).await;
        let recorded = next >= recording;
        let mcp = mcp.clone();
        calls.spawn(async move {
            let called = SystemTime::now();
            let reply = mcp.call_tool(STEADY, json!({})).await;
            let id = reply.body["result"]["taskId"].as_str().map(str::to_owned);
            (id, called, recorded, reply.body)
        });
    }
    let first_call = SystemTime::now() - begun.elapsed();
    let mut all = Vec::new();
    while let Some(joined) = calls.join_next().await {
        let (id, called, in_window, body) = joined.map_err(|e| format!("a call panicked: {e}"))?;
        let id = id.ok_or_else(|| format!("tools/call made no task: {body}"))?;
        all.push((id, called, in_window));
    }
    let (waiting, ready, queued) = sampler
        .await
        .map_err(|e| format!("the pool sampler panicked: {e}"))??;
    let every: Vec<(String, SystemTime)> = all.iter().map(|(id, c, _)| (id.clone(), *c)).collect();
    let ended = wait_ended(client, ns, &every, settings.work + Duration::from_secs(120)).await?;
    let ran_claimed = |id: &str| {
        ended.iter().any(|t| {
            t.name_any() == id
                && t.status
                    .as_ref()
                    .and_then(|s| s.job_name.as_deref())
                    .is_some_and(|j| j != id)
        })
    };
    let mut timeline = Vec::new();
    for (id, called, _) in &all {
        let slice = (called
            .duration_since(first_call)
            .unwrap_or_default()
            .as_secs_f64()
            / SLICE.as_secs_f64()) as usize;
        if timeline.len() <= slice {
            timeline.resize(slice + 1, (0, 0));
        }
        timeline[slice].1 += 1;
        if ran_claimed(id) {
            timeline[slice].0 += 1;
        }
    }
    let recorded: Vec<&(String, SystemTime, bool)> = all.iter().filter(|c| c.2).collect();

    let mut outcome = Outcome {
        calls: recorded.len(),
        waiting,
        ready,
        queued,
        timeline,
        ..Outcome::default()
    };
    for (id, called, _) in recorded {
        let Some(task) = ended.iter().find(|t| t.name_any() == *id) else {
            outcome.not_completed += 1;
            continue;
        };
        let job = task.status.as_ref().and_then(|s| s.job_name.as_deref());
        let hit = job.is_some_and(|j| j != id);
        let completed = task.task_status() == mcp_task_operator_crds::TaskStatus::Completed;
        let start = printed_time(&result_text(task), "started at ")
            .map(|s| s.duration_since(*called).unwrap_or_default());
        match (completed, hit, start) {
            (true, true, Some(start)) => {
                outcome.hits += 1;
                outcome.hit_start.push(start);
            }
            (true, false, Some(start)) => {
                outcome.misses += 1;
                outcome.miss_start.push(start);
            }
            _ => outcome.not_completed += 1,
        }
    }
    Ok(outcome)
}

/// Samples the pool of `tool` every second from `from` to `to`: counts of its waiting Jobs,
/// its ready pods, and the calls of [`STEADY`] waiting for a slot.
async fn sample(
    client: Client,
    ns: String,
    tool: String,
    from: Instant,
    to: Instant,
) -> Result<Samples, String> {
    tokio::time::sleep_until(from.into()).await;
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
    let mut samples = Samples::default();
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    while Instant::now() < to {
        tick.tick().await;
        let state = pool_state(&client, &ns, &tool).await?;
        samples.0.push(state.waiting.len());
        samples.1.push(state.ready.len());
        let queued = tasks
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("cannot list McpTasks: {e}"))?
            .items
            .iter()
            .filter(|t| t.spec.tool == STEADY && !t.is_terminal())
            .filter(|t| {
                t.status
                    .as_ref()
                    .and_then(|s| s.job_name.as_ref())
                    .is_none()
            })
            .count();
        samples.2.push(queued);
    }
    Ok(samples)
}

/// Per sample: waiting Jobs, ready pods, calls waiting for a slot.
type Samples = (Vec<usize>, Vec<usize>, Vec<usize>);

/// Waits until every task of `recorded` is terminal, at most `limit`; the terminal ones.
async fn wait_ended(
    client: &Client,
    ns: &str,
    recorded: &[(String, SystemTime)],
    limit: Duration,
) -> Result<Vec<McpTask>, String> {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let begun = Instant::now();
    loop {
        let list = tasks
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("cannot list McpTasks: {e}"))?;
        let ended: Vec<McpTask> = list
            .items
            .into_iter()
            .filter(|t| t.is_terminal() && recorded.iter().any(|(id, _)| *id == t.name_any()))
            .collect();
        if ended.len() == recorded.len() || begun.elapsed() > limit {
            return Ok(ended);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
