//! A record of every status change of a namespace's tasks, and the timing helpers the
//! measurement printouts use.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use tokio::task::JoinHandle;

use super::WAIT;

/// The statuses of a task that asked for input once, was answered and completed.
pub const ANSWERED_ONCE: [TaskStatus; 4] = [
    TaskStatus::Working,
    TaskStatus::InputRequired,
    TaskStatus::Working,
    TaskStatus::Completed,
];

/// One change of a task's MCP-visible state, as a watch delivered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// When the watch delivered it (this machine's wall clock, which the node shares).
    pub seen_at: SystemTime,
    /// The task.
    pub task: String,
    /// The new `status` (`None`: no status yet).
    pub status: Option<TaskStatus>,
    /// The new `statusMessage`.
    pub message: Option<String>,
}

/// Watches every McpTask of a namespace and records each change of status or statusMessage,
/// from when it starts until it is dropped.
pub struct TaskRecorder {
    transitions: Arc<Mutex<Vec<Transition>>>,
    watch: JoinHandle<()>,
}

impl TaskRecorder {
    /// Starts watching `ns`; returns once the watch has listed the namespace.
    pub async fn start(client: &Client, ns: &str) -> Self {
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
        let transitions = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let recorded = Arc::clone(&transitions);
        let watch = tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            let mut last: BTreeMap<String, (Option<TaskStatus>, Option<String>)> = BTreeMap::new();
            let stream = watcher(tasks, watcher::Config::default()).default_backoff();
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let objects = match event {
                    Ok(watcher::Event::Apply(task) | watcher::Event::InitApply(task)) => {
                        vec![task]
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    _ => continue,
                };
                let seen_at = SystemTime::now();
                for task in objects {
                    let state = (
                        task.status.as_ref().map(|s| s.status),
                        task.status.as_ref().and_then(|s| s.status_message.clone()),
                    );
                    let name = task.name_any();
                    if last.get(&name) == Some(&state) {
                        continue;
                    }
                    last.insert(name.clone(), state.clone());
                    recorded.lock().expect("recorder lock").push(Transition {
                        seen_at,
                        task: name,
                        status: state.0,
                        message: state.1,
                    });
                }
            }
        });
        tokio::time::timeout(WAIT, ready_rx)
            .await
            .expect("the task watch lists the namespace")
            .expect("the task watch runs");
        Self { transitions, watch }
    }

    /// Every transition so far.
    pub fn transitions(&self) -> Vec<Transition> {
        self.transitions.lock().expect("recorder lock").clone()
    }

    /// The transitions of one task so far.
    pub fn of(&self, task: &str) -> Vec<Transition> {
        self.transitions()
            .into_iter()
            .filter(|t| t.task == task)
            .collect()
    }

    /// The distinct statuses one task went through, in order.
    pub fn statuses(&self, task: &str) -> Vec<TaskStatus> {
        let mut statuses: Vec<TaskStatus> = Vec::new();
        for t in self.of(task) {
            if let Some(status) = t.status
                && statuses.last() != Some(&status)
            {
                statuses.push(status);
            }
        }
        statuses
    }

    /// Waits until the task reached the last of `expected`, then asserts that these were all its
    /// statuses, in order.
    pub async fn assert_statuses(&self, task: &str, expected: &[TaskStatus]) {
        if let Some(last) = expected.last() {
            self.wait_seen(task, *last).await;
        }
        assert_eq!(self.statuses(task), expected, "statuses of {task}");
    }

    /// Waits until the watch has delivered `status` for `task` (another watch may be ahead).
    pub async fn wait_seen(&self, task: &str, status: TaskStatus) {
        let started = Instant::now();
        while !self.statuses(task).contains(&status) {
            assert!(
                started.elapsed() < WAIT,
                "the recorder saw no {status:?} for {task} in {WAIT:?}: {:#?}",
                self.of(task)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Panics if any task's status or statusMessage changed after it was terminal.
    pub fn assert_terminal_statuses_never_change(&self) {
        let mut terminal: BTreeMap<String, Transition> = BTreeMap::new();
        for t in self.transitions() {
            if let Some(done) = terminal.get(&t.task) {
                panic!(
                    "task {} changed after its terminal status {:?} ({:?}): {:#?}",
                    t.task,
                    done.status,
                    done.message,
                    self.of(&t.task)
                );
            }
            if t.status.is_some_and(TaskStatus::is_terminal) {
                terminal.insert(t.task.clone(), t);
            }
        }
    }
}

impl Drop for TaskRecorder {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// Parses the Unix time a tool printed after `marker` (e.g. `"at "` in `step 1 of 3 at T`).
pub fn printed_time(text: &str, marker: &str) -> Option<SystemTime> {
    let (_, rest) = text.rsplit_once(marker)?;
    let secs: f64 = rest.split_whitespace().next()?.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs))
}

/// Median and worst of a sample, in milliseconds, for the measurement printouts.
pub fn summarize(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let n = samples.len();
    let median = if n % 2 == 1 {
        ms(samples[n / 2])
    } else {
        (ms(samples[n / 2 - 1]) + ms(samples[n / 2])) / 2.0
    };
    (median, samples.last().copied().map(ms).unwrap_or_default())
}
