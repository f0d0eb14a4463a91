//! Token buckets: per caller for `tools/call` (on by default) and for `tasks/get` of IDs that
//! are not the caller's tasks (off by default), and per task for polls of the caller's own
//! tasks, refilled at the task's advertised `pollIntervalMs` (off by default), so that a
//! client polling every one of its tasks at the advertised interval is never refused however
//! many tasks it has. A request over its rate gets -31001 with `data.retryAfterMs` instead of
//! an answer.
//!
//! NB: the ecosystem's keyed limiter, `governor`, keeps its keys in a `DashMap` that grows
//! with every caller and only shrinks when `retain_recent` is called; it has no bound on the
//! number of keys. This bucket map has one: past [`MAX_CALLERS`] it drops the buckets that are
//! full (indistinguishable from a new caller's), and resets wholesale if that is not enough.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Keys (callers, or tasks) tracked at most. A reset only ever lets a key through early;
/// callers are authenticated identities and tasks are the caller's own, so nobody can mint
/// keys at will.
const MAX_CALLERS: usize = 10_000;

/// One key's bucket: tokens left, when last counted, and the rate it refills at.
type Bucket = (f64, Instant, f64);

/// A token bucket per key: `rate` requests per second (or a rate given per request, see
/// [`RateLimiter::check_at`]), bursts of up to `burst`.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
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

    /// The configured burst.
    pub fn burst(&self) -> f64 {
        self.burst
    }

    /// Takes one token for `caller` at `now`; `Err` holds how long until one is available.
    pub fn check(&self, caller: &str, now: Instant) -> Result<(), Duration> {
        self.check_at(caller, now, self.rate)
    }

    /// Whether `caller` has a token at `now`, without taking it; `Err` as for
    /// [`RateLimiter::check`].
    pub fn peek(&self, caller: &str, now: Instant) -> Result<(), Duration> {
        let buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(&(tokens, last, rate)) = buckets.get(caller) else {
            return Ok(());
        };
        let refilled = refill(tokens, last, rate, self.burst, now);
        if refilled >= 1.0 {
            Ok(())
        } else {
            Err(wait(refilled, rate))
        }
    }

    /// Takes one token for `key` at `now` from a bucket refilling at `rate` per second (the
    /// rate of this request: a task's advertised poll interval may change).
    pub fn check_at(&self, key: &str, now: Instant, rate: f64) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= MAX_CALLERS && !buckets.contains_key(key) {
            let burst = self.burst;
            buckets.retain(|_, &mut (tokens, last, rate)| {
                refill(tokens, last, rate, burst, now) < burst
            });
            // Half full after pruning means many keys are busy at once: a reset costs
            // less than scanning the map again on the next new key.
            if buckets.len() > MAX_CALLERS / 2 {
                buckets.clear();
            }
        }
        let (tokens, last, bucket_rate) = buckets
            .entry(key.to_owned())
            .or_insert((self.burst, now, rate));
        let refilled = refill(*tokens, *last, *bucket_rate, self.burst, now);
        *last = now;
        *bucket_rate = rate;
        if refilled >= 1.0 {
            *tokens = refilled - 1.0;
            Ok(())
        } else {
            *tokens = refilled;
            Err(wait(refilled, rate))
        }
    }
}

/// Tokens of a bucket that held `tokens` at `last` and refills at `rate`, at `now`.
fn refill(tokens: f64, last: Instant, rate: f64, burst: f64, now: Instant) -> f64 {
    (tokens + now.saturating_duration_since(last).as_secs_f64() * rate).min(burst)
}

/// How long until a bucket holding `tokens` and refilling at `rate` has one.
fn wait(tokens: f64, rate: f64) -> Duration {
    Duration::from_secs_f64(((1.0 - tokens) / rate).clamp(0.0, 86_400.0))
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
