//! When the cluster did what, per task: a watch on the Jobs and pods of one namespace records
//! the first time each Job was seen and seen succeeded, each pod was seen running and each pod
//! was seen stopped.
//! With the operator's [`mcp_task_operator_harness::operator::TaskRecorder`] this splits a
//! task's life into phases.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{JOB_NAME_LABEL, TASK_LABEL};
use mcp_task_operator_harness::follow;
use tokio::task::JoinHandle;

/// First-seen times of one task's Job and pod.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// The Job appeared.
    pub job: Option<SystemTime>,
    /// The Job's status counted a succeeded pod.
    pub succeeded: Option<SystemTime>,
    /// The pod's container was running (or had already run).
    pub running: Option<SystemTime>,
    /// The pod's container had stopped.
    pub stopped: Option<SystemTime>,
}

/// Records [`Phases`] of every task in a namespace until dropped.
pub struct PhaseRecorder {
    seen: Arc<Mutex<BTreeMap<String, Phases>>>,
    watches: Vec<JoinHandle<()>>,
}

impl PhaseRecorder {
    /// Starts watching the Jobs and pods of `ns` (Jobs carry no label selector so that bare
    /// Jobs made by the harness count too: their name is the key).
    pub fn start(client: &Client, ns: &str) -> Self {
        let seen: Arc<Mutex<BTreeMap<String, Phases>>> = Arc::default();
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let job_seen = seen.clone();
        let job_watch = follow(jobs, move |job| {
            let now = SystemTime::now();
            let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) > 0;
            let mut seen = job_seen.lock().unwrap_or_else(PoisonError::into_inner);
            let phases = seen.entry(job.name_any()).or_default();
            phases.job.get_or_insert(now);
            if succeeded {
                phases.succeeded.get_or_insert(now);
            }
        });
        let pod_seen = seen.clone();
        let pod_watch = follow(pods, move |pod| {
            let now = SystemTime::now();
            let labels = pod.labels();
            let Some(key) = labels
                .get(TASK_LABEL)
                .or_else(|| labels.get(JOB_NAME_LABEL))
            else {
                return;
            };
            let (running, stopped) = container_state(&pod);
            let mut seen = pod_seen.lock().unwrap_or_else(PoisonError::into_inner);
            let phases = seen.entry(key.clone()).or_default();
            if running || stopped {
                phases.running.get_or_insert(now);
            }
            if stopped {
                phases.stopped.get_or_insert(now);
            }
        });
        Self {
            seen,
            watches: vec![job_watch, pod_watch],
        }
    }

    /// What has been seen of `key` (task ID or Job name) so far.
    pub fn of(&self, key: &str) -> Phases {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .copied()
            .unwrap_or_default()
    }
}

impl Drop for PhaseRecorder {
    fn drop(&mut self) {
        for watch in &self.watches {
            watch.abort();
        }
    }
}

/// Whether the pod's first container is (or was) running, and whether it has stopped.
fn container_state(pod: &Pod) -> (bool, bool) {
    let state = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref());
    let running = state.is_some_and(|s| s.running.is_some());
    let stopped = state.is_some_and(|s| s.terminated.is_some());
    (running, stopped)
}
