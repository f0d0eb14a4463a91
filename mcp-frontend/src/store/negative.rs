//! A short-lived, bounded memory of task IDs the API server said do not exist, so that asking
//! again for the same unknown ID (`tasks/get`, `subscriptions/listen`) within a few seconds
//! costs no API read.
//!
//! It never hides a task that exists: the store drops an ID from here when its watch sees the
//! task or this replica creates it, and only caches an ID after a direct read answered 404 or
//! the watch reported the task deleted.
//! Task IDs are 192 random bits (160 in IDs of earlier releases), known to nobody before their
//! create returns, so nobody but a guesser can ask for an ID before its task exists; a miss
//! recorded for an ID is therefore never followed by a task of that ID on another replica
//! (whose create the watch has not shown yet) except by a 2^-192 chance. The store also
//! re-checks its cache after recording a miss, which closes the window between the read and
//! the record.
//!
//! A mutex-guarded map rather than `moka`: one map with a TTL and a cap is a few dozen lines,
//! while moka brings a concurrent cache with its own eviction machinery and dependencies.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a miss is remembered.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(5);
/// IDs remembered at most.
pub const NEGATIVE_CAPACITY: usize = 10_000;

/// IDs known not to exist, with when that was learnt.
#[derive(Debug, Default)]
pub struct NegativeCache {
    entries: Mutex<HashMap<String, Instant>>,
}

impl NegativeCache {
    /// Whether a read at most [`NEGATIVE_TTL`] before `now` found no task `id`.
    pub fn contains(&self, id: &str, now: Instant) -> bool {
        self.lock()
            .get(id)
            .is_some_and(|at| now.saturating_duration_since(*at) < NEGATIVE_TTL)
    }

    /// Records that no task `id` existed at `now`. When full, expired entries go first, then
    /// all (forgetting a miss only costs a read).
    pub fn insert(&self, id: &str, now: Instant) {
        let mut entries = self.lock();
        if entries.len() >= NEGATIVE_CAPACITY {
            entries.retain(|_, at| now.saturating_duration_since(*at) < NEGATIVE_TTL);
            if entries.len() >= NEGATIVE_CAPACITY / 2 {
                entries.clear();
            }
        }
        entries.insert(id.to_owned(), now);
    }

    /// Forgets `id`: its task exists now.
    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_expire_are_forgotten_when_seen_and_stay_bounded() {
        let cache = NegativeCache::default();
        let start = Instant::now();
        cache.insert("a", start);
        assert!(cache.contains("a", start + NEGATIVE_TTL - Duration::from_millis(1)));
        assert!(!cache.contains("a", start + NEGATIVE_TTL));
        cache.insert("b", start);
        cache.remove("b");
        assert!(!cache.contains("b", start));
        for i in 0..NEGATIVE_CAPACITY * 3 {
            cache.insert(&i.to_string(), start);
            assert!(cache.lock().len() <= NEGATIVE_CAPACITY);
        }
    }
}
