//! The `McpTask` controller, split into its steps: build the Job, observe its pod, follow its
//! logs, map what the pod did to a task status, and the API calls that carry it out.

pub mod admission;
pub mod apply;
pub mod attempts;
pub mod budget;
pub mod build;
pub mod cache;
pub mod condition;
pub mod follow;
pub mod idle;
pub mod input_timeout;
pub mod job_record;
pub mod nonce;
pub mod notify;
pub mod observe;
pub mod outcome;
pub mod reconcile;
pub mod signals;
pub mod status;
pub mod tool_identity;
pub mod trigger;
pub mod ttl;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::{Controller, PredicateConfig, WatchStreamExt, watcher};
use mcp_task_operator_crds::McpTask;

use super::{drain, error_policy, watched};
use crate::context::{Context, TaskRef};

/// How often the state of deleted tasks is dropped and the task and log-stream gauges refresh.
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the McpTask controller until `shutdown` resolves. `triggers` carries reconcile
/// requests from the log followers.
pub async fn run(
    ctx: Arc<Context>,
    triggers: UnboundedReceiver<TaskRef>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let tasks = watched::<DeserializeGuard<McpTask>>(&ctx);
    let (jobs, pods) = (watched::<Job>(&ctx), watched::<Pod>(&ctx));
    // The Jobs and pods the operator made.
    let managed = watcher::Config::default().labels(&format!(
        "app.kubernetes.io/managed-by={}",
        build::MANAGED_BY
    ));
    // The Jobs and pods the operator made, cached by the watches that also trigger reconciles
    // (`cache.rs`): a reconcile reads them without an API request.
    let (job_store, job_writer) = reflector::store::<Job>();
    let (pod_store, pod_writer) = reflector::store::<Pod>();
    let pods_by_job = cache::PodIndex::default();
    let caches = cache::Caches {
        jobs: job_store.clone(),
        pods: pod_store,
        pods_by_job: pods_by_job.clone(),
    };
    if ctx.caches.set(caches).is_err() {
        tracing::warn!("the McpTask controller runs twice in one process: caches kept");
    }
    let job_events = reflector(
        job_writer,
        watcher(jobs, managed.clone())
            .default_backoff()
            .modify(cache::slim_job),
    )
    .touched_objects();
    let pod_events = reflector(
        pod_writer,
        watcher(pods, managed)
            .default_backoff()
            .modify(cache::slim_pod)
            .inspect_ok(move |event| pods_by_job.observe(event)),
    )
    .touched_objects();
    // The tasks, without the updates that change only their status (the operator's own
    // writes, as a rule): those would each trigger a reconcile for nothing.
    let (task_store, task_writer) = reflector::store::<DeserializeGuard<McpTask>>();
    let task_events = reflector(
        task_writer,
        watcher(tasks, watcher::Config::default())
            .default_backoff()
            .modify(cache::slim_task),
    )
    .applied_objects()
    .predicate_filter(trigger::beyond_status, PredicateConfig::default());
    // Bounded (`MCP_OPERATOR_MAX_RECONCILES`): at start every task is due at once, and 10,000
    // reconcile futures in flight together left the operator ~25 KB per task larger for good
    // (docs/BENCHMARKS.md).
    let concurrency = ctx.config.scale.max_reconciles;
    let controller = Controller::for_stream(task_events, task_store)
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency));
    let sweeper = tokio::spawn(sweep(Arc::clone(&ctx), controller.store()));
    let _ = ctx.tasks.set(controller.store());
    let on_error = error_policy(reconcile::CONTROLLER);
    let results = controller
        .owns_stream(job_events)
        // A pod's Job is named after its task, and the Job controller labels the pod with it;
        // a warm Job has a name of its own, and the task that claimed it controls it.
        .watches_stream(pod_events, move |pod: Pod| task_of_pod(&pod, &job_store))
        .reconcile_on(triggers)
        .graceful_shutdown_on(shutdown)
        .run(reconcile::reconcile, on_error, ctx);
    drain(results, "McpTask").await;
    sweeper.abort();
}

/// The task whose reconcile a change of `pod` concerns: the one its Job is named after, or,
/// for a warm pod, the one that claimed its Job or that its session serves (none while it
/// waits: that is its pool's).
fn task_of_pod(pod: &Pod, jobs: &Store<Job>) -> Option<TaskRef> {
    let labels = pod.metadata.labels.as_ref()?;
    let job = labels.get(mcp_task_operator_crds::JOB_NAME_LABEL)?;
    let namespace = pod.metadata.namespace.as_deref()?;
    if !labels.contains_key(mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL) {
        return Some(TaskRef::new(job).within(namespace));
    }
    let job = jobs.get(&reflector::ObjectRef::new(job).within(namespace))?;
    if let Some(task) = crate::controller::warm_pool::session::serving_task(&job) {
        return Some(TaskRef::new(task).within(namespace));
    }
    let owner = job
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "McpTask")?;
    Some(TaskRef::new(&owner.name).within(namespace))
}

/// Every sweep interval, drops the in-memory state of tasks that no longer exist.
async fn sweep(ctx: Arc<Context>, store: Store<DeserializeGuard<McpTask>>) {
    let mut tick = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        tick.tick().await;
        // An empty store is still syncing: sweeping now would stop every follower.
        if store.is_empty() {
            continue;
        }
        let tasks = store.state();
        let live: HashSet<String> = tasks.iter().filter_map(|t| t.uid()).collect();
        ctx.retain_tasks(|uid| live.contains(uid));
        let mut counts: BTreeMap<&'static str, i64> = BTreeMap::new();
        for task in tasks.iter().filter_map(|guard| guard.0.as_ref().ok()) {
            *counts.entry(task.task_status().as_str()).or_default() += 1;
        }
        ctx.metrics
            .set_tasks_by_status(&counts.into_iter().collect::<Vec<_>>());
        ctx.metrics.set_log_streams(ctx.followers.running());
    }
}
