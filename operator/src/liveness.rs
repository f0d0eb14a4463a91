//! What `/healthz` (the liveness probe) checks: that the operator is not stalled.
//!
//! Two things must keep moving. Every reconcile must end: one that has run longer than the
//! stall limit is stuck (every API call it makes has a deadline, so a healthy reconcile ends
//! well within it). And the leader-election loop must keep taking steps (an attempt to acquire
//! or renew the Lease at least every retry period, each attempt bounded). An idle operator, with
//! nothing to reconcile, stays healthy: only work that started and did not end counts.

use crate::lock;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default [`Liveness::reconcile_limit`]: 120 s.
pub const DEFAULT_RECONCILE_LIMIT: Duration = Duration::from_secs(120);
/// Default [`Liveness::election_limit`]: 60 s.
pub const DEFAULT_ELECTION_LIMIT: Duration = Duration::from_secs(60);

/// Reconciles in flight and the leader-election loop's last step.
#[derive(Debug)]
pub struct Liveness {
    reconcile_limit: Duration,
    election_limit: Duration,
    next_id: AtomicU64,
    running: Mutex<HashMap<u64, (&'static str, Instant)>>,
    election: Mutex<Instant>,
}

impl Default for Liveness {
    fn default() -> Self {
        Self::new(DEFAULT_RECONCILE_LIMIT, DEFAULT_ELECTION_LIMIT)
    }
}

impl Liveness {
    /// Liveness that fails when a reconcile runs longer than `reconcile_limit`, or the
    /// election loop takes no step for `election_limit` (counted from now).
    pub fn new(reconcile_limit: Duration, election_limit: Duration) -> Self {
        Self {
            reconcile_limit,
            election_limit,
            next_id: AtomicU64::new(0),
            running: Mutex::new(HashMap::new()),
            election: Mutex::new(Instant::now()),
        }
    }

    /// Longest a reconcile may run.
    pub fn reconcile_limit(&self) -> Duration {
        self.reconcile_limit
    }

    /// Longest the election loop may go without a step.
    pub fn election_limit(&self) -> Duration {
        self.election_limit
    }

    /// Records that a reconcile of `controller` started; it ends when the guard is dropped
    /// (also when the reconcile future is dropped unfinished).
    pub fn reconcile_started(&self, controller: &'static str) -> Running<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.running).insert(id, (controller, Instant::now()));
        Running { liveness: self, id }
    }

    /// Records a step of the leader-election loop (an attempt on the Lease ended).
    pub fn election_step(&self) {
        *lock(&self.election) = Instant::now();
    }

    /// `Ok` when nothing is stalled at `now`, else what is.
    pub fn check(&self, now: Instant) -> Result<(), String> {
        let oldest = lock(&self.running)
            .values()
            .min_by_key(|(_, started)| *started)
            .copied();
        if let Some((controller, started)) = oldest {
            let running = now.saturating_duration_since(started);
            if running > self.reconcile_limit {
                return Err(format!(
                    "a {controller} reconcile has been running for {} s (limit {} s, \
                     MCP_OPERATOR_RECONCILE_STALL_SECONDS)",
                    running.as_secs(),
                    self.reconcile_limit.as_secs()
                ));
            }
        }
        let quiet = now.saturating_duration_since(*lock(&self.election));
        if quiet > self.election_limit {
            return Err(format!(
                "the leader-election loop has taken no step for {} s (limit {} s)",
                quiet.as_secs(),
                self.election_limit.as_secs()
            ));
        }
        Ok(())
    }
}

/// A reconcile in flight; see [`Liveness::reconcile_started`].
#[derive(Debug)]
pub struct Running<'a> {
    liveness: &'a Liveness,
    id: u64,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        lock(&self.liveness.running).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATER: Duration = Duration::from_secs(100);

    #[test]
    fn an_idle_operator_is_alive() {
        let live = Liveness::new(Duration::from_secs(10), Duration::from_secs(200));
        assert_eq!(live.check(Instant::now() + LATER), Ok(()));
    }

    #[test]
    fn a_reconcile_running_past_the_limit_fails_the_check_until_it_ends() {
        let live = Liveness::new(Duration::from_secs(10), Duration::from_secs(200));
        let quick = live.reconcile_started("mcptool");
        drop(quick);
        let stuck = live.reconcile_started("mcptask");
        let now = Instant::now();
        assert_eq!(live.check(now), Ok(()));
        let err = live.check(now + LATER).unwrap_err();
        assert!(
            err.starts_with("a mcptask reconcile has been running for 100 s (limit 10 s"),
            "{err}"
        );
        drop(stuck);
        assert_eq!(live.check(now + LATER), Ok(()));
    }

    #[test]
    fn an_election_loop_without_steps_fails_the_check() {
        let live = Liveness::new(Duration::from_secs(10), Duration::from_secs(30));
        let now = Instant::now();
        assert_eq!(live.check(now), Ok(()));
        let err = live.check(now + LATER).unwrap_err();
        assert!(err.contains("no step for 100 s (limit 30 s)"), "{err}");
        live.election_step();
        assert_eq!(live.check(Instant::now()), Ok(()));
    }
}
