//! Confirm reads shared by concurrent polls of one task (single flight), without weakening
//! "status never goes backwards" (`docs/CONFORMANCE.md#status-never-backwards`): a poll joins
//! only a read that began after the poll arrived, so the state it is answered with is never
//! older than any state any replica answered before it arrived. A poll that arrives while an
//! older read is under way waits for it and then shares the next one: N pollers of one task
//! cost at most two reads at a time, not N.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use mcp_task_operator_crds::McpTask;
use std::time::Instant;

use crate::store::TaskStore;

/// What a confirm read found: the task's current state, `None` when it is gone, `Err` when
/// the read failed (the poll then takes the full path, which reports the failure).
pub type Confirmed = Result<Option<Arc<McpTask>>, ()>;

type Flight = Shared<BoxFuture<'static, Confirmed>>;

/// The confirm reads under way, by task ID.
#[derive(Default)]
pub struct Confirms {
    under_way: Mutex<HashMap<String, (Instant, u64, Flight)>>,
    next: Mutex<u64>,
}

impl Confirms {
    /// The current state of `id` ([`TaskStore::get_current`]) from a read that began no
    /// earlier than `arrived`, shared with every poll that can share it.
    pub async fn confirm(
        &self,
        store: &Arc<dyn TaskStore>,
        id: &str,
        arrived: Instant,
    ) -> Confirmed {
        loop {
            let (number, flight, joinable) = {
                let mut under_way = self
                    .under_way
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                match under_way.get(id) {
                    Some((began, number, flight)) => (*number, flight.clone(), *began >= arrived),
                    None => {
                        let number = {
                            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
                            *next += 1;
                            *next
                        };
                        let (store, key) = (store.clone(), id.to_owned());
                        let flight = async move { store.get_current(&key).await.map_err(|_| ()) }
                            .boxed()
                            .shared();
                        under_way.insert(id.to_owned(), (Instant::now(), number, flight.clone()));
                        (number, flight, true)
                    }
                }
            };
            let found = flight.await;
            self.finished(id, number);
            // A read that began before this poll arrived may miss a newer state: wait for
            // the next one.
            if joinable {
                return found;
            }
        }
    }

    /// Forgets flight `number` of `id` once it has landed (a later flight stays).
    fn finished(&self, id: &str, number: u64) {
        let mut under_way = self
            .under_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if under_way.get(id).is_some_and(|(_, n, _)| *n == number) {
            under_way.remove(id);
        }
    }
}
