//! Whether this replica reaches the Kubernetes API server. A probe reads one `McpTask` name
//! every few seconds; its verdict feeds `/readyz`, the fast refusal of `/mcp` requests while the
//! server is out of reach (instead of answering from a cache that no longer moves, or hanging on
//! a dead connection), the end of open listen streams, and a fresh task watch once the server is
//! back (a watch connection that lived through a network partition may stay silent for minutes).
//!
//! A probe that times out while the task watch keeps delivering events met a busy API server,
//! not a lost one: it does not count as failed ([`ApiHealth::heard`]). Under a flood of writes a
//! saturated API server answers a one-item list late, and refusing every call for that would
//! turn load into an outage. A probe that gets an error still counts.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use kube::Api;
use kube::api::ListParams;
use mcp_task_operator_crds::McpTask;
use tokio::sync::watch;

/// Time between two probes.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// How long one probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Consecutive failed probes after which the API server counts as unreachable: one slow answer
/// on a busy node does not take a replica out of its Service.
pub const FAILURES_BEFORE_UNREACHABLE: u32 = 2;

/// The API server's reachability as this replica last saw it; starts reachable.
#[derive(Debug)]
pub struct ApiHealth {
    reachable: watch::Sender<bool>,
    failures: AtomicU32,
    /// Answers heard from the API server outside the probe (watch events).
    heard: AtomicU64,
}

impl Default for ApiHealth {
    fn default() -> Self {
        Self {
            reachable: watch::Sender::new(true),
            failures: AtomicU32::new(0),
            heard: AtomicU64::new(0),
        }
    }
}

impl ApiHealth {
    /// Whether the last probes reached the API server.
    pub fn is_reachable(&self) -> bool {
        *self.reachable.borrow()
    }

    /// Changes of reachability (`true` = reachable again), for the watch and listen streams.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.reachable.subscribe()
    }

    /// Notes an answer from the API server outside the probe: an event of the task watch.
    pub fn heard(&self) {
        self.heard.fetch_add(1, Ordering::Relaxed);
    }

    /// Answers heard so far (see [`Self::heard`]).
    fn heard_count(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    /// Records one probe's outcome; reachability flips after [`FAILURES_BEFORE_UNREACHABLE`]
    /// failures in a row, and back on the first success.
    pub fn record(&self, ok: bool) {
        let failures = if ok {
            self.failures.store(0, Ordering::Relaxed);
            0
        } else {
            self.failures.fetch_add(1, Ordering::Relaxed) + 1
        };
        let reachable = failures < FAILURES_BEFORE_UNREACHABLE;
        let changed = self.reachable.send_if_modified(|now| {
            let changed = *now != reachable;
            *now = reachable;
            changed
        });
        if changed && reachable {
            tracing::info!("Kubernetes API server reachable again");
        } else if changed {
            tracing::warn!(
                failures,
                "Kubernetes API server unreachable; refusing requests"
            );
        }
    }
}

/// Probes the API server forever: a one-item list of `McpTask` in the served namespace (what
/// every request depends on: network, authentication, RBAC and storage), each bounded by
/// [`PROBE_TIMEOUT`]; a timeout counts only when nothing else was heard meanwhile.
pub async fn probe(health: std::sync::Arc<ApiHealth>, api: Api<McpTask>) {
    let params = ListParams::default().limit(1);
    loop {
        let heard_before = health.heard_count();
        let outcome = tokio::time::timeout(PROBE_TIMEOUT, api.list_metadata(&params)).await;
        let ok = probe_ok(outcome.map(|r| r.map(drop)), || {
            health.heard_count() != heard_before
        });
        health.record(ok);
        tokio::time::sleep(PROBE_INTERVAL).await;
    }
}

/// Whether a probe's `outcome` shows the API server reachable; a timeout does when
/// `heard_meanwhile` says watch events arrived while the probe waited.
fn probe_ok<E: std::fmt::Display>(
    outcome: Result<Result<(), E>, tokio::time::error::Elapsed>,
    heard_meanwhile: impl FnOnce() -> bool,
) -> bool {
    match outcome {
        Ok(Ok(())) => true,
        Ok(Err(error)) => {
            tracing::debug!(%error, "API server probe failed");
            false
        }
        Err(_) if heard_meanwhile() => {
            tracing::debug!("API server probe timed out, but the task watch is delivering: busy");
            true
        }
        Err(_) => {
            tracing::debug!("API server probe timed out");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_failure_is_tolerated_and_one_success_heals() {
        let health = ApiHealth::default();
        let mut changes = health.subscribe();
        health.record(false);
        assert!(health.is_reachable());
        assert!(!changes.has_changed().unwrap());
        health.record(false);
        assert!(!health.is_reachable());
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        health.record(false);
        assert!(
            !changes.has_changed().unwrap(),
            "no change while still down"
        );
        health.record(true);
        assert!(health.is_reachable());
        assert!(*changes.borrow_and_update());
    }

    #[tokio::test(start_paused = true)]
    async fn a_timed_out_probe_counts_only_when_the_watch_was_silent() {
        let elapsed = || async {
            tokio::time::timeout(Duration::from_millis(1), std::future::pending::<()>())
                .await
                .unwrap_err()
        };
        let health = ApiHealth::default();
        let before = health.heard_count();
        health.heard();
        let busy = health.heard_count() != before;
        assert!(busy);
        assert!(probe_ok::<String>(Err(elapsed().await), || busy));
        assert!(!probe_ok::<String>(Err(elapsed().await), || false));
        assert!(
            !probe_ok(Ok(Err("403 Forbidden")), || true),
            "an error counts"
        );
        assert!(probe_ok::<String>(Ok(Ok(())), || false));
    }
}
