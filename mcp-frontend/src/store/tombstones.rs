//! A short-lived, bounded memory of tasks this replica saw deleted, so that a write of its own
//! that raced the deletion (a cancel or `tasks/update` patch whose answer arrives after the
//! watch reported the delete) never brings the task back from the store's overlay of own
//! writes.
//!
//! An entry names the deleted object's UID: a new object that reuses the name (a different
//! UID) is not hidden. Entries live as long as an own write is preferred over the watch
//! ([`super::kube`]'s overlay TTL); after that no own write can resurface anyway.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Deleted tasks remembered at most. Past it expired entries go first, then all: forgetting
/// a deletion early only matters for a write that raced it in the same instant.
pub const TOMBSTONE_CAPACITY: usize = 10_000;

/// Task names seen deleted, with the deleted object's UID and when.
#[derive(Debug)]
pub struct Tombstones {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl Tombstones {
    /// Tombstones kept for `ttl` each.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::default(),
        }
    }

    /// Records that the object `name` with `uid` was deleted at `now`.
    pub fn insert(&self, name: &str, uid: Option<String>, now: Instant) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= TOMBSTONE_CAPACITY {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < ttl);
            if entries.len() >= TOMBSTONE_CAPACITY / 2 {
                entries.clear();
            }
        }
        entries.insert(name.to_owned(), (now, uid));
    }

    /// Whether the object `name` with `uid` was seen deleted less than the TTL before `now`.
    /// An unknown UID on either side counts as the same object.
    pub fn hides(&self, name: &str, uid: Option<&str>, now: Instant) -> bool {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .is_some_and(|(at, dead)| {
                now.saturating_duration_since(*at) < self.ttl
                    && (dead.is_none() || uid.is_none() || dead.as_deref() == uid)
            })
    }

    /// Forgets `name`: an object of that name (a new UID) exists again.
    pub fn remove(&self, name: &str) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tombstone_hides_its_own_object_only_and_expires_and_stays_bounded() {
        let ttl = Duration::from_secs(60);
        let tombstones = Tombstones::new(ttl);
        let start = Instant::now();
        tombstones.insert("a", Some("uid-1".to_owned()), start);
        assert!(tombstones.hides("a", Some("uid-1"), start));
        assert!(tombstones.hides("a", None, start));
        assert!(!tombstones.hides("a", Some("uid-2"), start), "a new object");
        assert!(!tombstones.hides("b", Some("uid-1"), start));
        assert!(!tombstones.hides("a", Some("uid-1"), start + ttl));
        tombstones.remove("a");
        assert!(!tombstones.hides("a", Some("uid-1"), start));
        for i in 0..TOMBSTONE_CAPACITY * 3 {
            tombstones.insert(&i.to_string(), None, start);
            assert!(tombstones.entries.lock().unwrap().len() <= TOMBSTONE_CAPACITY);
        }
    }
}
