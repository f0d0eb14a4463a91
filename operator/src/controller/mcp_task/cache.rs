//! The operator's caches of the Jobs and pods it made: reflector stores fed by the same watches
//! that trigger reconciles, so a reconcile reads its Job and pods without an API request.
//!
//! A cache can lag a write (the operator's own Job creation, a pod the Job controller just
//! made), so its answers are trusted only where a lagging answer is harmless: a Job missing
//! from the cache is created by a POST that never changes an existing Job (a 409 reads the
//! real one), and where the cache's answer would END a task (its Job gone, its pod gone), the
//! caller confirms with one request first ([`jobs_or_api`], [`pods_or_api`]). Until a store
//! has its first full list, every read goes to the API server, as it did without caches.
//!
//! The cached copies are slimmed: no `managedFields` and no container `env` (the task's
//! arguments, up to the input budget): nothing read from a cached Job or pod needs them.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use mcp_task_operator_crds::{JOB_NAME_LABEL, McpTask};

use super::apply;
use super::observe::controlled_by;
use crate::context::Context;
use crate::error::Result;
use crate::lock;

/// The reflector stores of the operator's Jobs and pods, and an index of pods by Job.
#[derive(Clone)]
pub struct Caches {
    /// The Jobs the operator made (label-selected).
    pub jobs: Store<Job>,
    /// The pods of those Jobs (label-selected).
    pub pods: Store<Pod>,
    /// Pod names by (namespace, Job name), from the pods' Job-name label.
    pub pods_by_job: PodIndex,
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("jobs", &self.jobs.len())
            .field("pods", &self.pods.len())
            .finish()
    }
}

/// Whether `store` has had its first full list (until then its answers mean nothing).
pub fn ready<K>(store: &Store<K>) -> bool
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store.wait_until_ready().now_or_never().is_some()
}

/// Pod names by the (namespace, Job name) of their `batch.kubernetes.io/job-name` label, kept
/// from the pod watch's events. Entries whose pod left the store are dropped when looked up.
#[derive(Clone, Default)]
pub struct PodIndex {
    inner: Arc<Mutex<HashMap<JobKey, BTreeSet<String>>>>,
}

/// A Job's namespace and name.
type JobKey = (String, String);

impl PodIndex {
    /// Updates the index from one pod watch event.
    pub fn observe(&self, event: &watcher::Event<Pod>) {
        match event {
            watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                if let Some(key) = index_key(pod) {
                    lock(&self.inner)
                        .entry(key)
                        .or_default()
                        .insert(pod.name_any());
                }
            }
            watcher::Event::Delete(pod) => {
                if let Some(key) = index_key(pod) {
                    let mut index = lock(&self.inner);
                    if let Some(names) = index.get_mut(&key) {
                        names.remove(&pod.name_any());
                        if names.is_empty() {
                            index.remove(&key);
                        }
                    }
                }
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    /// The pods of the Job `job` in `namespace` that `store` holds.
    pub fn pods(&self, store: &Store<Pod>, namespace: &str, job: &str) -> Vec<Pod> {
        let key = (namespace.to_owned(), job.to_owned());
        let mut index = lock(&self.inner);
        let Some(names) = index.get_mut(&key) else {
            return Vec::new();
        };
        let mut pods = Vec::new();
        names.retain(
            |name| match store.get(&ObjectRef::new(name).within(namespace)) {
                Some(pod) => {
                    pods.push(Pod::clone(&pod));
                    true
                }
                None => false,
            },
        );
        if names.is_empty() {
            index.remove(&key);
        }
        pods
    }

    /// How many Jobs the index holds pods of.
    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn index_key(pod: &Pod) -> Option<JobKey> {
    let job = pod.labels().get(JOB_NAME_LABEL)?;
    Some((pod.namespace()?, job.clone()))
}

/// Drops what no reader of a cached Job needs: managed fields and the pod template's spec.
/// Readers take the Job's metadata, status, `suspend`, `backoffLimit` and the template's
/// annotations (the message nonce); a Job is never written back from the cache.
pub fn slim_job(job: &mut Job) {
    job.metadata.managed_fields = None;
    if let Some(spec) = job.spec.as_mut() {
        spec.template.spec = None;
    }
}

/// Drops what no reader of a cached pod needs: managed fields, and of its spec everything but
/// the containers' names (which one is the tool's, `observe::tool_container_name`) and the
/// node. A pod is never written back from the cache.
pub fn slim_pod(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    if let Some(spec) = pod.spec.take() {
        let names = |containers: Vec<Container>| -> Vec<Container> {
            containers
                .into_iter()
                .map(|c| Container {
                    name: c.name,
                    ..Container::default()
                })
                .collect()
        };
        pod.spec = Some(PodSpec {
            containers: names(spec.containers),
            init_containers: spec.init_containers.map(names),
            node_name: spec.node_name,
            ..PodSpec::default()
        });
    }
}

/// Drops what no reader of a cached task needs: its managed fields (a few KiB of field paths
/// per writer; status writes are server-side applies, which never send them back).
pub fn slim_task(task: &mut DeserializeGuard<McpTask>) {
    if let Ok(task) = task.0.as_mut() {
        task.metadata.managed_fields = None;
    }
}

/// Where a read came from: the cache, or the API server (a cache miss confirmed, or no
/// cache yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The operator's cache: may lag.
    Cache,
    /// The API server: current.
    Api,
}

/// The task's Job from the cache when it is ready, else from the API server.
pub async fn job(ctx: &Context, namespace: &str, name: &str) -> Result<(Option<Job>, Source)> {
    match ctx.caches.get().filter(|c| ready(&c.jobs)) {
        Some(caches) => {
            let key = ObjectRef::new(name).within(namespace);
            Ok((caches.jobs.get(&key).map(|j| Job::clone(&j)), Source::Cache))
        }
        None => Ok((
            apply::get_job(&ctx.client, namespace, name).await?,
            Source::Api,
        )),
    }
}

/// The Job of the task from the API server when `job` came from the cache and says it is
/// gone: a missing Job ends a task, so the cache's word alone never does.
pub async fn jobs_or_api(
    ctx: &Context,
    namespace: &str,
    name: &str,
    job: Option<Job>,
    source: Source,
) -> Result<(Option<Job>, Source)> {
    match (job, source) {
        (None, Source::Cache) => Ok((
            apply::get_job(&ctx.client, namespace, name).await?,
            Source::Api,
        )),
        (job, source) => Ok((job, source)),
    }
}

/// The pods `job` controls, from the cache when it is ready, else from the API server.
pub async fn pods(ctx: &Context, namespace: &str, job: &Job) -> Result<(Vec<Pod>, Source)> {
    match ctx.caches.get().filter(|c| ready(&c.pods)) {
        Some(caches) => {
            let job_uid = job.uid().unwrap_or_default();
            let pods = caches
                .pods_by_job
                .pods(&caches.pods, namespace, &job.name_any())
                .into_iter()
                .filter(|p| controlled_by(&p.metadata, &job_uid))
                .collect();
            Ok((pods, Source::Cache))
        }
        None => Ok((
            apply::list_pods(&ctx.client, namespace, job).await?,
            Source::Api,
        )),
    }
}

/// The pods of `job` from the API server when the cache's answer (no pod) would end the task.
pub async fn pods_or_api(
    ctx: &Context,
    namespace: &str,
    job: &Job,
    pods: Vec<Pod>,
    source: Source,
) -> Result<Vec<Pod>> {
    match (pods.is_empty(), source) {
        (true, Source::Cache) => apply::list_pods(&ctx.client, namespace, job).await,
        _ => Ok(pods),
    }
}

#[cfg(test)]
mod tests;
