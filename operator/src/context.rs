//! The context every reconcile gets: client, Event recorder, metrics, configuration, and the
//! per-task in-memory helpers (log followers, last status write) that only speed things up:
//! losing them on restart loses nothing the cluster does not hold.

use crate::controller::warm_pool::key::ClaimKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::channel::mpsc::UnboundedSender;
use kube::Client;
use kube::core::DeserializeGuard;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{ObjectRef, Store};
use mcp_task_operator_crds::{McpTask, McpTool};

use crate::FIELD_MANAGER;
use crate::config::Config;
use crate::controller::mcp_task::admission::Admitted;
use crate::controller::mcp_task::budget::WriteBudget;
use crate::controller::mcp_task::cache::Caches;
use crate::controller::mcp_task::follow::Followers;
use crate::controller::mcp_task::status::START_NOTE_SETTLE;
use crate::events::Events;
use crate::liveness::Liveness;
use crate::lock;
use crate::metrics::Metrics;

/// A reference to an McpTask as the McpTask controller watches it (through a guard that turns
/// a malformed object into a reconcile-time problem instead of a broken watch).
pub type TaskRef = ObjectRef<DeserializeGuard<McpTask>>;

/// What a replica remembers of its own status writes to one task; none of it survives a
/// restart, and none of it needs to.
#[derive(Debug, Default)]
struct Writes {
    /// When it last wrote the task's status; forgotten once the task is done.
    at: Option<Instant>,
    /// The `resourceVersion` its last status write left, until the cache shows that version or
    /// a newer one ([`Context::cache_behind`]).
    version: Option<String>,
    /// When the first start note since its last write was decided
    /// ([`Context::start_note_wait`]).
    start_note: Option<Instant>,
    /// It wrote the task's terminal status, and the cache has not shown it yet
    /// ([`Context::ended_here`]).
    ended: bool,
}

impl Writes {
    fn is_empty(&self) -> bool {
        self.at.is_none() && self.version.is_none() && self.start_note.is_none() && !self.ended
    }
}

/// What reconcilers share.
pub struct Context {
    /// The Kubernetes client.
    pub client: Client,
    /// Publishes Events about the reconciled objects.
    pub events: Events,
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// The operator's configuration.
    pub config: Arc<Config>,
    /// Log followers of running tasks.
    pub followers: Followers,
    /// Asks the McpTask controller to reconcile a task (after new tool output).
    pub trigger: UnboundedSender<TaskRef>,
    /// The McpTool controller's cache of tools, once that controller runs.
    pub tools: OnceLock<Store<DeserializeGuard<McpTool>>>,
    /// The McpTask controller's cache of tasks, once that controller runs (the tool
    /// concurrency limit's queue is read from it).
    pub tasks: OnceLock<Store<DeserializeGuard<McpTask>>>,
    /// Where reconciles record that they run, for the liveness probe.
    pub liveness: Arc<Liveness>,
    /// The McpTask controller's caches of its Jobs and pods, once that controller runs.
    pub caches: OnceLock<Caches>,
    /// The ceiling on progress status writes of all tasks.
    pub budget: WriteBudget,
    /// What this replica remembers of its own status writes, by task UID.
    writes: Mutex<HashMap<String, Writes>>,
    /// The tasks this replica admitted past their tool's concurrency limit, until its cache
    /// shows their Job (admission decisions are made one at a time).
    pub admitted: Admitted,
    /// The warm pools' claim key, calls and round requests.
    pub warm: crate::controller::warm_pool::Warm,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context for `client`, reporting Events as this replica.
    pub fn new(
        client: Client,
        metrics: Arc<Metrics>,
        config: Arc<Config>,
        trigger: UnboundedSender<TaskRef>,
    ) -> Self {
        Self {
            events: Events::new(
                client.clone(),
                FIELD_MANAGER,
                &config.identity,
                Arc::clone(&metrics),
            ),
            client,
            metrics,
            followers: Followers::new(config.scale.max_follower_starts),
            budget: WriteBudget::new(config.scale.status_writes_per_second),
            config,
            trigger,
            tools: OnceLock::new(),
            tasks: OnceLock::new(),
            liveness: Arc::default(),
            caches: OnceLock::new(),
            writes: Mutex::default(),
            admitted: Admitted::default(),
            warm: crate::controller::warm_pool::Warm::new(ClaimKey::random()),
        }
    }

    /// The same context, its log followers reading through `logs` (HTTP/2), if any.
    #[must_use]
    pub fn with_log_clients(mut self, logs: Option<crate::log_clients::LogClients>) -> Self {
        self.followers.logs = logs;
        self
    }

    /// The same context, its warm pools claiming with `key` (one every replica shares).
    #[must_use]
    pub fn with_claim_key(mut self, key: ClaimKey) -> Self {
        self.warm = crate::controller::warm_pool::Warm::new(key);
        self
    }

    /// The same context, recording its reconciles in `liveness` (the probe server's).
    #[must_use]
    pub fn with_liveness(mut self, liveness: Arc<Liveness>) -> Self {
        self.liveness = liveness;
        self
    }

    /// Time since the last status write of the task with `uid`, if this replica made one.
    pub fn since_last_write(&self, uid: &str) -> Option<Duration> {
        lock(&self.writes)
            .get(uid)
            .and_then(|w| w.at)
            .map(|at| at.elapsed())
    }

    /// Records a status write of the task with `uid` (or forgets its time, once the task is
    /// done).
    pub fn record_write(&self, uid: &str, done: bool) {
        self.writes(uid, |w| {
            w.start_note = None;
            w.at = (!done).then(Instant::now);
        });
        if done {
            self.budget.forget(uid);
        }
    }

    /// How long the start note just decided for the task with `uid` must still stand before it
    /// is written: [`START_NOTE_SETTLE`] from the first start note since the task's last write
    /// (this one, when it is the first), then zero.
    pub fn start_note_wait(&self, uid: &str) -> Duration {
        let since = self.writes(uid, |w| *w.start_note.get_or_insert_with(Instant::now));
        START_NOTE_SETTLE.saturating_sub(since.elapsed())
    }

    /// Records that a status write left the task with `uid` at `resource_version`.
    pub fn record_written(&self, uid: &str, resource_version: Option<String>) {
        self.writes(uid, |w| w.version = resource_version);
    }

    /// Whether the cached copy of the task with `uid`, at `cached` (its `resourceVersion`), is
    /// older than this replica's last status write to it: the watch has not brought the write
    /// back yet. A reconcile of that copy would decide from a status already replaced and write
    /// again what was written (its times moved on). Once the cache shows the written version or
    /// a newer one, or when either version cannot be compared, the write is forgotten.
    pub fn cache_behind(&self, uid: &str, cached: Option<&str>) -> bool {
        self.writes(uid, |w| {
            let Some(rv) = &w.version else {
                return false;
            };
            let older = cached.and_then(|c| crate::resource_version::compare(c, rv))
                == Some(std::cmp::Ordering::Less);
            if !older {
                w.version = None;
            }
            older
        })
    }

    /// Records that this replica wrote the terminal status of the task with `uid`: a terminal
    /// status never changes, so until the cache shows it no reconcile need read the task again
    /// to learn it ([`Context::ended_here`]).
    pub fn record_ended(&self, uid: &str) {
        self.writes(uid, |w| w.ended = true);
    }

    /// Whether this replica wrote the terminal status of the task with `uid` (and its cache has
    /// not shown it yet); `seen`: the cache shows it now, forget it.
    pub fn ended_here(&self, uid: &str, seen: bool) -> bool {
        self.writes(uid, |w| {
            let ended = w.ended;
            w.ended &= !seen;
            ended
        })
    }

    /// Forgets the in-memory state (followers, own writes) of tasks `keep` rejects.
    pub fn retain_tasks(&self, keep: impl Fn(&str) -> bool) {
        self.followers.retain(&keep);
        lock(&self.writes).retain(|uid, _| keep(uid));
    }

    /// Runs `change` on what this replica remembers of its writes to the task with `uid`; an
    /// entry left with nothing in it is dropped, and none is made for a change that records
    /// nothing, so the map holds only tasks with something to remember.
    fn writes<R>(&self, uid: &str, change: impl FnOnce(&mut Writes) -> R) -> R {
        let mut all = lock(&self.writes);
        if let Some(w) = all.get_mut(uid) {
            let result = change(w);
            if w.is_empty() {
                all.remove(uid);
            }
            return result;
        }
        let mut w = Writes::default();
        let result = change(&mut w);
        if !w.is_empty() {
            all.insert(uid.to_owned(), w);
        }
        result
    }

    /// Publishes an Event about `obj` in the background ([`Events::send`]); a failure is
    /// logged, never fatal.
    pub fn publish<K>(&self, obj: &K, reason: &str, note: String, warning: bool)
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_owned(),
            // Event notes are limited to 1 kB.
            note: Some(crate::contract::message::shorten(&note, 1000)),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        self.events.send(&event, &obj.object_ref(&()));
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::api::context;

    /// How many tasks the replica remembers writes of.
    fn remembered(ctx: &super::Context) -> usize {
        crate::lock(&ctx.writes).len()
    }

    #[tokio::test]
    async fn what_a_replica_remembers_of_a_task_goes_with_the_last_thing_in_it() {
        let ctx = context(vec![]).0;
        // Questions about a task it never wrote remember nothing.
        assert_eq!(ctx.since_last_write("t"), None);
        assert!(!ctx.cache_behind("t", Some("3")));
        assert!(!ctx.ended_here("t", false));
        assert!(!ctx.ended_here("t", true));
        assert_eq!(remembered(&ctx), 0);

        // A task's life: a start note, a write that left version 8, its terminal write.
        ctx.start_note_wait("t");
        ctx.record_write("t", false);
        ctx.record_written("t", Some("8".into()));
        assert!(ctx.since_last_write("t").is_some());
        ctx.record_write("t", true);
        ctx.record_written("t", Some("9".into()));
        ctx.record_ended("t");
        assert_eq!(ctx.since_last_write("t"), None, "done: the time goes");
        assert!(ctx.cache_behind("t", Some("8")));
        assert!(ctx.ended_here("t", false));
        assert_eq!(remembered(&ctx), 1);

        // The cache catches up: the version and the terminal mark go, and so does the record.
        assert!(!ctx.cache_behind("t", Some("9")));
        assert!(ctx.ended_here("t", true));
        assert!(!ctx.ended_here("t", false));
        assert_eq!(remembered(&ctx), 0);

        // A task deleted meanwhile is forgotten whatever it held.
        ctx.record_write("gone", false);
        ctx.record_ended("gone");
        ctx.record_write("kept", false);
        ctx.retain_tasks(|uid| uid == "kept");
        assert_eq!(remembered(&ctx), 1);
        assert!(!ctx.ended_here("gone", false));
    }
}
