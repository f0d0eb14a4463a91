//! A call that finds no ready pod in its tool's pool waits a moment for one that is starting
//! (its Job made, its pod on its way) instead of starting cold: a replacement is often less
//! than a second from ready, and a cold start costs a whole pod start (for a bridged server,
//! the server's start too) and a slot the replacement would have used.
//!
//! Each starting pod is reserved for one waiting call, oldest pod first, in this replica's
//! memory only (a new leader decides again; a reservation decides nothing durable: the claim
//! that follows is the usual record, take and hand-over). The operator asks the launcher's
//! `/ready` itself, so a call claims a pod as soon as its launcher listens rather than a probe
//! period later. A call waits at most [`STARTING_WAIT`] from its first look, then starts cold.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use mcp_task_operator_crds::McpTool;

use super::claim::{self, Launcher};
use crate::context::Context;
use crate::lock;

/// Longest a call waits for a starting pod of its pool before it starts cold.
pub const STARTING_WAIT: Duration = Duration::from_secs(10);
/// How often a waiting call looks at its pod again.
pub const STARTING_POLL: Duration = Duration::from_millis(100);

/// A call waiting for a starting pod: since when, and the pool Job it waits for.
#[derive(Debug, Clone)]
pub struct Reservation {
    since: Instant,
    job: Option<String>,
}

/// The waiting calls of this replica, by task UID.
pub type Reservations = HashMap<String, Reservation>;

/// What looking for a starting pod came to.
#[derive(Debug)]
pub enum Starting {
    /// The reserved pod's launcher waits for a claim: claim it now.
    Ready(Box<Job>, Box<Pod>),
    /// A pod is reserved for the call and still starting: look again in [`STARTING_POLL`].
    Wait,
    /// No pod is starting for the call, or it waited long enough: start cold.
    No,
}

impl Reservation {
    /// Whether this reservation holds `job` still (a call past its wait, or gone, holds none).
    fn holds(&self, job: &str, now: Instant) -> bool {
        self.job.as_deref() == Some(job) && now.duration_since(self.since) < STARTING_WAIT
    }
}

/// Whether the pool Job `job` is reserved for a call other than the task with `uid`.
pub fn reserved_for_other(ctx: &Context, job: &str, uid: &str) -> bool {
    let now = Instant::now();
    lock(&ctx.warm.reservations)
        .iter()
        .any(|(u, r)| u != uid && r.holds(job, now))
}

/// The call (task `uid`) claimed a pod or starts cold: its reservation goes.
pub fn done(ctx: &Context, uid: &str) {
    lock(&ctx.warm.reservations).remove(uid);
}

/// Looks for a starting pod of `tool`'s pool for the task with `uid` (reserving one if it has
/// none) and asks its launcher whether it waits already.
pub async fn wait(ctx: &Context, tool: &McpTool, uid: &str) -> Starting {
    let candidates = claim::starting(ctx, tool);
    let now = Instant::now();
    let picked = {
        let mut all = lock(&ctx.warm.reservations);
        // A task deleted while it waited leaves its entry: it goes after twice the wait.
        all.retain(|_, r| now.duration_since(r.since) < 2 * STARTING_WAIT);
        let reservation = all.entry(uid.to_owned()).or_insert(Reservation {
            since: now,
            job: None,
        });
        let overdue = now.duration_since(reservation.since) >= STARTING_WAIT;
        let kept = reservation
            .job
            .clone()
            .filter(|j| candidates.iter().any(|(c, _)| c.name_any() == *j));
        let picked = match (overdue, kept) {
            (true, _) => None,
            (false, Some(kept)) => Some(kept),
            (false, None) => candidates
                .iter()
                .map(|(job, _)| job.name_any())
                .find(|name| !all.values().any(|r| r.holds(name, now))),
        };
        match &picked {
            Some(name) => {
                if let Some(mine) = all.get_mut(uid) {
                    mine.job = Some(name.clone());
                }
            }
            None => {
                all.remove(uid);
            }
        }
        picked
    };
    let Some(name) = picked else {
        return Starting::No;
    };
    let Some((job, pods)) = candidates.into_iter().find(|(j, _)| j.name_any() == name) else {
        return Starting::Wait;
    };
    let listening = pods.into_iter().find(|p| {
        let status = p.status.as_ref();
        status.and_then(|s| s.phase.as_deref()) == Some("Running")
            && status.and_then(|s| s.pod_ip.as_deref()).is_some()
    });
    match listening {
        Some(pod) if claim::probe(ctx, &pod).await == Launcher::Waiting => {
            Starting::Ready(Box::new(job), Box::new(pod))
        }
        _ => Starting::Wait,
    }
}
