//! State shared between the controllers and the HTTP server: the metrics registry, the
//! readiness flag and what the liveness probe checks. Cheap to clone; everything sits behind `Arc`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use prometheus_client::registry::Registry;

use crate::liveness::Liveness;
use crate::metrics::Metrics;

/// Shared operator state.
#[derive(Clone, Debug)]
pub struct State {
    registry: Arc<Registry>,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
    liveness: Arc<Liveness>,
}

impl Default for State {
    fn default() -> Self {
        Self::new(Liveness::default())
    }
}

impl State {
    /// Fresh state whose liveness probe checks `liveness`.
    pub fn new(liveness: Liveness) -> Self {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        Self {
            registry: Arc::new(registry),
            metrics: Arc::new(metrics),
            ready: Arc::new(AtomicBool::new(false)),
            liveness: Arc::new(liveness),
        }
    }

    /// The metrics registry, for rendering.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The operator's metrics.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// Whether startup checks passed and the controllers run.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// What the liveness probe checks.
    pub fn liveness(&self) -> Arc<Liveness> {
        Arc::clone(&self.liveness)
    }

    /// Marks the operator ready (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }
}
