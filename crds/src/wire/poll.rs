//! The `pollIntervalMs` a task's answers advise: the tool's interval while the task is young,
//! raised as it runs longer, always within the bounds of `McpTool.spec.pollIntervalMs`.
//!
//! The schedule: the task's own interval for its first minute ([`POLL_GROWTH_AFTER_MS`]); then
//! the larger of that interval and a tenth of its age (time since `createdAt`); always clamped
//! to [`MIN_POLL_INTERVAL_MS`]..=[`MAX_POLL_INTERVAL_MS`]. After the first minute a client that
//! follows it polls about 25 times per tenfold of the run time: a one-hour task costs 73 polls
//! at 2 s, not 1800.
//!
//! Retention honours the advice: a task that ends at `ended` stays readable until at least
//! [`readable_until`] = `ended` + the interval advised at `ended` + [`RETENTION_MARGIN_MS`].
//! The advice only grows while a task runs, so the interval any earlier answer advised is no
//! longer than the one advised at its end: a client that follows the advice always reads the
//! outcome. At most [`MAX_POLL_INTERVAL_MS`] + the margin (10.5 minutes) after the end, and
//! never less than the task's TTL (docs/DESIGN.md, "A task's lifetime").

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::mcp_tool::{MAX_POLL_INTERVAL_MS, MIN_POLL_INTERVAL_MS};

/// The share of a task's age the advised interval grows to: one tenth.
pub const POLL_AGE_DIVISOR: i64 = 10;
/// The age until which a task keeps its own interval: one minute (short tasks are polled as
/// the tool asks, and so alike by every replica).
pub const POLL_GROWTH_AFTER_MS: i64 = 60_000;

/// How long past the advised interval an ended task stays readable: a client's timer slack,
/// the time its request takes, and the clock skew between replicas.
pub const RETENTION_MARGIN_MS: i64 = 30_000;

/// The interval advised at `now` for a task created at `created` whose own interval is `base`
/// (`spec.pollIntervalMs`): see the module docs. `None` stays `None` (no advice). A time before
/// `created` (clock skew between replicas) counts as age zero.
pub fn advised_poll_interval_ms(
    base: Option<i64>,
    created: Timestamp,
    now: Timestamp,
) -> Option<i64> {
    let base = base?;
    let age_ms = now
        .as_millisecond()
        .saturating_sub(created.as_millisecond());
    let grown = if age_ms < POLL_GROWTH_AFTER_MS {
        base
    } else {
        base.max(age_ms / POLL_AGE_DIVISOR)
    };
    Some(grown.clamp(MIN_POLL_INTERVAL_MS, MAX_POLL_INTERVAL_MS))
}

/// The earliest moment a task created at `created` with its own interval `base`, which ended
/// at `ended`, may be deleted: `ended` + the interval advised at `ended` (none: zero) +
/// [`RETENTION_MARGIN_MS`].
pub fn readable_until(base: Option<i64>, created: Timestamp, ended: Timestamp) -> Timestamp {
    let advised = advised_poll_interval_ms(base, created, ended).unwrap_or(0);
    let retention = SignedDuration::from_millis(advised.saturating_add(RETENTION_MARGIN_MS));
    ended.checked_add(retention).unwrap_or(ended)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).expect("valid time")
    }

    /// The interval advised `seconds` after the creation of a task whose own one is `base`.
    fn after(base: Option<i64>, seconds: i64) -> Option<i64> {
        advised_poll_interval_ms(base, at(0), at(seconds))
    }

    #[test]
    fn a_young_task_gets_its_own_interval() {
        assert_eq!(after(Some(2_000), 0), Some(2_000));
        assert_eq!(after(Some(2_000), 59), Some(2_000));
        assert_eq!(after(None, 3_600), None);
    }

    #[test]
    fn the_interval_grows_to_a_tenth_of_the_age_up_to_the_ceiling() {
        assert_eq!(after(Some(2_000), 60), Some(6_000));
        assert_eq!(after(Some(2_000), 600), Some(60_000));
        assert_eq!(after(Some(2_000), 86_400), Some(MAX_POLL_INTERVAL_MS));
    }

    #[test]
    fn stored_values_outside_the_bounds_are_clamped() {
        // Tasks stored before the bounds existed (the McpTask schema allows 1 ms).
        assert_eq!(after(Some(1), 0), Some(MIN_POLL_INTERVAL_MS));
        assert_eq!(after(Some(i64::MAX), 0), Some(MAX_POLL_INTERVAL_MS));
        assert!(MAX_POLL_INTERVAL_MS < i64::from(i32::MAX));
        // A replica whose clock is behind the creating one's.
        assert_eq!(
            advised_poll_interval_ms(Some(500), at(10), at(0)),
            Some(500)
        );
    }

    #[test]
    fn a_client_following_the_advice_polls_a_long_task_logarithmically() {
        let mut elapsed_ms = 0_i64;
        let mut polls = 0;
        while elapsed_ms < 3_600_000 {
            let now = Timestamp::from_millisecond(at(0).as_millisecond() + elapsed_ms)
                .expect("valid time");
            elapsed_ms += advised_poll_interval_ms(Some(2_000), at(0), now).expect("advice");
            polls += 1;
        }
        assert_eq!(polls, 73, "polls in an hour");
        assert_eq!(after(Some(500), 30), Some(500));
    }

    #[test]
    fn an_ended_task_is_readable_for_the_interval_advised_at_its_end_plus_the_margin() {
        let margin = RETENTION_MARGIN_MS / 1000;
        let ended = |seconds| readable_until(Some(2_000), at(0), at(seconds));
        assert_eq!(ended(10), at(10 + 2 + margin));
        assert_eq!(ended(3_000), at(3_000 + 300 + margin));
        assert_eq!(ended(86_400), at(86_400 + 600 + margin));
        assert_eq!(readable_until(None, at(0), at(10)), at(10 + margin));
    }
}
