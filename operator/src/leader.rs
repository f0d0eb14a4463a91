//! Leader election on a `coordination.k8s.io/v1` Lease: one replica runs the controllers, the
//! standby takes over once the leader's Lease has not been renewed for its duration.
//!
//! The leader stops acting first: when no renewal has succeeded for the renew deadline (below
//! the lease duration, checked at startup), [`keep`] returns and the process exits, so no two
//! replicas ever act together. Every attempt on the Lease is bounded by that deadline (and
//! every API call by the client's own, see [`crate::deadline`]): a renewal that hangs cannot
//! keep a leader acting.
//!
//! Every acquisition and renewal is recorded in the [`Fence`]: the controllers' client refuses
//! writes once the last renewal is older than the renew deadline, even before [`keep`] returns
//! (a process paused past its Lease wakes with both due at once).
//!
//! NB: Leases are the one place where get-then-replace is right: the resourceVersion makes the
//! replace fail if another replica wrote the Lease in between, which is the whole point.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use crate::error::{Error, KubeOp, Result};
use crate::fence::Fence;
use crate::liveness::Liveness;

/// What a replica should do with the Lease as it found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStep {
    /// No Lease exists: create it, holding it.
    Create,
    /// We hold it: renew it.
    Renew,
    /// Its holder stopped renewing (or released it): take it over.
    TakeOver,
    /// Someone else holds a live Lease: stand by.
    StandBy,
}

/// Decides the next step for `identity` given the Lease (if any) at `now`.
pub fn lease_step(lease: Option<&Lease>, identity: &str, now: Timestamp) -> LeaseStep {
    let Some(spec) = lease.and_then(|l| l.spec.as_ref()) else {
        return if lease.is_none() {
            LeaseStep::Create
        } else {
            LeaseStep::TakeOver
        };
    };
    let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty());
    match holder {
        Some(h) if h == identity => LeaseStep::Renew,
        None => LeaseStep::TakeOver,
        Some(_) => {
            let duration =
                SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(15).into());
            let expired = spec
                .renew_time
                .as_ref()
                .and_then(|t| t.0.checked_add(duration).ok())
                .is_none_or(|until| until <= now);
            if expired {
                LeaseStep::TakeOver
            } else {
                LeaseStep::StandBy
            }
        }
    }
}

/// The Lease spec after `step` by `identity` at `now`.
pub fn held_spec(
    previous: Option<&LeaseSpec>,
    step: LeaseStep,
    identity: &str,
    duration: Duration,
    now: Timestamp,
) -> LeaseSpec {
    let transitions = previous.and_then(|s| s.lease_transitions).unwrap_or(0);
    let renewing = step == LeaseStep::Renew;
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)),
        acquire_time: if renewing {
            previous.and_then(|s| s.acquire_time.clone())
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if step == LeaseStep::TakeOver {
            transitions + 1
        } else {
            transitions
        }),
        ..LeaseSpec::default()
    }
}

/// Tries once to acquire or renew the Lease; returns whether this replica now holds it.
pub async fn try_hold(
    api: &Api<Lease>,
    name: &str,
    identity: &str,
    duration: Duration,
) -> Result<bool> {
    let lease = api
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(KubeOp::Get, "Lease", name, e))?;
    let now = Timestamp::now();
    let step = lease_step(lease.as_ref(), identity, now);
    if step == LeaseStep::StandBy {
        return Ok(false);
    }
    let spec = held_spec(
        lease.as_ref().and_then(|l| l.spec.as_ref()),
        step,
        identity,
        duration,
        now,
    );
    let result = match lease {
        None => {
            let new = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            api.create(&PostParams::default(), &new).await.map(|_| ())
        }
        Some(mut current) => {
            current.spec = Some(spec);
            api.replace(name, &PostParams::default(), &current)
                .await
                .map(|_| ())
        }
    };
    match result {
        Ok(()) => Ok(true),
        // Another replica won the race for this round.
        Err(kube::Error::Api(s)) if s.is_conflict() || s.is_already_exists() => Ok(false),
        Err(e) => Err(Error::kube(KubeOp::Patch, "Lease", name, e)),
    }
}

/// When a replica tries the Lease and how long it may lead without renewing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long the Lease stays valid without renewal (what a standby waits for).
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal; below `lease_duration`.
    pub renew_deadline: Duration,
    /// Time between two attempts; below `renew_deadline`.
    pub retry_period: Duration,
}

impl Timing {
    /// The timing the configuration sets.
    pub fn from_config(config: &crate::config::Config) -> Self {
        Self {
            lease_duration: config.lease_duration,
            renew_deadline: config.lease_renew_deadline,
            retry_period: config.lease_retry_period,
        }
    }
}

/// Why a leader stopped leading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// Another replica holds the Lease now.
    TakenOver,
    /// No renewal succeeded within the renew deadline (the API server did not answer, or
    /// refused): the leader must stop before a standby may take the Lease over.
    RenewDeadline,
}

/// Waits until this replica holds the Lease, trying every retry period, and opens `fence`.
/// Returns when the attempt that acquired it started: the Lease it wrote is valid from no
/// earlier than that.
pub async fn acquire(
    api: &Api<Lease>,
    name: &str,
    identity: &str,
    timing: Timing,
    liveness: &Liveness,
    fence: &Fence,
) -> Instant {
    acquire_with(timing, liveness, fence, || {
        try_hold(api, name, identity, timing.lease_duration)
    })
    .await
}

/// [`acquire`] with `attempt` trying the Lease once.
pub async fn acquire_with<F, Fut>(
    timing: Timing,
    liveness: &Liveness,
    fence: &Fence,
    mut attempt: F,
) -> Instant
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    loop {
        let started = Instant::now();
        // An attempt on an API server that does not answer ends at the renew deadline.
        match tokio::time::timeout(timing.renew_deadline, attempt()).await {
            Ok(Ok(true)) => {
                fence.renewed(started);
                liveness.election_step();
                return started;
            }
            Ok(Ok(false)) => tracing::debug!("standing by"),
            Ok(Err(e)) => tracing::warn!(error = %e, "failed to acquire the leader Lease"),
            Err(_) => tracing::warn!(
                timeout_s = timing.renew_deadline.as_secs_f64(),
                "an attempt to acquire the leader Lease did not finish in time"
            ),
        }
        liveness.election_step();
        tokio::time::sleep(timing.retry_period).await;
    }
}

/// Renews the Lease every retry period; returns when this replica must stop leading: a
/// renewal found another holder, or none succeeded within the renew deadline of the start of
/// the last one that did (`acquired`, for the first). Every attempt ends by that deadline,
/// however the API server behaves, so the leader stops before the Lease it last wrote expires.
/// Each renewal is recorded in `fence`, which is closed when this returns.
pub async fn keep(
    api: &Api<Lease>,
    name: &str,
    identity: &str,
    timing: Timing,
    liveness: &Liveness,
    fence: &Fence,
    acquired: Instant,
) -> Lost {
    keep_with(timing, liveness, fence, acquired, || {
        try_hold(api, name, identity, timing.lease_duration)
    })
    .await
}

/// [`keep`] with `attempt` trying the Lease once.
pub async fn keep_with<F, Fut>(
    timing: Timing,
    liveness: &Liveness,
    fence: &Fence,
    acquired: Instant,
    attempt: F,
) -> Lost
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let lost = renew_until_lost(timing, liveness, fence, acquired, attempt).await;
    fence.close();
    lost
}

async fn renew_until_lost<F, Fut>(
    timing: Timing,
    liveness: &Liveness,
    fence: &Fence,
    acquired: Instant,
    mut attempt: F,
) -> Lost
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    // The Lease we last wrote says "renewed" at a time no earlier than this.
    let mut renewed = acquired;
    loop {
        let deadline = renewed + timing.renew_deadline;
        tokio::time::sleep_until(deadline.min(Instant::now() + timing.retry_period)).await;
        let started = Instant::now();
        if started >= deadline {
            return Lost::RenewDeadline;
        }
        match tokio::time::timeout_at(deadline, attempt()).await {
            Ok(Ok(true)) => {
                renewed = started;
                fence.renewed(started);
            }
            Ok(Ok(false)) => return Lost::TakenOver,
            Ok(Err(e)) => tracing::warn!(error = %e, "failed to renew the leader Lease"),
            Err(_) => tracing::warn!("a renewal of the leader Lease did not finish in time"),
        }
        liveness.election_step();
    }
}

/// Closes `fence`, then releases the Lease on shutdown so the standby takes over at once.
/// Best effort.
pub async fn release(api: &Api<Lease>, name: &str, identity: &str, fence: &Fence) {
    fence.close();
    let Ok(Some(mut lease)) = api.get_opt(name).await else {
        return;
    };
    let Some(spec) = lease.spec.as_mut() else {
        return;
    };
    if spec.holder_identity.as_deref() != Some(identity) {
        return;
    }
    spec.holder_identity = None;
    if let Err(e) = api.replace(name, &PostParams::default(), &lease).await {
        tracing::warn!(error = %e, "failed to release the leader Lease");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed: &str) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(renewed.parse().unwrap())),
                lease_transitions: Some(2),
                ..LeaseSpec::default()
            }),
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn fence() -> Fence {
        Fence::new(TIMING.renew_deadline)
    }

    const TIMING: Timing = Timing {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    };

    /// Attempts that answer `true` `renewals` times, then as `then` says.
    fn attempts(
        renewals: usize,
        then: Option<bool>,
    ) -> impl FnMut() -> futures::future::BoxFuture<'static, Result<bool>> {
        let mut made = 0;
        move || {
            made += 1;
            let answer = if made <= renewals { Some(true) } else { then };
            Box::pin(async move {
                match answer {
                    Some(held) => Ok(held),
                    // An API server that never answers.
                    None => std::future::pending().await,
                }
            })
        }
    }

    /// The old loop awaited a renewal without a deadline: one that hung kept the leader acting
    /// past the Lease's expiry. Now it stops at the renew deadline of its last renewal's start.
    #[tokio::test(start_paused = true)]
    async fn a_hanging_renewal_stops_the_leader_before_the_lease_expires() {
        let acquired = Instant::now();
        let lost = keep_with(
            TIMING,
            &Liveness::default(),
            &fence(),
            acquired,
            attempts(2, None),
        )
        .await;
        assert_eq!(lost, Lost::RenewDeadline);
        // Renewed at 2 s and 4 s; the third attempt (at 6 s) hangs: stop at 4 + 10 s.
        assert_eq!(acquired.elapsed(), Duration::from_secs(14));
        assert!(acquired.elapsed() < Duration::from_secs(4) + TIMING.lease_duration);
    }

    #[tokio::test(start_paused = true)]
    async fn failing_renewals_stop_the_leader_at_the_renew_deadline() {
        let acquired = Instant::now();
        let failing = || async {
            Err(Error::MissingField {
                kind: "Lease",
                field: "spec",
            })
        };
        let lost = keep_with(TIMING, &Liveness::default(), &fence(), acquired, failing).await;
        assert_eq!(lost, Lost::RenewDeadline);
        assert_eq!(acquired.elapsed(), TIMING.renew_deadline);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_taken_over_stops_the_leader_at_once() {
        let acquired = Instant::now();
        let lost = keep_with(
            TIMING,
            &Liveness::default(),
            &fence(),
            acquired,
            attempts(1, Some(false)),
        )
        .await;
        assert_eq!(lost, Lost::TakenOver);
        assert_eq!(acquired.elapsed(), 2 * TIMING.retry_period);
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_that_renews_keeps_leading() {
        let kept = tokio::time::timeout(
            Duration::from_secs(3600),
            keep_with(
                TIMING,
                &Liveness::default(),
                &fence(),
                Instant::now(),
                || async { Ok(true) },
            ),
        )
        .await;
        assert!(kept.is_err(), "still leading after an hour of renewals");
    }

    /// The fence is what the controllers' writes check: open while renewals succeed (here 30
    /// s after acquiring, three renew deadlines), closed once the Lease is lost.
    #[tokio::test(start_paused = true)]
    async fn renewals_keep_the_fence_open_and_a_lost_lease_closes_it() {
        let fence = fence();
        let acquired =
            acquire_with(TIMING, &Liveness::default(), &fence, || async { Ok(true) }).await;
        assert!(fence.check().is_ok(), "open once acquired");
        let renewing = tokio::time::timeout(
            Duration::from_secs(30),
            keep_with(TIMING, &Liveness::default(), &fence, acquired, || async {
                Ok(true)
            }),
        )
        .await;
        assert!(renewing.is_err(), "still leading");
        assert!(fence.check().is_ok(), "renewed 2 s ago");
        let lost = keep_with(
            TIMING,
            &Liveness::default(),
            &fence,
            Instant::now(),
            attempts(1, Some(false)),
        )
        .await;
        assert_eq!(lost, Lost::TakenOver);
        assert!(fence.check().is_err(), "closed with the Lease lost");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_attempt_to_acquire_ends_and_is_retried() {
        let begun = Instant::now();
        let mut answers = [None, Some(false), Some(true)].into_iter();
        let acquired = acquire_with(TIMING, &Liveness::default(), &fence(), move || {
            let answer = answers.next().expect("three attempts");
            async move {
                match answer {
                    Some(held) => Ok(held),
                    None => std::future::pending().await,
                }
            }
        })
        .await;
        // Hangs until the renew deadline (10 s), retry at 12 s (stand by), at 14 s acquired.
        assert_eq!(acquired - begun, Duration::from_secs(14));
    }

    #[test]
    fn lease_steps_follow_holder_and_expiry() {
        let now = at("2026-08-01T12:00:20Z");
        assert_eq!(lease_step(None, "a", now), LeaseStep::Create);
        assert_eq!(
            lease_step(Some(&lease(Some("a"), "2026-08-01T12:00:00Z")), "a", now),
            LeaseStep::Renew
        );
        assert_eq!(
            lease_step(Some(&lease(Some("b"), "2026-08-01T12:00:10Z")), "a", now),
            LeaseStep::StandBy
        );
        assert_eq!(
            lease_step(Some(&lease(Some("b"), "2026-08-01T12:00:05Z")), "a", now),
            LeaseStep::TakeOver
        );
        assert_eq!(
            lease_step(Some(&lease(None, "2026-08-01T12:00:19Z")), "a", now),
            LeaseStep::TakeOver
        );
    }

    #[test]
    fn held_spec_counts_transitions_and_keeps_acquire_time_on_renewal() {
        let now = at("2026-08-01T12:00:20Z");
        let previous = lease(Some("b"), "2026-08-01T12:00:05Z").spec.unwrap();
        let taken = held_spec(
            Some(&previous),
            LeaseStep::TakeOver,
            "a",
            Duration::from_secs(15),
            now,
        );
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_transitions, Some(3));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        let later = at("2026-08-01T12:00:25Z");
        let renewed = held_spec(
            Some(&taken),
            LeaseStep::Renew,
            "a",
            Duration::from_secs(15),
            later,
        );
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.renew_time, Some(MicroTime(later)));
        assert_eq!(renewed.lease_transitions, Some(3));
    }
}
