//! Per-caller token buckets: `tools/call` (on by default) and `tasks/get` polls (off by
//! default). A caller over its rate gets -31001 with `data.retryAfterMs` instead of an answer.
//!
//! NB: the ecosystem's keyed limiter, `governor`, keeps its keys in a `DashMap` that grows
//! with every caller and only shrinks when `retain_recent` is called; it has no bound on the
//! number of keys. This bucket map has one: past [`MAX_CALLERS`] it drops the buckets that are
//! full (indistinguishable from a new caller's), and resets wholesale if that is not enough.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Callers tracked at most. A reset only ever lets a caller through early; callers are
/// authenticated identities, so an attacker cannot mint them at will.
const MAX_CALLERS: usize = 10_000;

/// A token bucket per caller: `rate` requests per second, bursts of up to `burst`.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// A limiter allowing `rate` requests per second and bursts of `burst`.
    pub fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate,
            burst: burst.max(1.0),
            buckets: Mutex::default(),
        }
    }

    /// The configured rate, per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Takes one token for `caller` at `now`; `Err` holds how long until one is available.
    pub fn check(&self, caller: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= MAX_CALLERS && !buckets.contains_key(caller) {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, (tokens, last)| {
                *tokens + now.saturating_duration_since(*last).as_secs_f64() * rate < burst
            });
            // Half full after pruning means many callers are busy at once: a reset costs
            // less than scanning the map again on the next new caller.
            if buckets.len() > MAX_CALLERS / 2 {
                buckets.clear();
            }
        }
        let (tokens, last) = buckets
            .entry(caller.to_owned())
            .or_insert((self.burst, now));
        let refilled = (*tokens + now.saturating_duration_since(*last).as_secs_f64() * self.rate)
            .min(self.burst);
        *last = now;
        if refilled >= 1.0 {
            *tokens = refilled - 1.0;
            Ok(())
        } else {
            *tokens = refilled;
            Err(Duration::from_secs_f64((1.0 - refilled) / self.rate))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_pass_then_polls_wait_for_refill() {
        let limiter = RateLimiter::new(2.0, 2.0);
        let start = Instant::now();
        assert!(limiter.check("a", start).is_ok());
        assert!(limiter.check("a", start).is_ok());
        let wait = limiter.check("a", start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(limiter.check("b", start).is_ok(), "callers are independent");
        assert!(
            limiter
                .check("a", start + Duration::from_millis(500))
                .is_ok()
        );
    }

    #[test]
    fn memory_stays_bounded_and_busy_callers_keep_their_buckets() {
        let limiter = RateLimiter::new(1.0, 1.0);
        let start = Instant::now();
        assert!(limiter.check("busy", start).is_ok());
        for i in 0..MAX_CALLERS * 3 {
            let _ = limiter.check(&format!("c{i}"), start + Duration::from_secs(10));
            let len = limiter.buckets.lock().unwrap().len();
            assert!(len <= MAX_CALLERS, "{len}");
        }
        // Full buckets of idle callers were pruned instead of busy ones being reset.
        let now = start + Duration::from_secs(10);
        let limiter = RateLimiter::new(1.0, 1.0);
        for i in 0..MAX_CALLERS - 1 {
            let _ = limiter.check(&format!("idle{i}"), start);
        }
        assert!(limiter.check("busy", now).is_ok());
        assert!(limiter.check("new", now).is_ok());
        assert!(
            limiter.check("busy", now).is_err(),
            "busy caller kept its bucket"
        );
    }
}
