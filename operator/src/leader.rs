//! Leader election on a `coordination.k8s.io/v1` Lease: one replica runs the controllers, the
//! standby takes over once the leader's Lease has not been renewed for its duration.
//!
//! NB: Leases are the one place where get-then-replace is right: the resourceVersion makes the
//! replace fail if another replica wrote the Lease in between, which is the whole point.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};

use crate::error::{Error, KubeOp, Result};

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

/// Waits until this replica holds the Lease, retrying every third of its duration.
pub async fn acquire(api: &Api<Lease>, name: &str, identity: &str, duration: Duration) {
    loop {
        match try_hold(api, name, identity, duration).await {
            Ok(true) => return,
            Ok(false) => tracing::debug!(lease = name, "standing by"),
            Err(e) => tracing::warn!(error = %e, "failed to acquire the leader Lease"),
        }
        tokio::time::sleep(duration / 3).await;
    }
}

/// Renews the Lease every third of its duration; returns when leadership is lost (a renewal
/// was refused, or none succeeded for a whole duration), after which the process must stop.
pub async fn keep(api: &Api<Lease>, name: &str, identity: &str, duration: Duration) {
    let mut last_renewal = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(duration / 3).await;
        match try_hold(api, name, identity, duration).await {
            Ok(true) => last_renewal = tokio::time::Instant::now(),
            Ok(false) => return,
            Err(e) => tracing::warn!(error = %e, "failed to renew the leader Lease"),
        }
        if last_renewal.elapsed() >= duration {
            return;
        }
    }
}

/// Releases the Lease on shutdown so the standby takes over at once. Best effort.
pub async fn release(api: &Api<Lease>, name: &str, identity: &str) {
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
