//! Per-caller rate limit on `tasks/get` (DESIGN decision 2): off by default; when on, a caller
//! polling faster than allowed gets -32000 with `data.retryAfterMs` instead of an answer.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Callers tracked at most; beyond this the oldest state is dropped wholesale (a reset only
/// ever lets a caller through early).
const MAX_CALLERS: usize = 10_000;

/// A token bucket per caller: `rate` requests per second, bursts of up to `burst`.
#[derive(Debug)]
pub struct PollLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl PollLimiter {
    /// A limiter allowing `rate` polls per second and bursts of `burst`.
    pub fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate,
            burst: burst.max(1.0),
            buckets: Mutex::default(),
        }
    }

    /// Takes one token for `caller` at `now`; `Err` holds how long until one is available.
    pub fn check(&self, caller: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= MAX_CALLERS && !buckets.contains_key(caller) {
            buckets.clear();
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
        let limiter = PollLimiter::new(2.0, 2.0);
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
}
