//! Section 3: a task's life through real pods with the real operator (release build) and the
//! Rust tool, which prints the wall-clock time with each line: created → Job → pod running,
//! result line → terminal status, pod exit → terminal status (no result line: the exit code
//! decides), status line → `statusMessage`, cancel → `cancelled`.
//!
//! Each figure is the watch's delivery time minus the time the event happened, on the shared
//! helpers of `mcp_task_operator_harness::operator`.

use std::time::{Duration, SystemTime};

use kube::{Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    Operator, RUST_TOOL_IMAGE, TaskRecorder, create_task, create_tool, ensure_rust_tool_image,
    printed_time, request_cancel, result_text, tool, wait_task, wait_terminal,
};
use serde_json::json;

use crate::config::Config;
use crate::phases::PhaseRecorder;
use crate::report::Section;
use crate::sections::Bench;
use crate::stats::{median_worst, ms};

/// Tasks started at once.
const BATCH: usize = 4;

/// What the runs of each figure work with.
#[derive(Clone, Copy)]
struct Runs<'a> {
    config: &'a Config,
    client: &'a Client,
    ns: &'a str,
    recorder: &'a TaskRecorder,
}

/// Samples of each figure.
#[derive(Default)]
struct Samples {
    to_job: Vec<Duration>,
    job_to_running: Vec<Duration>,
    to_running: Vec<Duration>,
    exit: Vec<Duration>,
    exit_to_stopped: Vec<Duration>,
    result: Vec<Duration>,
    stopped_to_terminal: Vec<Duration>,
    status: Vec<Duration>,
    cancel: Vec<Duration>,
}

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    let binary = config.require_rust_tool_bin()?;
    ensure_rust_tool_image(binary);
    mcp_task_operator_harness::ensure_crds(&client).await;
    let _operator = Operator::start_leader(ns).await;
    create_tool(
        &client,
        ns,
        &tool("rust-tool", RUST_TOOL_IMAGE, &[], json!({}), json!({})),
    )
    .await;
    let recorder = TaskRecorder::start(&client, ns).await;
    let phases = PhaseRecorder::start(&client, ns);
    let runs = Runs {
        config,
        client: &client,
        ns,
        recorder: &recorder,
    };
    let mut samples = Samples::default();
    runs.exits(&phases, &mut samples).await?;
    runs.results(&mut samples).await?;
    runs.status_lines(&mut samples).await;
    runs.cancels(&mut samples).await?;

    let rows: [(&str, &mut Vec<Duration>, &str); 9] = [
        ("McpTask created → Job created", &mut samples.to_job, ""),
        ("Job created → pod running", &mut samples.job_to_running, ""),
        ("McpTask created → pod running", &mut samples.to_running, ""),
        (
            "result line → terminal status",
            &mut samples.result,
            "median < 500 ms",
        ),
        (
            "pod exit → terminal status (no result line: the exit code decides)",
            &mut samples.exit,
            "",
        ),
        (
            "  of which: exit → pod status shows it stopped",
            &mut samples.exit_to_stopped,
            "(kubelet)",
        ),
        (
            "  of which: pod stopped visible → terminal status",
            &mut samples.stopped_to_terminal,
            "(operator)",
        ),
        (
            "status line → statusMessage",
            &mut samples.status,
            "median < 1 s",
        ),
        (
            "cancel → cancelled (cooperative)",
            &mut samples.cancel,
            "median < 3 s",
        ),
    ];
    for (what, samples, goal) in rows {
        let n = samples.len();
        let (median, worst) = median_worst(samples);
        section.row(vec![
            what.to_owned(),
            n.to_string(),
            ms(median),
            ms(worst),
            goal.to_owned(),
        ]);
    }
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "3. Task life through real pods",
        &["figure", "n", "median", "worst", "goal"],
    )
}

fn since(earlier: SystemTime, later: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or_default()
}

/// Waits until task `name` is terminal, requires it to have ended `want`, and returns it with
/// the time the recorder's watch saw that status.
pub(super) async fn ended(
    client: &Client,
    ns: &str,
    recorder: &TaskRecorder,
    name: &str,
    want: TaskStatus,
) -> Result<(McpTask, SystemTime), String> {
    let done = wait_terminal(client, ns, name).await;
    if done.task_status() != want {
        return Err(format!(
            "task {name} ended {:?}, not {want:?}: {:?}",
            done.task_status(),
            done.status
                .as_ref()
                .and_then(|s| s.status_message.as_deref())
        ));
    }
    recorder.wait_seen(name, want).await;
    let seen = recorder
        .of(name)
        .into_iter()
        .find(|t| t.status == Some(want))
        .map(|t| t.seen_at)
        .ok_or_else(|| format!("no {want:?} transition of task {name}"))?;
    Ok((done, seen))
}

impl Runs<'_> {
    /// Starts a Rust-tool task with `args`; its name.
    async fn start(self, args: serde_json::Value) -> String {
        create_task(self.client, self.ns, "rust-tool", args)
            .await
            .name_any()
    }

    /// Starts [`BATCH`] Rust-tool tasks with `args`; their names.
    async fn batch(self, args: serde_json::Value) -> Vec<String> {
        let mut names = Vec::new();
        for _ in 0..BATCH {
            names.push(self.start(args.clone()).await);
        }
        names
    }

    /// [`ended`] for this section's namespace and recorder.
    async fn ended(self, name: &str, want: TaskStatus) -> Result<(McpTask, SystemTime), String> {
        ended(self.client, self.ns, self.recorder, name, want).await
    }

    /// Tools that print `exiting at T` and exit 0 without a result: created → Job → running, and
    /// exit → terminal.
    async fn exits(self, phases: &PhaseRecorder, samples: &mut Samples) -> Result<(), String> {
        while samples.exit.len() < self.config.runs {
            let mut started = Vec::new();
            for _ in 0..BATCH {
                let at = SystemTime::now();
                let args = json!({"steps": 0, "plain": true});
                let name = self.start(args).await;
                started.push((name, at));
            }
            for (name, created) in started {
                let (done, seen) = self.ended(&name, TaskStatus::Completed).await?;
                let exited = printed_time(&result_text(&done), "exiting at ")
                    .ok_or_else(|| format!("task {name} printed no exit time"))?;
                samples.exit.push(since(exited, seen));
                let phase = phases.of(&name);
                if let Some(stopped) = phase.stopped {
                    samples.exit_to_stopped.push(since(exited, stopped));
                    samples.stopped_to_terminal.push(since(stopped, seen));
                }
                if let (Some(job), Some(running)) = (phase.job, phase.running) {
                    samples.to_job.push(since(created, job));
                    samples.job_to_running.push(since(job, running));
                    samples.to_running.push(since(created, running));
                }
            }
        }
        Ok(())
    }

    /// Tools that run about 2 s (the operator follows their log by then) and end with a result
    /// line carrying the time it was printed: result line → terminal status.
    async fn results(self, samples: &mut Samples) -> Result<(), String> {
        while samples.result.len() < self.config.runs {
            let names = self.batch(json!({"steps": 4, "delayMs": 500})).await;
            for name in names {
                let (done, seen) = self.ended(&name, TaskStatus::Completed).await?;
                let printed = done
                    .status
                    .as_ref()
                    .and_then(|s| s.result.as_ref())
                    .and_then(|r| {
                        r.to_value()["structuredContent"]["printedAt"]
                            .as_str()?
                            .parse::<f64>()
                            .ok()
                    })
                    .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs))
                    .ok_or_else(|| format!("task {name}'s result has no printedAt"))?;
                samples.result.push(since(printed, seen));
            }
        }
        Ok(())
    }

    /// Two tools print a status line every 1.5 s (more than the 1 s coalescing interval).
    async fn status_lines(self, samples: &mut Samples) {
        let steps = self.config.runs.div_ceil(2) + 1;
        let args = json!({"steps": steps, "delayMs": 1500});
        for name in [self.start(args.clone()).await, self.start(args).await] {
            wait_terminal(self.client, self.ns, &name).await;
            self.recorder.wait_seen(&name, TaskStatus::Completed).await;
            for t in self.recorder.of(&name) {
                let Some(message) = t.message.as_deref() else {
                    continue;
                };
                if message.starts_with("step ")
                    && let Some(printed) = printed_time(message, " at ")
                {
                    samples.status.push(since(printed, t.seen_at));
                }
            }
        }
    }

    /// Running tools (they have reported a step) are cancelled; they check every 20 ms.
    async fn cancels(self, samples: &mut Samples) -> Result<(), String> {
        while samples.cancel.len() < self.config.runs {
            let names = self.batch(json!({"steps": 10_000, "delayMs": 1000})).await;
            let mut requested = Vec::new();
            for name in &names {
                wait_task(self.client, self.ns, name, Duration::from_secs(60), |t| {
                    t.status
                        .as_ref()
                        .and_then(|s| s.status_message.as_deref())
                        .is_some_and(|m| m.starts_with("step "))
                })
                .await;
                requested.push(SystemTime::now());
                request_cancel(self.client, self.ns, name).await;
            }
            for (name, at) in names.iter().zip(requested) {
                let (_, seen) = self.ended(name, TaskStatus::Cancelled).await?;
                samples.cancel.push(since(at, seen));
            }
        }
        Ok(())
    }
}
