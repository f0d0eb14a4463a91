//! How many pods a tool's pool keeps waiting, and which to replace. Pure: the pool's Jobs as
//! observed, the calls of the last minute and the tool's free slots in, what to create and
//! delete out.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use mcp_task_operator_crds::WarmPool;

/// Calls a minute per waiting pod above `minReady`.
pub const CALLS_PER_MINUTE_PER_POD: usize = 10;
/// Most pods a pool starts in one round (the next round follows their Jobs' events).
pub const MAX_STARTS_PER_ROUND: usize = 5;

/// A waiting (unclaimed) Job of the pool, as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The Job's name.
    pub name: String,
    /// When it was created.
    pub created: Timestamp,
    /// The claim key it was started with (its `mcptasks.io/warm-key`).
    pub key_id: Option<String>,
    /// The tool generation it was made from.
    pub generation: Option<i64>,
    /// Its pod ran and ended (or the Job failed): it will never be claimed.
    pub ended: bool,
    /// Its pod waits for a claim: ready, not being deleted.
    pub ready: bool,
}

/// What the pool's tool and its callers look like now.
#[derive(Debug, Clone)]
pub struct Demand<'a> {
    /// The tool's pool settings.
    pub pool: &'a WarmPool,
    /// The tool's `metadata.generation`.
    pub generation: Option<i64>,
    /// This replica's claim key ID.
    pub key_id: &'a str,
    /// Calls of the tool in the last minute (claimed or started cold).
    pub calls_last_minute: usize,
    /// Slots of the tool's `maxConcurrentTasks` no task holds (None: no limit).
    pub free_slots: Option<usize>,
    /// Now.
    pub now: Timestamp,
}

/// Why a Job leaves the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Its pod ended (it died, or waited its longest).
    Ended,
    /// Another key started it (another replica, before a failover): this one cannot claim it.
    OtherKey,
    /// The tool changed since it was made.
    ToolChanged,
    /// It waited the pool's idle time.
    Idle,
    /// The pool is larger than the calls (or the free slots) call for.
    Surplus,
}

/// What a round does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// Pods to start.
    pub create: usize,
    /// Jobs to delete, and why.
    pub delete: Vec<(String, Why)>,
    /// How many pods the pool should have waiting.
    pub desired: usize,
}

/// The pool size the calls call for: one pod per [`CALLS_PER_MINUTE_PER_POD`] whole calls a
/// minute (never more than one per ten), within `minReady..=maxReady`, and never more than the
/// free slots.
pub fn desired(demand: &Demand<'_>) -> usize {
    let bound = |v: i64| usize::try_from(v).unwrap_or(0);
    let (min, max) = (bound(demand.pool.min_ready), bound(demand.pool.max_ready));
    let by_calls = demand.calls_last_minute / CALLS_PER_MINUTE_PER_POD;
    let wanted = by_calls.clamp(min.min(max), max);
    demand.free_slots.map_or(wanted, |free| wanted.min(free))
}

/// The round for `members` under `demand`.
pub fn plan(members: &[Member], demand: &Demand<'_>) -> Round {
    let idle = SignedDuration::from_secs(demand.pool.idle_seconds);
    let mut round = Round {
        desired: desired(demand),
        ..Round::default()
    };
    let mut live: Vec<&Member> = Vec::new();
    for m in members {
        let why = if m.ended {
            Some(Why::Ended)
        } else if m.key_id.as_deref() != Some(demand.key_id) {
            Some(Why::OtherKey)
        } else if m.generation != demand.generation {
            Some(Why::ToolChanged)
        } else if demand.now.duration_since(m.created) >= idle {
            Some(Why::Idle)
        } else {
            None
        };
        match why {
            Some(why) => round.delete.push((m.name.clone(), why)),
            None => live.push(m),
        }
    }
    if live.len() > round.desired {
        // Keep the ready ones, the youngest first (they wait longest before they idle out).
        live.sort_by_key(|m| (std::cmp::Reverse(m.ready), std::cmp::Reverse(m.created)));
        for m in live.drain(round.desired..) {
            round.delete.push((m.name.clone(), Why::Surplus));
        }
    }
    round.create = round
        .desired
        .saturating_sub(live.len())
        .min(MAX_STARTS_PER_ROUND);
    round
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn member(name: &str, created: &str, ready: bool) -> Member {
        Member {
            name: name.into(),
            created: at(created),
            key_id: Some("k1".into()),
            generation: Some(3),
            ended: false,
            ready,
        }
    }

    fn demand<'a>(pool: &'a WarmPool, calls: usize, free: Option<usize>) -> Demand<'a> {
        Demand {
            pool,
            generation: Some(3),
            key_id: "k1",
            calls_last_minute: calls,
            free_slots: free,
            now: at("2026-12-07T12:00:00Z"),
        }
    }

    fn pool(min: i64, max: i64) -> WarmPool {
        WarmPool {
            min_ready: min,
            max_ready: max,
            idle_seconds: 600,
            reuse: None,
        }
    }

    #[test]
    fn the_pool_follows_the_calls_within_its_bounds_and_the_free_slots() {
        let p = pool(1, 5);
        assert_eq!(desired(&demand(&p, 0, None)), 1, "minReady with no calls");
        assert_eq!(desired(&demand(&p, 10, None)), 1);
        assert_eq!(
            desired(&demand(&p, 29, None)),
            2,
            "at most one pod per ten calls a minute"
        );
        assert_eq!(desired(&demand(&p, 30, None)), 3);
        assert_eq!(desired(&demand(&p, 500, None)), 5, "never above maxReady");
        assert_eq!(
            desired(&demand(&p, 500, Some(2))),
            2,
            "never above the free slots"
        );
        assert_eq!(
            desired(&demand(&p, 0, Some(0))),
            0,
            "not even minReady without a slot"
        );
        assert_eq!(desired(&demand(&pool(0, 3), 0, None)), 0);
    }

    #[test]
    fn dead_foreign_stale_and_idle_pods_are_replaced() {
        let p = pool(2, 2);
        let mut ended = member("ended", "2026-12-07T11:59:00Z", false);
        ended.ended = true;
        let mut foreign = member("foreign", "2026-12-07T11:59:00Z", true);
        foreign.key_id = Some("k0".into());
        let mut stale = member("stale", "2026-12-07T11:59:00Z", true);
        stale.generation = Some(2);
        let idle = member("idle", "2026-12-07T11:50:00Z", true);
        let round = plan(&[ended, foreign, stale, idle], &demand(&p, 0, None));
        assert_eq!(
            round.delete,
            vec![
                ("ended".into(), Why::Ended),
                ("foreign".into(), Why::OtherKey),
                ("stale".into(), Why::ToolChanged),
                ("idle".into(), Why::Idle),
            ]
        );
        assert_eq!(round.create, 2, "each replaced");
    }

    #[test]
    fn a_surplus_goes_not_ready_first_then_oldest() {
        let p = pool(1, 1);
        let members = [
            member("old-ready", "2026-12-07T11:58:00Z", true),
            member("young-ready", "2026-12-07T11:59:00Z", true),
            member("starting", "2026-12-07T11:59:30Z", false),
        ];
        let round = plan(&members, &demand(&p, 0, None));
        assert_eq!(
            round.delete,
            vec![
                ("old-ready".into(), Why::Surplus),
                ("starting".into(), Why::Surplus),
            ]
        );
        assert_eq!(round.create, 0);
        // A tool whose slots fill up gives its waiting pods back.
        let round = plan(&members[..1], &demand(&p, 0, Some(0)));
        assert_eq!(round.delete, vec![("old-ready".into(), Why::Surplus)]);
    }

    #[test]
    fn a_round_starts_at_most_five() {
        let p = pool(20, 20);
        assert_eq!(plan(&[], &demand(&p, 0, None)).create, MAX_STARTS_PER_ROUND);
    }
}
