//! Task and tool state behind traits, so the MCP handler never talks to Kubernetes directly.
//!
//! Production uses the kube-backed implementations (watch caches over `McpTask` and `McpTool`
//! in one namespace); HTTP tests use the in-memory double in [`memory`].

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_crds::budget::caller_bytes;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio::sync::broadcast;

pub mod kube;
pub mod kube_tools;
pub mod memory;
pub mod negative;
pub mod tombstones;

/// Whether `task` is deleted or being deleted: its `metadata.deletionTimestamp` is set. The
/// store publishes a deleted task once more, with that field set ([`TaskStore::subscribe`]),
/// and serves it no more; the front end answers such a task as not found.
pub fn is_deleted(task: &McpTask) -> bool {
    task.metadata.deletion_timestamp.is_some()
}

/// The last state of a task that is gone, marked deleted (its `deletionTimestamp` kept when it
/// has one, else now): what a store publishes once when it drops a task.
pub fn tombstone(last: &McpTask) -> Arc<McpTask> {
    let mut tombstone = last.clone();
    tombstone
        .metadata
        .deletion_timestamp
        .get_or_insert_with(|| Time(Timestamp::now()));
    Arc::new(tombstone)
}

/// Where a [`TaskStore::get`] found its answer.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LookupLabels {
    /// `cache` (the watch cache or this replica's own writes), `negative_cache` (an ID read
    /// as missing a moment ago), `api` (a read from the API server on a cache miss) or `fresh`
    /// (a read from the API server confirming a cached task that is not terminal, see
    /// [`TaskStore::get_current`]).
    pub source: &'static str,
}

/// Task lookups by where they were answered: `mcp_frontend_task_lookups_total{source}`. The
/// `api` and `fresh` counts are the API server reads requests caused.
#[derive(Clone, Debug)]
pub struct TaskLookups {
    family: Family<LookupLabels, Counter>,
    /// The `cache` series, resolved once: every cached poll counts into it.
    cache: Counter,
}

impl Default for TaskLookups {
    fn default() -> Self {
        let family = Family::<LookupLabels, Counter>::default();
        let cache = family
            .get_or_create(&LookupLabels { source: "cache" })
            .clone();
        Self { family, cache }
    }
}

impl TaskLookups {
    /// Counts one lookup answered from `source`.
    pub fn record(&self, source: &'static str) {
        if source == "cache" {
            self.cache.inc();
        } else {
            self.family.get_or_create(&LookupLabels { source }).inc();
        }
    }

    /// Lookups answered from `source` so far.
    pub fn count(&self, source: &'static str) -> u64 {
        self.family.get_or_create(&LookupLabels { source }).get()
    }

    /// Registers the counter under the `mcp_frontend` prefix.
    pub fn register(&self, registry: &mut Registry) {
        registry.sub_registry_with_prefix("mcp_frontend").register(
            "task_lookups",
            "Task lookups by tasks/get, tasks/update, tasks/cancel and listen, by where they were answered",
            self.family.clone(),
        );
    }
}

/// Why the task store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A call to the Kubernetes API server failed.
    #[error("failed to {operation} McpTask {name}")]
    Api {
        /// What was attempted (`create`, `get`, `patch`).
        operation: &'static str,
        /// The task ID.
        name: String,
        /// The client error.
        #[source]
        source: ::kube::Error,
    },
    /// A call to the Kubernetes API server got no answer in time (the server or the network
    /// to it is down); the request may be retried, on this replica or another.
    #[error(
        "the Kubernetes API server did not answer within {seconds} s to {operation} McpTask {name}"
    )]
    Timeout {
        /// What was attempted (`create`, `get`, `patch`).
        operation: &'static str,
        /// The task ID.
        name: String,
        /// The limit that passed.
        seconds: u64,
    },
    /// The store refused the call for a reason of its own (used by test doubles).
    #[error("task store unavailable during {operation}")]
    Unavailable {
        /// What was attempted.
        operation: &'static str,
    },
}

/// Where tasks live. Every method is idempotent; implementations make a replica's own writes
/// visible to its next [`TaskStore::get`].
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task and returns it as stored. Once this returns, [`TaskStore::get`] for
    /// its name succeeds on every replica (the MCP durability rule for `CreateTaskResult`).
    fn create(&self, task: McpTask) -> BoxFuture<'_, Result<Arc<McpTask>, StoreError>>;

    /// The task named `id`, from the watch cache, or read directly on a cache miss unless the
    /// same ID was read as missing a moment ago ([`negative`]).
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>>;

    /// The task named `id`, never older than a state any replica served before this call
    /// began: a terminal (or deleted) task as [`TaskStore::get`] finds it, since a terminal
    /// state never changes; any other cached state confirmed by a read from the API server
    /// (a quorum read), since another replica's watch may be ahead of this one's. The read is
    /// counted under the lookup source `fresh`.
    fn get_current<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
        self.get(id)
    }

    /// The `metadata.resourceVersion` of the state [`TaskStore::get`] would find for `id` in
    /// this replica's cache, without copying the task; `None` when it is not cached (or the
    /// store keeps no versions). The `tasks/get` fast path keys its answers by it.
    fn cached_version(&self, id: &str) -> Option<String> {
        let _ = id;
        None
    }

    /// Merges `responses` into `spec.inputResponses` (the caller has filtered them to
    /// outstanding keys).
    fn merge_input_responses<'a>(
        &'a self,
        id: &'a str,
        responses: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Sets the cancel annotation `mcptasks.io/cancel-requested` to `at` (RFC 3339, whole
    /// seconds), replacing an earlier value: `tasks/cancel` checks `is_cancel_requested` first, so
    /// that a client's first cancel time is the one kept.
    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        at: Timestamp,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Every later change to any task, as the watch sees it. A deletion is published as the
    /// task's last state with `metadata.deletionTimestamp` set ([`is_deleted`]), also when the
    /// watch only learns of it by listing afresh. Lagging receivers lose old events, so
    /// consumers re-read with [`TaskStore::get`] after a lag (a deleted task reads as `None`).
    fn subscribe(&self) -> broadcast::Receiver<Arc<McpTask>>;

    /// Whether the watch cache has completed its initial list.
    fn is_synced(&self) -> bool;

    /// What `owner` holds: its tasks not yet terminal, all its stored tasks, and their bytes
    /// ([`caller_bytes`]), from the watch cache and this replica's own writes (a task this
    /// replica created counts as soon as its create returned).
    fn held(&self, owner: &str) -> Held;

    /// Where lookups were answered, for `/metrics`.
    fn lookups(&self) -> &TaskLookups;
}

/// What one caller holds in the task store ([`TaskStore::held`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Tasks not yet completed, failed or cancelled.
    pub active: usize,
    /// Tasks stored, finished ones included (until their TTL deletes them).
    pub stored: usize,
    /// Bytes of their client inputs and results ([`caller_bytes`]).
    pub bytes: usize,
}

impl Held {
    /// Adds one task.
    pub fn count(&mut self, task: &McpTask) {
        self.stored += 1;
        self.active += usize::from(!task.is_terminal());
        self.bytes = self.bytes.saturating_add(caller_bytes(task));
    }
}
