//! Warm pools (`McpTool` `spec.warmPool`): pods of a tool started before any call, each
//! claimed by exactly one task and then used for that task alone.
//!
//! - [`key`]: the claim secrets, which only the operator knows;
//! - [`job`]: the warm Job, the tool's pod behind the launcher (`mcp-bridge --launch`);
//! - [`plan`]: how many pods wait, which are replaced;
//! - [`claim`]: a task takes a ready pod, durably and exclusively, and hands it its call;
//! - this module: the controller that keeps each tool's pool at its size.
//!
//! A warm Job is a Job like any other (admitted by the tool's Kueue queue, counted by its
//! concurrency limit's free slots), owned by its tool until a task claims it: the claim makes
//! the task its controller, so everything after (the pod's observation, its log, cancel, the
//! TTL) is the task's Job's as for a Job made for the task. See docs/DESIGN.md, "Warm pools".

pub mod claim;
pub mod job;
pub mod key;
pub mod plan;
pub mod session;
pub mod starting;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Preconditions};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;

use super::mcp_task::build::{TOOL_LABEL, label_value};
use super::mcp_task::{apply, cache, job_record};
use super::{drain, error_policy, reconcile_guarded, watched};
use crate::context::Context;
use crate::error::{Error, KubeOp, Result};
use crate::lock;
use key::ClaimKey;
use plan::{Demand, Member, Why};

/// Name of this controller in metrics and logs.
pub const CONTROLLER: &str = "warmpool";
/// How far back calls count for the pool's size.
const CALL_WINDOW: Duration = Duration::from_secs(60);
/// How soon a round looks again when nothing else is due.
const ROUND_POLL: Duration = Duration::from_secs(30);
/// Longest wait before a pool whose pods keep dying tries again.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// A tool's key in the pool state: (namespace, name).
type ToolKey = (String, String);

/// What the pools share with the task controller: the claim key, the calls of each tool and
/// the way to ask for a round.
pub struct Warm {
    /// The claim key.
    pub key: ClaimKey,
    /// The client that hands tasks to waiting pods.
    pub http: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        http_body_util::Full<bytes::Bytes>,
    >,
    /// Each tool's calls of the last minute: when, and the task (counted once however often
    /// its claim is tried).
    calls: Mutex<HashMap<ToolKey, VecDeque<(Instant, String)>>>,
    /// Calls waiting for a starting pod ([`starting`]).
    reservations: Mutex<starting::Reservations>,
    backoff: Mutex<HashMap<ToolKey, (u32, Instant)>>,
    seeds: Mutex<HashMap<String, crate::controller::mcp_task::follow::Resume>>,
    rounds: UnboundedSender<ObjectRef<DeserializeGuard<McpTool>>>,
    requests: Mutex<Option<UnboundedReceiver<ObjectRef<DeserializeGuard<McpTool>>>>>,
}

impl std::fmt::Debug for Warm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warm")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Warm {
    /// The pools' state, claiming with `key`.
    pub fn new(key: ClaimKey) -> Self {
        let (rounds, requests) = unbounded();
        Self {
            key,
            http: claim::http_client(),
            calls: Mutex::default(),
            reservations: Mutex::default(),
            backoff: Mutex::default(),
            seeds: Mutex::default(),
            rounds,
            requests: Mutex::new(Some(requests)),
        }
    }

    /// Counts the call of the task with `uid` to the tool `name` in `namespace` (claimed or
    /// started cold; once, however often it is tried) and asks for a round of its pool.
    pub fn called(&self, namespace: &str, name: &str, uid: &str) {
        let now = Instant::now();
        let mut calls = lock(&self.calls);
        let seen = calls
            .entry((namespace.to_owned(), name.to_owned()))
            .or_default();
        while seen
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > CALL_WINDOW)
        {
            seen.pop_front();
        }
        let new = !seen.iter().any(|(_, u)| u == uid);
        if new {
            seen.push_back((now, uid.to_owned()));
        }
        drop(calls);
        if new {
            self.round(namespace, name);
        }
    }

    /// Where the follower of the task with `uid` starts in its session's log (once).
    pub fn seed(&self, uid: &str, checkpoint: crate::controller::mcp_task::follow::Checkpoint) {
        let resume = crate::controller::mcp_task::follow::Resume {
            checkpoint,
            ..Default::default()
        };
        lock(&self.seeds).insert(uid.to_owned(), resume);
    }

    /// The start [`Warm::seed`] left for the task with `uid`, taken.
    pub fn take_seed(&self, uid: &str) -> Option<crate::controller::mcp_task::follow::Resume> {
        lock(&self.seeds).remove(uid)
    }

    /// Asks for a round of the pool of the tool `name` in `namespace`.
    pub fn round(&self, namespace: &str, name: &str) {
        let _ = self
            .rounds
            .unbounded_send(ObjectRef::new(name).within(namespace));
    }

    /// Asks for a round of that pool `after` from now (once the caches show what changed).
    pub fn round_after(&self, namespace: &str, name: &str, after: Duration) {
        let rounds = self.rounds.clone();
        let tool = ObjectRef::new(name).within(namespace);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = rounds.unbounded_send(tool);
        });
    }

    fn calls_last_minute(&self, key: &ToolKey) -> usize {
        let now = Instant::now();
        lock(&self.calls).get(key).map_or(0, |seen| {
            seen.iter()
                .filter(|(t, _)| now.duration_since(*t) <= CALL_WINDOW)
                .count()
        })
    }
}

/// Runs the pool controller until `shutdown` resolves.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let tools = watched::<DeserializeGuard<McpTool>>(&ctx);
    let jobs = watched::<Job>(&ctx);
    let requests = lock(&ctx.warm.requests).take();
    let Some(requests) = requests else {
        tracing::warn!("the warm pool controller runs twice in one process");
        return;
    };
    let pool_jobs = watcher::Config::default().labels(WARM_POOL_LABEL);
    let controller = Controller::new(tools, watcher::Config::default().any_semantic())
        // A pool's Jobs (waiting, claimed or ended) each bring a round of their tool's pool.
        .watches(jobs, pool_jobs, |job: Job| {
            let tool = job.labels().get(WARM_POOL_LABEL)?.clone();
            Some(ObjectRef::new(&tool).within(&job.namespace()?))
        })
        .reconcile_on(requests)
        .graceful_shutdown_on(shutdown);
    let on_error = error_policy(CONTROLLER);
    let results = controller.run(reconcile, on_error, ctx);
    drain(results, "warm pool").await;
}

async fn reconcile(guard: Arc<DeserializeGuard<McpTool>>, ctx: Arc<Context>) -> Result<Action> {
    reconcile_guarded(&guard, &ctx, CONTROLLER, |tool| round(tool, &ctx)).await
}

/// One round of `tool`'s pool.
async fn round(tool: &McpTool, ctx: &Context) -> Result<Action> {
    let namespace = tool.namespace().unwrap_or_default();
    let Some(caches) = ctx.caches.get().filter(|c| cache::ready(&c.jobs)) else {
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    let now = Timestamp::now();
    let uid = tool.uid().unwrap_or_default();
    let jobs: Vec<Arc<Job>> = caches
        .jobs
        .state()
        .into_iter()
        .filter(|j| j.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|j| session::of_pool(j, &uid))
        .collect();
    // A caller's session is no waiting pod: it goes once its pod ended, or, serving nobody,
    // when this replica cannot hand it calls (another key started it).
    let (sessions, jobs): (Vec<Arc<Job>>, Vec<Arc<Job>>) =
        jobs.into_iter().partition(|j| session::is_session(j));
    let ended_sessions: Vec<(String, Why)> = sessions
        .iter()
        .filter_map(|j| {
            let pods = caches
                .pods_by_job
                .pods(&caches.pods, &namespace, &j.name_any());
            let m = member(j, &pods);
            let foreign = m.key_id.as_deref() != Some(ctx.warm.key.id());
            let why = match (m.ended, foreign && session::serving_uid(j).is_none()) {
                (true, _) => Why::Ended,
                (false, true) => Why::OtherKey,
                (false, false) => return None,
            };
            Some((m.name, why))
        })
        .collect();
    delete(ctx, &namespace, &sessions, &ended_sessions).await?;
    let members: Vec<Member> = jobs
        .iter()
        .map(|j| {
            member(
                j,
                &caches
                    .pods_by_job
                    .pods(&caches.pods, &namespace, &j.name_any()),
            )
        })
        .collect();
    let key: ToolKey = (namespace.clone(), tool.name_any());
    let Some(pool) = tool.spec.warm_pool.as_ref() else {
        // No pool (any more): the waiting pods go.
        let gone: Vec<_> = members
            .iter()
            .map(|m| (m.name.clone(), Why::Surplus))
            .collect();
        delete(ctx, &namespace, &jobs, &gone).await?;
        return Ok(Action::await_change());
    };
    let demand = Demand {
        pool,
        generation: tool.metadata.generation,
        key_id: ctx.warm.key.id(),
        calls_last_minute: ctx.warm.calls_last_minute(&key),
        free_slots: free_slots(tool, ctx),
        now,
    };
    let mut round = plan::plan(&members, &demand);
    delete(ctx, &namespace, &jobs, &round.delete).await?;
    // A pool whose pods die waiting starts again only after a growing pause.
    let died = round.delete.iter().any(|(_, why)| *why == Why::Ended);
    let ready = members.iter().any(|m| m.ready);
    let pause = backoff(ctx, &key, died, ready);
    if pause.is_some() {
        round.create = 0;
    }
    for _ in 0..round.create {
        let name = job::warm_job_name(tool);
        let desired = match job::warm_job(tool, &ctx.config, &ctx.warm.key, &name) {
            Ok(desired) => desired,
            Err(e) => {
                ctx.publish(tool, "WarmPoolUnavailable", e.to_string(), true);
                return Ok(Action::await_change());
            }
        };
        if let apply::Created::Refused(why) =
            apply::create_job(&ctx.client, &namespace, &desired).await?
        {
            let note = format!("A warm pod's Job was refused: {why}");
            ctx.publish(tool, "WarmPoolUnavailable", note, true);
            return Ok(Action::requeue(ROUND_POLL));
        }
    }
    // Look again when the oldest waiting pod idles out, or the pause ends.
    let idle = Duration::from_secs(u64::try_from(pool.idle_seconds).unwrap_or(600));
    let next_idle = members
        .iter()
        .filter(|m| !m.ended)
        .filter_map(|m| {
            let age = now.duration_since(m.created);
            idle.checked_sub(Duration::try_from(age).unwrap_or_default())
        })
        .min();
    let wait = [Some(ROUND_POLL), next_idle, pause]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(ROUND_POLL);
    Ok(Action::requeue(wait.max(Duration::from_millis(200))))
}

/// Records a round's deaths for `key`'s pool: `Some(pause)` while new pods must wait.
fn backoff(ctx: &Context, key: &ToolKey, died: bool, ready: bool) -> Option<Duration> {
    let mut all = lock(&ctx.warm.backoff);
    if ready && !died {
        all.remove(key);
        return None;
    }
    let now = Instant::now();
    if died {
        let entry = all.entry(key.clone()).or_insert((0, now));
        entry.0 = entry.0.saturating_add(1);
        let pause = Duration::from_secs(1u64 << entry.0.min(9)).min(MAX_BACKOFF);
        entry.1 = now + pause;
    }
    let until = all.get(key)?.1;
    until.checked_duration_since(now).filter(|d| !d.is_zero())
}

/// The pool member `job`, with its `pods`.
fn member(job: &Job, pods: &[Pod]) -> Member {
    let annotation = |k: &str| job.annotations().get(k).cloned();
    let status = job.status.as_ref();
    let job_ended = status.is_some_and(|s| {
        s.succeeded.unwrap_or(0) > 0
            || s.failed.unwrap_or(0) > 0
            || s.conditions.iter().flatten().any(|c| {
                ["Complete", "Failed", "FailureTarget", "SuccessCriteriaMet"]
                    .contains(&c.type_.as_str())
                    && c.status == "True"
            })
    });
    let pod_ended = pods.iter().any(|p| {
        let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
        matches!(phase, Some("Succeeded" | "Failed")) || p.metadata.deletion_timestamp.is_some()
    });
    Member {
        name: job.name_any(),
        created: job
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(Timestamp::UNIX_EPOCH, |t| t.0),
        key_id: annotation(job::WARM_KEY_ANNOTATION),
        generation: annotation(job::WARM_GENERATION_ANNOTATION).and_then(|g| g.parse().ok()),
        ended: job_ended || pod_ended,
        ready: pods.iter().any(claim::waiting),
    }
}

/// Slots of `tool`'s concurrency limit that no task of it holds (None: no limit); none while a
/// call of the tool waits for its Kueue queue's admission (a waiting pod admitted first would
/// take the quota the call waits for).
fn free_slots(tool: &McpTool, ctx: &Context) -> Option<usize> {
    if tool.spec.queue_name.is_some() && call_waits_for_admission(tool, ctx) {
        return Some(0);
    }
    let limit = usize::try_from(tool.spec.max_concurrent_tasks?).unwrap_or(0);
    let namespace = tool.namespace();
    let name = tool.mcp_name();
    let held = ctx.tasks.get().map_or(0, |store| {
        store
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .filter(|t| t.namespace() == namespace && t.spec.tool == name && !t.is_terminal())
            .filter(|t| job_record::recorded(t.status.as_ref()))
            .count()
    });
    Some(limit.saturating_sub(held))
}

/// Whether a Job of a call of `tool` (not a pool's) is suspended, waiting for admission.
fn call_waits_for_admission(tool: &McpTool, ctx: &Context) -> bool {
    let Some(caches) = ctx.caches.get() else {
        return false;
    };
    let namespace = tool.namespace();
    let label = label_value(&tool.name_any());
    caches.jobs.state().iter().any(|j| {
        j.namespace() == namespace
            && j.labels().get(TOOL_LABEL) == label.as_ref()
            && !j.labels().contains_key(WARM_POOL_LABEL)
            && j.spec.as_ref().and_then(|s| s.suspend) == Some(true)
            && j.metadata.deletion_timestamp.is_none()
    })
}

/// Deletes the pool's Jobs named in `gone`, each only as cached (a Job a task claimed since has
/// another resourceVersion: it stays).
async fn delete(
    ctx: &Context,
    namespace: &str,
    jobs: &[Arc<Job>],
    gone: &[(String, Why)],
) -> Result<()> {
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    for (name, why) in gone {
        let Some(job) = jobs.iter().find(|j| &j.name_any() == name) else {
            continue;
        };
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: job.resource_version(),
                uid: job.uid(),
            }),
            ..DeleteParams::background()
        };
        tracing::debug!(job = %name, ?why, "warm pod leaves its pool");
        match api.delete(name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(Error::kube(KubeOp::Delete, "Job", name, e)),
        }
    }
    Ok(())
}
