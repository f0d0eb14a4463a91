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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures::future::join_all;

    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::{StoreError, TaskLookups};

    /// The in-memory store whose confirm reads take 10 ms and are counted.
    #[derive(Default)]
    struct SlowReads {
        inner: MemoryStore,
        reads: AtomicUsize,
    }

    impl TaskStore for SlowReads {
        fn create(&self, task: McpTask) -> BoxFuture<'_, Result<Arc<McpTask>, StoreError>> {
            self.inner.create(task)
        }
        fn get<'a>(
            &'a self,
            id: &'a str,
        ) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
            self.inner.get(id)
        }
        fn get_current<'a>(
            &'a self,
            id: &'a str,
        ) -> BoxFuture<'a, Result<Option<Arc<McpTask>>, StoreError>> {
            Box::pin(async move {
                self.reads.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                self.inner.get(id).await
            })
        }
        fn merge_input_responses<'a>(
            &'a self,
            id: &'a str,
            responses: std::collections::BTreeMap<String, serde_json::Value>,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            self.inner.merge_input_responses(id, responses)
        }
        fn request_cancel<'a>(
            &'a self,
            id: &'a str,
            at: k8s_openapi::jiff::Timestamp,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            self.inner.request_cancel(id, at)
        }
        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<McpTask>> {
            self.inner.subscribe()
        }
        fn is_synced(&self) -> bool {
            true
        }
        fn held(&self, owner: &str) -> crate::store::Held {
            self.inner.held(owner)
        }
        fn lookups(&self) -> &TaskLookups {
            self.inner.lookups()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_polls_share_one_read_and_late_ones_wait_for_the_next() {
        let slow = Arc::new(SlowReads::default());
        let store: Arc<dyn TaskStore> = slow.clone();
        let confirms = Confirms::default();
        // 64 polls arriving together: one read.
        let arrived = Instant::now();
        let polls = (0..64).map(|_| confirms.confirm(&store, "t", arrived));
        assert!(join_all(polls).await.iter().all(Result::is_ok));
        assert_eq!(slow.reads.load(Ordering::SeqCst), 1);
        // A poll that arrives while a read is under way does not join it: the read may have
        // begun before a newer state was answered elsewhere. It shares the next one.
        let first = Instant::now();
        let early = confirms.confirm(&store, "t", first);
        let late = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let arrived = Instant::now();
            assert!(arrived > first);
            let answers = join_all((0..8).map(|_| confirms.confirm(&store, "t", arrived))).await;
            assert!(answers.iter().all(Result::is_ok));
        };
        let _ = futures::join!(early, late);
        assert_eq!(
            slow.reads.load(Ordering::SeqCst),
            3,
            "one for the early poll, one shared by the late ones"
        );
    }
}
