//! The active-task quota per caller: a `tools/call` is refused while its caller already holds
//! `MAX_ACTIVE_TASKS_PER_CALLER` tasks that are not terminal.
//!
//! The count comes from the task store (the watch cache plus this replica's own writes), and a
//! call on its way to the API server holds a reservation, so a burst of calls on one replica
//! cannot all pass the check before any of their creates is seen. Other replicas see a new
//! task once their watch delivers it (milliseconds), so a burst spread over `n` replicas can
//! pass the limit by at most what each lets through in that time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::store::TaskStore;

/// Reservations of calls between the check and their create, by caller.
#[derive(Debug)]
pub struct ActiveTaskQuota {
    limit: usize,
    pending: Mutex<HashMap<String, usize>>,
}

/// A place in the quota held until the task is created (then the store counts it) or the
/// call ends without one; dropping it frees the place.
#[derive(Debug)]
pub struct Reservation {
    quota: Arc<ActiveTaskQuota>,
    owner: String,
}

impl ActiveTaskQuota {
    /// A quota of `limit` active tasks per caller.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            pending: Mutex::default(),
        }
    }

    /// Reserves a place for one more task of `owner`, or says how many it holds.
    pub fn reserve(self: &Arc<Self>, tasks: &dyn TaskStore, owner: &str) -> Result<Reservation> {
        // NB: the count and the reservation happen under one lock, so two calls cannot both
        // take the last place.
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let reserved = pending.get(owner).copied().unwrap_or(0);
        let active = tasks.active_tasks(owner) + reserved;
        if active >= self.limit {
            return Err(Error::ActiveTaskQuota {
                active,
                limit: self.limit,
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
