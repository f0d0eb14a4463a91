//! In-memory [`TaskStore`]: a unit-test double standing in for the API server and the
//! operator. Tests move tasks through their statuses with [`MemoryStore::update`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTask};
use serde_json::Value;
use tokio::sync::broadcast;

use super::{StoreError, TaskStore};

/// Tasks in a map, changes on a broadcast channel.
pub struct MemoryStore {
    tasks: Mutex<HashMap<String, Arc<McpTask>>>,
    changes: broadcast::Sender<Arc<McpTask>>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            tasks: Mutex::default(),
            changes: broadcast::channel(64).0,
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
        let task = Arc::new(task);
        tasks.insert(id.to_owned(), task.clone());
        drop(tasks);
        let _ = self.changes.send(task);
    }

    /// Stores `task` as is, replacing any task of the same name.
    pub fn insert(&self, task: McpTask) {
        let task = Arc::new(task);
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task.task_id().to_owned(), task.clone());
        let _ = self.changes.send(task);
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
        let task = Arc::new(task);
        self.insert(McpTask::clone(&task));
        Box::pin(async move { Ok(task) })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
        let task = self.peek(id);
        Box::pin(async move { Ok(task) })
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
                .extend(responses);
        });
        Box::pin(async { Ok(()) })
    }

    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        at: Timestamp,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.update(id, |task| {
            task.metadata
                .annotations
                .get_or_insert_default()
                .entry(CANCEL_REQUESTED_ANNOTATION.to_owned())
                .or_insert_with(|| at.to_string());
        });
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<McpTask>> {
        self.changes.subscribe()
    }

    fn is_synced(&self) -> bool {
        true
    }
}
