//! The context every reconcile gets: client, Event recorder, metrics, configuration, and the
//! per-task in-memory helpers (log followers, last status write) that only speed things up:
//! losing them on restart loses nothing the cluster does not hold.

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
    last_writes: Mutex<HashMap<String, Instant>>,
    /// The `resourceVersion` each task had after this replica's last status write to it, until
    /// the cache shows that version or a newer one ([`Context::cache_behind`]).
    written: Mutex<HashMap<String, String>>,
    /// When the first start note since each task's last write was decided
    /// ([`Context::start_note_wait`]).
    start_notes: Mutex<HashMap<String, Instant>>,
    /// UIDs of the tasks whose terminal status this replica wrote, until its cache shows it.
    ended: Mutex<std::collections::HashSet<String>>,
    /// The tasks this replica admitted past their tool's concurrency limit, until its cache
    /// shows their Job (admission decisions are made one at a time).
    pub admitted: Admitted,
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
            last_writes: Mutex::new(HashMap::new()),
            written: Mutex::default(),
            start_notes: Mutex::default(),
            ended: Mutex::default(),
            admitted: Admitted::default(),
        }
    }

    /// The same context, its log followers reading through `logs` (HTTP/2), if any.
    #[must_use]
    pub fn with_log_clients(mut self, logs: Option<crate::log_clients::LogClients>) -> Self {
        self.followers.logs = logs;
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
        lock(&self.last_writes).get(uid).map(Instant::elapsed)
    }

    /// Records a status write of the task with `uid` (or forgets it, once the task is done).
    pub fn record_write(&self, uid: &str, done: bool) {
        lock(&self.start_notes).remove(uid);
        let mut writes = lock(&self.last_writes);
        if done {
            writes.remove(uid);
            self.budget.forget(uid);
        } else {
            writes.insert(uid.to_owned(), Instant::now());
        }
    }

    /// How long the start note just decided for the task with `uid` must still stand before it
    /// is written: [`START_NOTE_SETTLE`] from the first start note since the task's last write
    /// (this one, when it is the first), then zero.
    pub fn start_note_wait(&self, uid: &str) -> Duration {
        let mut notes = lock(&self.start_notes);
        let since = *notes.entry(uid.to_owned()).or_insert_with(Instant::now);
        START_NOTE_SETTLE.saturating_sub(since.elapsed())
    }

    /// Records that a status write left the task with `uid` at `resource_version`.
    pub fn record_written(&self, uid: &str, resource_version: Option<String>) {
        let mut written = lock(&self.written);
        match resource_version {
            Some(rv) => written.insert(uid.to_owned(), rv),
            None => written.remove(uid),
        };
    }

    /// Whether the cached copy of the task with `uid`, at `cached` (its `resourceVersion`), is
    /// older than this replica's last status write to it: the watch has not brought the write
    /// back yet. A reconcile of that copy would decide from a status already replaced and write
    /// again what was written (its times moved on). Once the cache shows the written version or
    /// a newer one, or when either version cannot be compared, the write is forgotten.
    pub fn cache_behind(&self, uid: &str, cached: Option<&str>) -> bool {
        let mut written = lock(&self.written);
        let Some(rv) = written.get(uid) else {
            return false;
        };
        let older = cached.and_then(|c| crate::resource_version::compare(c, rv))
            == Some(std::cmp::Ordering::Less);
        if !older {
            written.remove(uid);
        }
        older
    }

    /// Records that this replica wrote the terminal status of the task with `uid`: a terminal
    /// status never changes, so until the cache shows it no reconcile need read the task again
    /// to learn it ([`Context::ended_here`]).
    pub fn record_ended(&self, uid: &str) {
        lock(&self.ended).insert(uid.to_owned());
    }

    /// Whether this replica wrote the terminal status of the task with `uid` (and its cache has
    /// not shown it yet); `seen`: the cache shows it now, forget it.
    pub fn ended_here(&self, uid: &str, seen: bool) -> bool {
        let mut ended = lock(&self.ended);
        match seen {
            true => ended.remove(uid),
            false => ended.contains(uid),
        }
    }

    /// Forgets the in-memory state (followers, last writes) of tasks `keep` rejects.
    pub fn retain_tasks(&self, keep: impl Fn(&str) -> bool) {
        self.followers.retain(&keep);
        lock(&self.last_writes).retain(|uid, _| keep(uid));
        lock(&self.written).retain(|uid, _| keep(uid));
        lock(&self.start_notes).retain(|uid, _| keep(uid));
        lock(&self.ended).retain(|uid| keep(uid));
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
