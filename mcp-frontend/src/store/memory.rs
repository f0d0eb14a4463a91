//! In-memory [`TaskStore`]: a unit-test double standing in for the API server and the
//! operator; also the store of `mto-bench`'s in-process figures, which leave the API server out
//! on purpose. The front end's binary never uses it. Tests move tasks through their statuses with [`MemoryStore::update`]. A lookup of
//! a missing ID counts as an API read and is remembered in a [`NegativeCache`], as in
//! production, so tests can count the reads a request would cost.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTask, RawJson};
use serde_json::Value;
use tokio::sync::broadcast;

use super::negative::NegativeCache;
use super::{Held, StoreError, TaskLookups, TaskStore};

/// Tasks in a map, changes on a broadcast channel.
pub struct MemoryStore {
    tasks: Mutex<HashMap<String, Arc<McpTask>>>,
    changes: broadcast::Sender<Arc<McpTask>>,
    misses: NegativeCache,
    lookups: TaskLookups,
    /// How long a create takes, in milliseconds, as a round trip to the API server does.
    create_latency_ms: AtomicU64,
    /// The last `metadata.resourceVersion` given out (each stored state gets the next).
    version: AtomicU64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            tasks: Mutex::default(),
            changes: broadcast::channel(64).0,
            misses: NegativeCache::default(),
            lookups: TaskLookups::default(),
            create_latency_ms: AtomicU64::new(0),
            version: AtomicU64::new(0),
        }
    }
}

impl MemoryStore {
    /// Applies `change` to the stored task `id` (as the operator would) and publishes it.
    pub fn update(&self, id: &str, change: impl FnOnce(&mut McpTask)) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(current) = tasks.get(id) else {
            return;
        };
        let mut task = McpTask::clone(current);
        change(&mut task);
        self.stamp(&mut task);
        let task = Arc::new(task);
        tasks.insert(id.to_owned(), task.clone());
        drop(tasks);
        let _ = self.changes.send(task);
    }

    /// Stores `task` as is, replacing any task of the same name (as the watch would see it).
    pub fn insert(&self, mut task: McpTask) {
        self.stamp(&mut task);
        let task = Arc::new(task);
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task.task_id().to_owned(), task.clone());
        self.misses.remove(task.task_id());
        let _ = self.changes.send(task);
    }

    /// Deletes the task `id` as the API server would, seen by the watch: gone from the store,
    /// remembered as missing, and published once more marked deleted
    /// ([`crate::store::is_deleted`]).
    pub fn delete(&self, id: &str) {
        let removed = self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        self.misses.insert(id, Instant::now());
        if let Some(last) = removed {
            let _ = self.changes.send(super::tombstone(&last));
        }
    }

    /// Gives `task` the next resource version, as the API server does on every write.
    fn stamp(&self, task: &mut McpTask) {
        let version = self.version.fetch_add(1, Ordering::Relaxed) + 1;
        task.metadata.resource_version = Some(version.to_string());
    }

    /// Makes each later create take `latency` before the task is stored and returned.
    pub fn set_create_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.create_latency_ms.store(ms, Ordering::Relaxed);
    }

    /// API reads lookups have cost so far.
    pub fn api_reads(&self) -> u64 {
        self.lookups.count("api")
    }

    /// The stored task `id`, synchronously.
    pub fn peek(&self, id: &str) -> Option<Arc<McpTask>> {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// The ID of some stored task (tests that create exactly one).
    pub fn peek_any(&self) -> Option<String> {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .next()
            .cloned()
    }

    /// Number of stored tasks.
    pub fn count(&self) -> usize {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl TaskStore for MemoryStore {
    fn create(&self, mut task: McpTask) -> BoxFuture<'_, Result<Arc<McpTask>, StoreError>> {
        task.metadata.creation_timestamp = Some(Time(Timestamp::now()));
        let latency = Duration::from_millis(self.create_latency_ms.load(Ordering::Relaxed));
        Box::pin(async move {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            let task = Arc::new(task);
            self.insert(McpTask::clone(&task));
            Ok(task)
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
        let task = self.peek(id);
        if task.is_some() {
            self.lookups.record("cache");
        } else if self.misses.contains(id, Instant::now()) {
            self.lookups.record("negative_cache");
        } else {
            self.lookups.record("api");
            self.misses.insert(id, Instant::now());
        }
        Box::pin(async move { Ok(task) })
    }

    fn cached_version(&self, id: &str) -> Option<String> {
        self.peek(id)?.metadata.resource_version.clone()
    }

    fn merge_input_responses<'a>(
        &'a self,
        id: &'a str,
        responses: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.update(id, |task| {
            task.spec
                .input_responses
                .get_or_insert_default()
                .extend(responses.into_iter().map(|(k, v)| (k, RawJson::from(v))));
        });
        Box::pin(async { Ok(()) })
    }

    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        at: Timestamp,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        // As the Kubernetes store's merge patch does: the value replaced, in the wire's format.
        self.update(id, |task| {
            task.metadata.annotations.get_or_insert_default().insert(
                CANCEL_REQUESTED_ANNOTATION.to_owned(),
                mcp_task_operator_crds::wire::format_time(at),
            );
        });
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<McpTask>> {
        self.changes.subscribe()
    }

    fn is_synced(&self) -> bool {
        true
    }

    fn held(&self, owner: &str) -> Held {
        let mut held = Held::default();
        let tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        for task in tasks.values().filter(|task| task.spec.owner == owner) {
            held.count(task);
        }
        held
    }

    fn lookups(&self) -> &TaskLookups {
        &self.lookups
    }
}
