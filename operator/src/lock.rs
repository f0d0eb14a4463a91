//! Locking the operator's in-memory state.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex, recovering the data if a holder panicked (the state stays usable).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
