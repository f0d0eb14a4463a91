//! The kube-backed [`ToolCatalog`]: a watch over `McpTool` in one namespace that republishes an
//! immutable [`CatalogSnapshot`] of the Ready tools after every change.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use futures::StreamExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use mcp_task_operator_crds::McpTool;

use crate::tools::{CatalogSnapshot, ToolCatalog};

/// Ready tools of one namespace.
pub struct KubeToolCatalog {
    snapshot: RwLock<Arc<CatalogSnapshot>>,
    synced: AtomicBool,
    /// Marked whenever a rebuild changes what `tools/list` shows.
    list_changed: tokio::sync::watch::Sender<()>,
}

impl KubeToolCatalog {
    /// The catalog, and the future that drives its watch (spawn it).
    pub fn new(
        client: Client,
        namespace: &str,
    ) -> (Arc<Self>, impl Future<Output = ()> + Send + use<>) {
        // Through DeserializeGuard, one malformed object is skipped instead of breaking the
        // watch for every tool.
        let api: Api<DeserializeGuard<McpTool>> = Api::namespaced(client, namespace);
        let (cache, writer) = reflector::store();
        let catalog = Arc::new(Self {
            snapshot: RwLock::default(),
            synced: AtomicBool::new(false),
            list_changed: tokio::sync::watch::Sender::new(()),
        });
        let driver = {
            let catalog = catalog.clone();
            async move {
                watcher(api, watcher::Config::default())
                    .default_backoff()
                    .reflect(writer)
                    .for_each(|event| {
                        match event {
                            // Rebuild once the initial list is complete, not per listed object.
                            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => {}
                            Ok(watcher::Event::InitDone) => {
                                catalog.rebuild(&cache);
                                catalog.synced.store(true, Ordering::Release);
                            }
                            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
                                catalog.rebuild(&cache);
                            }
                            Err(error) => {
                                tracing::warn!(error = %error, "McpTool watch failed; retrying");
                            }
                        }
                        futures::future::ready(())
                    })
                    .await;
            }
        };
        (catalog, driver)
    }

    /// Replaces the snapshot with the Ready tools now in `cache`. The reflector has applied
    /// the event before the stream yields it, so the store is current here.
    fn rebuild(&self, cache: &Store<DeserializeGuard<McpTool>>) {
        let tools = cache.state();
        let valid = tools.iter().filter_map(|guard| match &guard.0 {
            Ok(tool) => Some(tool),
            Err(invalid) => {
                tracing::warn!(error = %invalid, "skipping malformed McpTool");
                None
            }
        });
        let snapshot = Arc::new(CatalogSnapshot::from_tools(valid));
        let old = std::mem::replace(
            &mut *self
                .snapshot
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            snapshot.clone(),
        );
        // Status-only updates and changes of fields tools/list does not show stay silent.
        if !old.lists_like(&snapshot) {
            self.list_changed.send_replace(());
        }
    }
}

impl ToolCatalog for KubeToolCatalog {
    fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    fn list_changes(&self) -> tokio::sync::watch::Receiver<()> {
        self.list_changed.subscribe()
    }
}
