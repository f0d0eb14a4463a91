//! The kube-backed [`TaskStore`]: a reflector watch cache over `McpTask` in one namespace,
//! direct reads on a cache miss, merge patches for writes, and an overlay of this replica's own
//! writes so that its next read sees them before the watch does. Every API call is bounded by a
//! timeout, and the watch starts afresh (a new list) when the API server is reachable again
//! after an outage ([`crate::apihealth`]).
//!
//! Deletions: a task the watch reports deleted, or that a fresh list no longer holds, leaves the
//! cache and the overlay at once, is published to subscribers with its deletion marked
//! ([`crate::store::is_deleted`]), and an own write that raced the deletion is not kept
//! ([`super::tombstones`]): nothing deleted is served again.

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

use super::negative::NegativeCache;
use super::tombstones::Tombstones;
use super::{Held, StoreError, TaskLookups, TaskStore};
use crate::apihealth::ApiHealth;

/// How long an own write is preferred over an older cache entry; by then the watch has
/// delivered it (or the object is gone).
const OVERLAY_TTL: Duration = Duration::from_secs(60);
/// How often expired overlay entries are dropped (readers skip them by age anyway): a scan on
/// every watch event cost a tenth of the front end's CPU with thousands of recent own writes.
const OVERLAY_PRUNE_EVERY: Duration = Duration::from_secs(1);
/// Changes buffered for slow subscribers before they lag (and re-read).
const CHANGE_BUFFER: usize = 1024;
/// Limit of one API call when none is configured (see [`KubeTaskStore::watched`]).
pub const DEFAULT_API_TIMEOUT: Duration = Duration::from_secs(10);

/// A fresh list under way: when it began and what the cache held before it.
type Relist = (Instant, Vec<Arc<DeserializeGuard<McpTask>>>);

/// Tasks in one namespace, read through the watch cache.
pub struct KubeTaskStore {
    api: Api<McpTask>,
    namespace: String,
    /// Guarded, so one malformed object is skipped instead of stalling the whole watch.
    cache: Store<DeserializeGuard<McpTask>>,
    /// Objects this replica wrote, with when, until the watch catches up.
    overlay: Mutex<HashMap<String, (Instant, Arc<McpTask>)>>,
    /// When expired overlay entries were last dropped.
    overlay_pruned: Mutex<Instant>,
    changes: broadcast::Sender<Arc<McpTask>>,
    synced: AtomicBool,
    /// Limit of each create, get and patch.
    api_timeout: Duration,
    /// IDs a direct read found missing a moment ago.
    misses: NegativeCache,
    lookups: TaskLookups,
    /// Tasks seen deleted, so that an own write racing the deletion is not kept.
    tombstones: Tombstones,
    /// While the watch lists afresh: when the list began and what the cache held before it.
    relist: Mutex<Option<Relist>>,
}

impl KubeTaskStore {
    /// The store, and the future that drives its watch (spawn it; it runs until the process
    /// ends, retrying with backoff).
    pub fn new(
        client: Client,
        namespace: &str,
    ) -> (Arc<Self>, impl Future<Output = ()> + Send + use<>) {
        // Nobody probes: the API server stays reachable and the watch is never restarted.
        let health = Arc::new(ApiHealth::default());
        Self::watched(client, namespace, health, DEFAULT_API_TIMEOUT)
    }

    /// [`KubeTaskStore::new`] whose watch starts afresh each time `health` turns reachable
    /// again (the store counts as unsynced until the new list is complete) and tells `health`
    /// of each event it hears, and whose API calls each give up after `api_timeout`.
    pub fn watched(
        client: Client,
        namespace: &str,
        health: Arc<ApiHealth>,
        api_timeout: Duration,
    ) -> (Arc<Self>, impl Future<Output = ()> + Send + use<>) {
        let mut reachable = health.subscribe();
        let guarded: Api<DeserializeGuard<McpTask>> = Api::namespaced(client.clone(), namespace);
        let (cache, mut writer) = reflector::store();
        let store = Arc::new(Self::over(client, namespace, cache, api_timeout));
        let driver = {
            let store = store.clone();
            async move {
                loop {
                    // managedFields are never served: dropping them halves what a cached task
                    // costs to hold and to clone on every tasks/get (see docs/BENCHMARKS.md).
                    let stream = watcher(guarded.clone(), watcher::Config::default())
                        .default_backoff()
                        .modify(|guard| {
                            if let Ok(task) = guard.0.as_mut() {
                                task.metadata.managed_fields = None;
                            }
                        });
                    let mut stream = std::pin::pin!(stream);
                    reachable.mark_unchanged();
                    loop {
                        tokio::select! {
                            event = stream.next() => match event {
                                Some(event) => {
                                    if event.is_ok() {
                                        health.heard();
                                    }
                                    store.apply(&mut writer, event);
                                }
                                None => break,
                            },
                            Ok(()) = reachable.changed() => {
                                if *reachable.borrow_and_update() {
                                    tracing::info!("restarting the McpTask watch after an API server outage");
                                    store.synced.store(false, Ordering::Release);
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        };
        (store, driver)
    }

    /// The store over `cache`, which the caller's reflector writer fills (see [`Self::apply`]).
    fn over(
        client: Client,
        namespace: &str,
        cache: Store<DeserializeGuard<McpTask>>,
        api_timeout: Duration,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            cache,
            overlay: Mutex::default(),
            overlay_pruned: Mutex::new(Instant::now()),
            changes: broadcast::channel(CHANGE_BUFFER).0,
            synced: AtomicBool::new(false),
            api_timeout,
            misses: NegativeCache::default(),
            lookups: TaskLookups::default(),
            tombstones: Tombstones::new(OVERLAY_TTL),
            relist: Mutex::default(),
        }
    }

    /// One watch event: into the cache (the reflector's writer), then to subscribers. NB: this
    /// is what `WatchStreamExt::reflect` does, by hand because the writer must outlive each
    /// watch stream: the driver drops the stream and starts a new one after an API server
    /// outage, and `reflect` would take the writer with it.
    fn apply(
        &self,
        writer: &mut reflector::store::Writer<DeserializeGuard<McpTask>>,
        event: Result<watcher::Event<DeserializeGuard<McpTask>>, watcher::Error>,
    ) {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(error = %error, "McpTask watch failed; retrying");
                return;
            }
        };
        writer.apply_watcher_event(&event);
        match event {
            watcher::Event::Apply(DeserializeGuard(Ok(task)))
            | watcher::Event::InitApply(DeserializeGuard(Ok(task))) => self.observe(Arc::new(task)),
            watcher::Event::Apply(DeserializeGuard(Err(invalid)))
            | watcher::Event::InitApply(DeserializeGuard(Err(invalid))) => {
                tracing::warn!(error = %invalid, "skipping malformed McpTask");
            }
            watcher::Event::Init => {
                *self.relist.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((Instant::now(), self.cache.state()));
            }
            watcher::Event::InitDone => {
                self.end_relist();
                self.synced.store(true, Ordering::Release);
            }
            // A deleted task no longer counts, even if this replica wrote it a moment ago.
            watcher::Event::Delete(DeserializeGuard(Ok(task))) => {
                let (name, uid) = (task.name_any(), task.uid());
                self.deleted(&name, uid, Some(Arc::new(task)));
            }
            watcher::Event::Delete(DeserializeGuard(Err(invalid))) => {
                let name = invalid.metadata.name.clone().unwrap_or_default();
                self.deleted(&name, invalid.metadata.uid.clone(), None);
            }
        }
    }

    /// Runs one API call under the store's timeout; both failures name `operation` and `name`.
    async fn call<T>(
        &self,
        operation: &'static str,
        name: &str,
        request: impl Future<Output = Result<T, ::kube::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.api_timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(StoreError::Api {
                operation,
                name: name.to_owned(),
                source,
            }),
            Err(_) => Err(StoreError::Timeout {
                operation,
                name: name.to_owned(),
                seconds: self.api_timeout.as_secs(),
            }),
        }
    }

    /// A watch event: drop the overlay entry it supersedes and tell subscribers.
    fn observe(&self, task: Arc<McpTask>) {
        let now = Instant::now();
        let prune = {
            let mut pruned = self
                .overlay_pruned
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let due = now.saturating_duration_since(*pruned) >= OVERLAY_PRUNE_EVERY;
            if due {
                *pruned = now;
            }
            due
        };
        {
            let mut overlay = self.overlay.lock().unwrap_or_else(PoisonError::into_inner);
            let name = task.name_any();
            if overlay
                .get(&name)
                .is_some_and(|(_, own)| !is_newer(own, &task))
            {
                overlay.remove(&name);
            }
            if prune {
                overlay.retain(|_, (at, _)| now.saturating_duration_since(*at) < OVERLAY_TTL);
            }
        }
        // The watch shows the object: it exists (again, under a new UID, if it was deleted).
        self.tombstones.remove(&task.name_any());
        self.misses.remove(&task.name_any());
        let _ = self.changes.send(task);
    }

    /// An own write: kept in the overlay and published.
    fn remember(&self, task: McpTask) -> Arc<McpTask> {
        let task = Arc::new(task);
        if self.keep(&task) {
            let _ = self.changes.send(task.clone());
        }
        task
    }

    /// Puts `task`, as read or written through the API server, in the overlay, unless the
    /// watch reported it deleted since (a write or read whose answer arrived after the delete
    /// event: the object is gone, so it is not kept). Whether it was kept.
    fn keep(&self, task: &Arc<McpTask>) -> bool {
        if self
            .tombstones
            .hides(&task.name_any(), task.uid().as_deref(), Instant::now())
        {
            return false;
        }
        // The watch delivered this version (or a newer one) already, as it may before a
        // create's own answer arrives: the cache serves it, and an overlay entry would only sit
        // out its TTL.
        let name = task.name_any();
        let superseded = self
            .cache
            .get(&ObjectRef::new(&name).within(&self.namespace))
            .is_some_and(|guard| guard.0.as_ref().is_ok_and(|cached| !is_newer(task, cached)));
        if !superseded {
            self.overlay
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name, (Instant::now(), task.clone()));
        }
        self.misses.remove(&task.name_any());
        true
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

    /// The version [`Self::cached`] would return, read in place.
    fn cached_version(&self, id: &str) -> Option<String> {
        let guard = self.cache.get(&ObjectRef::new(id).within(&self.namespace));
        let cached = guard.as_ref().and_then(|guard| guard.0.as_ref().ok());
        let overlay = self.overlay.lock().unwrap_or_else(PoisonError::into_inner);
        let own = overlay
            .get(id)
            .filter(|(at, _)| at.elapsed() < OVERLAY_TTL)
            .map(|(_, task)| task.as_ref());
        let newest = match (cached, own) {
            (Some(cached), Some(own)) if is_newer(own, cached) => own,
            (Some(cached), _) => cached,
            (None, Some(own)) => own,
            (None, None) => return None,
        };
        newest.resource_version()
    }

    async fn patch(&self, id: &str, patch: Value) -> Result<(), StoreError> {
        let params = PatchParams::default();
        let task = self
            .call(
                "patch",
                id,
                self.api.patch(id, &params, &Patch::Merge(&patch)),
            )
            .await?;
        self.remember(task);
        Ok(())
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
            let name = task.name_any();
            let stored = self
                .call(
                    "create",
                    &name,
                    self.api.create(&PostParams::default(), &task),
                )
                .await?;
            Ok(self.remember(stored))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
        Box::pin(async move {
            if let Some(task) = self.cached(id) {
                self.lookups.record("cache");
                return Ok(Some(task));
            }
            if self.misses.contains(id, Instant::now()) {
                self.lookups.record("negative_cache");
                return Ok(None);
            }
            // A task created a moment ago on another replica may not be in this cache yet.
            self.lookups.record("api");
            let task = self.call("get", id, self.api.get_opt(id)).await?;
            if task.is_none() {
                // The read is a quorum read, so 404 means "did not exist just now". Record it,
                // then look again: a watch event that arrived since the read removed nothing
                // yet, and would otherwise leave a stale miss (see [`super::negative`]).
                self.misses.insert(id, Instant::now());
                if let Some(seen) = self.cached(id) {
                    self.misses.remove(id);
                    return Ok(Some(seen));
                }
            }
            Ok(task.map(Arc::new))
        })
    }

    fn get_current<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
        Box::pin(async move {
            let Some(cached) = self.cached(id) else {
                return self.get(id).await;
            };
            if cached.is_terminal() || super::is_deleted(&cached) {
                self.lookups.record("cache");
                return Ok(Some(cached));
            }
            self.lookups.record("fresh");
            let Some(read) = self.call("get", id, self.api.get_opt(id)).await? else {
                // Deleted since the cache saw it: its delete event is on the way.
                return Ok(None);
            };
            let read = Arc::new(read);
            // A watch event may have brought a newer state while the read was under way.
            let newest = match self.cached(id) {
                Some(seen) if is_newer(&seen, &read) => seen,
                _ => read,
            };
            if is_newer(&newest, &cached) {
                // This replica's next reads (listen notifications among them) start from it.
                self.keep(&newest);
            }
            Ok(Some(newest))
        })
    }

    fn cached_version(&self, id: &str) -> Option<String> {
        KubeTaskStore::cached_version(self, id)
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

    fn held(&self, owner: &str) -> Held {
        // This replica's own writes of the owner's tasks, newest first where both exist.
        let mut own: HashMap<String, Arc<McpTask>> = self
            .overlay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, (at, task))| at.elapsed() < OVERLAY_TTL && task.spec.owner == owner)
            .map(|(name, (_, task))| (name.clone(), task.clone()))
            .collect();
        let mut held = Held::default();
        for guard in self.cache.state() {
            let Ok(task) = &guard.0 else { continue };
            if task.spec.owner != owner {
                continue;
            }
            match own.remove(task.name_any().as_str()) {
                Some(mine) if is_newer(&mine, task) => held.count(&mine),
                _ => held.count(task),
            }
        }
        // Creates the watch has not delivered yet.
        for task in own.values() {
            held.count(task);
        }
        held
    }

    fn lookups(&self) -> &TaskLookups {
        &self.lookups
    }
}

mod deleted;
#[cfg(test)]
mod deletion_tests;
#[cfg(test)]
mod tests;
