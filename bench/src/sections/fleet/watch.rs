//! What the fleet section watches in its namespace: when each Job appeared and finished, when
//! each pod appeared (the Job controller's share) and ran (the node's), how many pods run at
//! once (and the most at once), and when each task reached its terminal status with which
//! result. Three watches in all, so the harness adds three requests to the
//! API server's counters however many tasks run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use tokio::task::JoinHandle;

/// How one task ended.
#[derive(Clone, Debug)]
pub struct Ended {
    /// When the watch saw the terminal status.
    pub at: SystemTime,
    /// The terminal status.
    pub status: TaskStatus,
    /// The first text block of the result, or the failure's message.
    pub text: String,
}

/// What the watches saw so far.
#[derive(Debug, Default)]
pub struct Seen {
    /// First time each Job was seen.
    pub jobs: BTreeMap<String, SystemTime>,
    /// First time each Job was seen succeeded or failed.
    pub jobs_done: BTreeMap<String, SystemTime>,
    /// First time each pod was seen (created by the Job controller).
    pub pods_created: BTreeMap<String, SystemTime>,
    /// Pods whose containers run now.
    running: BTreeMap<String, ()>,
    /// First time each pod was seen running.
    pub pods_running: BTreeMap<String, SystemTime>,
    /// The most pods seen running at once.
    pub peak_running: usize,
    /// Terminal tasks.
    pub ended: BTreeMap<String, Ended>,
}

impl Seen {
    /// Pods running now.
    pub fn running_now(&self) -> usize {
        self.running.len()
    }
}

/// The three watches; stopped when dropped.
pub struct Watch {
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching the Jobs, pods and McpTasks of `ns`.
    pub fn start(client: &Client, ns: &str) -> Self {
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let tasks = vec![
            follow(
                Api::<Job>::namespaced(client.clone(), ns),
                seen.clone(),
                on_job,
            ),
            follow(
                Api::<Pod>::namespaced(client.clone(), ns),
                seen.clone(),
                on_pod,
            ),
            follow(
                Api::<McpTask>::namespaced(client.clone(), ns),
                seen.clone(),
                on_task,
            ),
        ];
        Self { seen, tasks }
    }

    /// Reads what was seen so far.
    pub fn read<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.seen.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Applies every object the watch on `api` reports to `seen` with `apply`.
fn follow<K>(api: Api<K>, seen: Arc<Mutex<Seen>>, apply: fn(&mut Seen, &K)) -> JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default + std::hash::Hash + Eq + Clone,
{
    mcp_task_operator_harness::follow(api, move |object| {
        apply(
            &mut seen.lock().unwrap_or_else(PoisonError::into_inner),
            &object,
        );
    })
}

fn on_job(seen: &mut Seen, job: &Job) {
    let now = SystemTime::now();
    let name = job.name_any();
    seen.jobs.entry(name.clone()).or_insert(now);
    let status = job.status.as_ref();
    if status.is_some_and(|s| s.succeeded.unwrap_or(0) + s.failed.unwrap_or(0) > 0) {
        seen.jobs_done.entry(name).or_insert(now);
    }
}

fn on_pod(seen: &mut Seen, pod: &Pod) {
    let name = pod.name_any();
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    seen.pods_created
        .entry(name.clone())
        .or_insert_with(SystemTime::now);
    if phase == Some("Running") && pod.metadata.deletion_timestamp.is_none() {
        seen.running.insert(name.clone(), ());
        seen.pods_running
            .entry(name)
            .or_insert_with(SystemTime::now);
        seen.peak_running = seen.peak_running.max(seen.running.len());
    } else {
        seen.running.remove(&name);
    }
}

fn on_task(seen: &mut Seen, task: &McpTask) {
    let status = task.task_status();
    if !status.is_terminal() {
        return;
    }
    let name = task.name_any();
    if seen.ended.contains_key(&name) {
        return;
    }
    let text = task
        .status
        .as_ref()
        .and_then(|s| {
            s.result
                .as_ref()
                .and_then(|r| {
                    r.member("content")?
                        .pointer("/0/text")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned)
                })
                .or_else(|| s.status_message.clone())
        })
        .unwrap_or_default();
    seen.ended.insert(
        name,
        Ended {
            at: SystemTime::now(),
            status,
            text,
        },
    );
}
