//! The kube-backed [`TaskStore`]: a reflector watch cache over `McpTask` in one namespace,
//! direct reads on a cache miss, merge patches for writes, and an overlay of this replica's own
//! writes so that its next read sees them before the watch does.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTask};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::{StoreError, TaskStore};

/// How long an own write is preferred over an older cache entry; by then the watch has
/// delivered it (or the object is gone).
const OVERLAY_TTL: Duration = Duration::from_secs(60);
/// Changes buffered for slow subscribers before they lag (and re-read).
const CHANGE_BUFFER: usize = 1024;

/// Tasks in one namespace, read through the watch cache.
pub struct KubeTaskStore {
    api: Api<McpTask>,
    namespace: String,
    /// Guarded, so one malformed object is skipped instead of stalling the whole watch.
    cache: Store<DeserializeGuard<McpTask>>,
    /// Objects this replica wrote, with when, until the watch catches up.
    overlay: Mutex<HashMap<String, (Instant, Arc<McpTask>)>>,
    changes: broadcast::Sender<Arc<McpTask>>,
    synced: AtomicBool,
}

impl KubeTaskStore {
    /// The store, and the future that drives its watch (spawn it; it runs until the process
    /// ends, retrying with backoff).
    pub fn new(
        client: Client,
        namespace: &str,
    ) -> (Arc<Self>, impl Future<Output = ()> + Send + use<>) {
        let api = Api::namespaced(client.clone(), namespace);
        let guarded: Api<DeserializeGuard<McpTask>> = Api::namespaced(client, namespace);
        let (cache, writer) = reflector::store();
        let store = Arc::new(Self {
            api,
            namespace: namespace.to_owned(),
            cache,
            overlay: Mutex::default(),
            changes: broadcast::channel(CHANGE_BUFFER).0,
            synced: AtomicBool::new(false),
        });
        let driver = {
            let store = store.clone();
            async move {
                let ready = {
                    let store = store.clone();
                    async move {
                        if store.cache.wait_until_ready().await.is_ok() {
                            store.synced.store(true, Ordering::Release);
                        }
                    }
                };
                let watch = watcher(guarded, watcher::Config::default())
                    .default_backoff()
                    .reflect(writer)
                    .applied_objects()
                    .for_each(|event| {
                        match event {
                            Ok(DeserializeGuard(Ok(task))) => store.observe(Arc::new(task)),
                            Ok(DeserializeGuard(Err(invalid))) => {
                                tracing::warn!(error = %invalid, "skipping malformed McpTask");
                            }
                            Err(error) => {
                                tracing::warn!(error = %error, "McpTask watch failed; retrying")
                            }
                        }
                        futures::future::ready(())
                    });
                futures::join!(ready, watch);
            }
        };
        (store, driver)
    }

    /// A watch event: drop the overlay entry it supersedes and tell subscribers.
    fn observe(&self, task: Arc<McpTask>) {
        {
            let mut overlay = self.overlay.lock().unwrap_or_else(PoisonError::into_inner);
            let name = task.name_any();
            if overlay
                .get(&name)
                .is_some_and(|(_, own)| !is_newer(own, &task))
            {
                overlay.remove(&name);
            }
            overlay.retain(|_, (at, _)| at.elapsed() < OVERLAY_TTL);
        }
        let _ = self.changes.send(task);
    }

    fn remember(&self, task: McpTask) -> Arc<McpTask> {
        let task = Arc::new(task);
        self.overlay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task.name_any(), (Instant::now(), task.clone()));
        let _ = self.changes.send(task.clone());
        task
    }

    fn cached(&self, id: &str) -> Option<Arc<McpTask>> {
        // NB: the guard holds the object by value, so a cache hit costs one clone.
        let cached = self
            .cache
            .get(&ObjectRef::new(id).within(&self.namespace))
            .and_then(|guard| guard.0.as_ref().ok().cloned())
            .map(Arc::new);
        let own = self
            .overlay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .filter(|(at, _)| at.elapsed() < OVERLAY_TTL)
            .map(|(_, task)| task.clone());
        match (cached, own) {
            (Some(cached), Some(own)) if is_newer(&own, &cached) => Some(own),
            (Some(cached), _) => Some(cached),
            (None, own) => own,
        }
    }

    async fn patch(&self, id: &str, patch: Value) -> Result<(), StoreError> {
        let params = PatchParams::default();
        match self.api.patch(id, &params, &Patch::Merge(&patch)).await {
            Ok(task) => {
                self.remember(task);
                Ok(())
            }
            Err(source) => Err(StoreError::Api {
                operation: "patch",
                name: id.to_owned(),
                source,
            }),
        }
    }
}

/// Whether `a` is a later version than `b`. Resource versions are opaque, but the API server
/// hands out etcd revisions, which grow; anything unparsable counts as not newer.
fn is_newer(a: &McpTask, b: &McpTask) -> bool {
    let version = |t: &McpTask| t.resource_version().and_then(|v| v.parse::<u64>().ok());
    matches!((version(a), version(b)), (Some(a), Some(b)) if a > b)
}

impl TaskStore for KubeTaskStore {
    fn create(&self, task: McpTask) -> BoxFuture<'_, Result<Arc<McpTask>, StoreError>> {
        Box::pin(async move {
            let stored = self
                .api
                .create(&PostParams::default(), &task)
                .await
                .map_err(|source| StoreError::Api {
                    operation: "create",
                    name: task.name_any(),
                    source,
                })?;
            Ok(self.remember(stored))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
        Box::pin(async move {
            if let Some(task) = self.cached(id) {
                return Ok(Some(task));
            }
            // A task created a moment ago on another replica may not be in this cache yet.
            let task = self
                .api
                .get_opt(id)
                .await
                .map_err(|source| StoreError::Api {
                    operation: "get",
                    name: id.to_owned(),
                    source,
                })?;
            Ok(task.map(Arc::new))
        })
    }

    fn merge_input_responses<'a>(
        &'a self,
        id: &'a str,
        responses: BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        // A merge patch adds these keys and leaves the other answers alone.
        Box::pin(self.patch(id, json!({ "spec": { "inputResponses": responses } })))
    }

    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        at: Timestamp,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let patch = json!({
            "metadata": { "annotations": { CANCEL_REQUESTED_ANNOTATION: mcp_task_operator_crds::wire::format_time(at) } }
        });
        Box::pin(self.patch(id, patch))
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<McpTask>> {
        self.changes.subscribe()
    }

    fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests;
