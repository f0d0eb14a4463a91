//! What one caller may make the system hold, checked at each `tools/call`: tasks not yet
//! terminal (`MAX_ACTIVE_TASKS_PER_CALLER`), tasks stored, finished ones included
//! (`MAX_STORED_TASKS_PER_CALLER`), and their bytes (`MAX_STORED_BYTES_PER_CALLER`). Every
//! front-end replica and the operator cache every task until its TTL deletes it, so finished
//! tasks cost as much as running ones; a call beyond any limit is refused and stores nothing.
//!
//! The counts come from the task store (the watch cache plus this replica's own writes), and a
//! call on its way to the API server holds a reservation, so a burst of calls on one replica
//! cannot all pass the check before any of their creates is seen. Other replicas see a new
//! task once their watch delivers it (milliseconds), so a burst spread over `n` replicas can
//! pass a limit by at most what each lets through in that time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::store::TaskStore;

/// The three limits per caller; 0 turns one off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaLimits {
    /// Tasks not yet terminal.
    pub active: usize,
    /// Tasks stored, finished ones included.
    pub stored: usize,
    /// Bytes of the stored tasks' client inputs and results.
    pub bytes: usize,
}

impl QuotaLimits {
    /// Whether any limit is on.
    pub fn any(&self) -> bool {
        self.active > 0 || self.stored > 0 || self.bytes > 0
    }
}

/// Reservations of calls between the check and their create, by caller.
#[derive(Debug)]
pub struct CallerQuota {
    limits: QuotaLimits,
    pending: Mutex<HashMap<String, usize>>,
}

/// A place in the quota held until the task is created (then the store counts it) or the
/// call ends without one; dropping it frees the place.
#[derive(Debug)]
pub struct Reservation {
    quota: Arc<CallerQuota>,
    owner: String,
}

impl CallerQuota {
    /// A quota with `limits` per caller.
    pub fn new(limits: QuotaLimits) -> Self {
        Self {
            limits,
            pending: Mutex::default(),
        }
    }

    /// Reserves a place for one more task of `owner`, or says which limit it has reached.
    pub fn reserve(self: &Arc<Self>, tasks: &dyn TaskStore, owner: &str) -> Result<Reservation> {
        // NB: the count and the reservation happen under one lock, so two calls cannot both
        // take the last place.
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let reserved = pending.get(owner).copied().unwrap_or(0);
        let held = tasks.held(owner);
        let QuotaLimits {
            active,
            stored,
            bytes,
        } = self.limits;
        if active > 0 && held.active + reserved >= active {
            return Err(Error::ActiveTaskQuota {
                active: held.active + reserved,
                limit: active,
            });
        }
        if stored > 0 && held.stored + reserved >= stored {
            return Err(Error::StoredTaskQuota {
                stored: held.stored + reserved,
                limit: stored,
            });
        }
        if bytes > 0 && held.bytes >= bytes {
            return Err(Error::StoredBytesQuota {
                bytes: held.bytes,
                limit: bytes,
            });
        }
        *pending.entry(owner.to_owned()).or_default() += 1;
        Ok(Reservation {
            quota: self.clone(),
            owner: owner.to_owned(),
        })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut pending = self
            .quota
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = pending.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                pending.remove(&self.owner);
            }
        }
    }
}
