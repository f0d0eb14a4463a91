//! The status-write budget: progress writes of all tasks together stay under a ceiling
//! (`MCP_OPERATOR_STATUS_WRITES_PER_SECOND`), while writes clients act on go at once.
//!
//! A generic cell rate algorithm (the one `governor` implements) with one addition: a progress
//! write that cannot go now RESERVES the task's next free slot, and the task's reconcile is
//! requeued for it. Whatever reconciles the task meanwhile (new output) finds the slot still
//! ahead and writes nothing: at the slot, the task's newest progress is written, once
//! (coalesced per task). Slots are handed out in turn, so with `n` tasks waiting each is
//! written at least every `n / rate` seconds. Writes that are never held back (a status
//! change: `input_required`, terminal; the Job's confirmation) still count against the
//! budget, so progress makes room for them.
//!
//! The clock is passed in ([`Instant`]), so the logic is tested without sleeping.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::lock;

/// Most status writes per second the budget may be set to.
pub const MAX_WRITES_PER_SECOND: u32 = 100_000;

/// Progress writes of all tasks under one ceiling; see the module docs.
#[derive(Debug)]
pub struct WriteBudget {
    /// Time one write uses up of the budget (1 / rate).
    per_write: Duration,
    /// How far ahead of the steady rate a burst may run (one second's worth of writes).
    burst: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The theoretical arrival time of the next write (GCRA).
    next: Option<Instant>,
    /// Slots reserved by tasks (UID) whose progress write waits.
    slots: HashMap<String, Instant>,
}

impl WriteBudget {
    /// A budget of `per_second` writes a second (at least 1, at most
    /// [`MAX_WRITES_PER_SECOND`]), with bursts of up to one second's worth.
    pub fn new(per_second: u32) -> Self {
        let per_second = per_second.clamp(1, MAX_WRITES_PER_SECOND);
        let per_write = Duration::from_secs(1) / per_second;
        Self {
            per_write,
            burst: per_write * (per_second - 1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Counts a write that is never held back (made at `now`).
    pub fn spend(&self, now: Instant) {
        let mut inner = lock(&self.inner);
        let next = inner.next.map_or(now, |n| n.max(now));
        inner.next = Some(next + self.per_write);
    }

    /// How long the progress write of the task `uid` must wait from `now`: zero means write
    /// now (it is counted); otherwise the task holds a slot that far ahead, and asking again
    /// before it gives the time left, at or after it zero.
    pub fn progress(&self, uid: &str, now: Instant) -> Duration {
        let mut inner = lock(&self.inner);
        if let Some(slot) = inner.slots.get(uid).copied() {
            if now >= slot {
                inner.slots.remove(uid);
                return Duration::ZERO;
            }
            return slot - now;
        }
        let next = inner.next.map_or(now, |n| n.max(now));
        // The earliest time this write conforms: `burst` ahead of the steady rate at most.
        let slot = next.checked_sub(self.burst).map_or(now, |s| s.max(now));
        inner.next = Some(next + self.per_write);
        if slot <= now {
            return Duration::ZERO;
        }
        inner.slots.insert(uid.to_owned(), slot);
        slot - now
    }

    /// Releases the slot of a task that ended (or was written otherwise).
    pub fn forget(&self, uid: &str) {
        lock(&self.inner).slots.remove(uid);
    }

    /// How many tasks hold a slot for a progress write.
    pub fn waiting(&self) -> usize {
        lock(&self.inner).slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn writes_beyond_the_burst_wait_for_their_slots_in_turn() {
        let budget = WriteBudget::new(10);
        let t0 = Instant::now();
        // A second's worth goes at once.
        for i in 0..10 {
            assert_eq!(
                budget.progress(&format!("t{i}"), t0),
                Duration::ZERO,
                "t{i}"
            );
        }
        // Then one every 100 ms, in turn.
        assert_eq!(budget.progress("a", t0), ms(100));
        assert_eq!(budget.progress("b", t0), ms(200));
        assert_eq!(budget.progress("c", t0), ms(300));
        assert_eq!(budget.waiting(), 3);
        // Asking again (new output) keeps the slot: no second slot, no earlier write.
        assert_eq!(budget.progress("b", t0 + ms(50)), ms(150));
        assert_eq!(budget.progress("b", t0 + ms(150)), ms(50));
        // At its slot the task writes its newest progress, once.
        assert_eq!(budget.progress("a", t0 + ms(100)), Duration::ZERO);
        assert_eq!(budget.progress("b", t0 + ms(200)), Duration::ZERO);
        assert_eq!(budget.waiting(), 1);
    }

    #[test]
    fn the_rate_over_a_long_run_stays_under_the_ceiling() {
        let budget = WriteBudget::new(100);
        let t0 = Instant::now();
        // 1,000 tasks each asking every 10 ms for 10 s, writing whenever allowed.
        let mut written = 0u32;
        for step in 0..1000u64 {
            let now = t0 + ms(step * 10);
            for task in 0..1000 {
                if budget.progress(&task.to_string(), now).is_zero() {
                    written += 1;
                }
            }
        }
        // 100 a second for 10 s, plus the first second's burst.
        assert!(written <= 100 * 10 + 100, "{written} writes");
        assert!(
            written >= 100 * 10 - 1,
            "{written} writes: the budget is used"
        );
    }

    #[test]
    fn writes_never_held_back_use_the_budget_up_first() {
        let budget = WriteBudget::new(10);
        let t0 = Instant::now();
        for _ in 0..10 {
            budget.spend(t0);
        }
        assert_eq!(budget.progress("a", t0), ms(100));
        budget.forget("a");
        assert_eq!(budget.waiting(), 0);
        // Once the budget refills, progress goes at once again.
        assert_eq!(
            budget.progress("b", t0 + Duration::from_secs(5)),
            Duration::ZERO
        );
    }

    #[test]
    fn every_waiting_task_is_written_within_its_turn() {
        // 300 tasks with news, 100 writes a second: each is written within ~3 s.
        let budget = WriteBudget::new(100);
        let t0 = Instant::now();
        let waits: Vec<Duration> = (0..300)
            .map(|i| budget.progress(&i.to_string(), t0))
            .collect();
        let longest = waits.iter().max().copied().unwrap_or_default();
        assert!(longest <= Duration::from_secs(2), "{longest:?}");
        for (i, wait) in waits.iter().enumerate().filter(|(_, w)| !w.is_zero()) {
            assert_eq!(budget.progress(&i.to_string(), t0 + *wait), Duration::ZERO);
        }
    }
}
