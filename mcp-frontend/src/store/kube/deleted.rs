//! How the kube-backed store forgets deleted tasks: on a delete event, and when a fresh list
//! no longer holds a task the cache or this replica's overlay had (its delete event lost).

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use mcp_task_operator_crds::McpTask;

use super::KubeTaskStore;

impl KubeTaskStore {
    /// The list that (re)started the watch is complete, and the reflector now holds it: every
    /// task cached before it, or written by this replica before it began, that it does not
    /// hold was deleted while the watch was away (its delete event is lost).
    pub(super) fn end_relist(&self) {
        let Some((started, before)) = self
            .relist
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let listed = |name: &str| {
            self.cache
                .get(&ObjectRef::new(name).within(&self.namespace))
                .is_some()
        };
        for guard in before {
            let name = guard.name_any();
            if !listed(&name) {
                let last = guard.0.as_ref().ok().cloned().map(Arc::new);
                self.deleted(&name, guard.uid(), last);
            }
        }
        let gone: Vec<(String, Arc<McpTask>)> = self
            .overlay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(name, (at, _))| *at < started && !listed(name))
            .map(|(name, (_, task))| (name.clone(), task.clone()))
            .collect();
        for (name, task) in gone {
            self.deleted(&name, task.uid(), Some(task));
        }
    }

    /// The task `name` is gone: out of the overlay, remembered as deleted (and as missing, so
    /// the next lookup costs no API read), and published once more, marked deleted, so that
    /// listeners and waiters learn of it. `last` is its final state, when known.
    pub(super) fn deleted(&self, name: &str, uid: Option<String>, last: Option<Arc<McpTask>>) {
        let own = self
            .overlay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name)
            .map(|(_, task)| task);
        let now = Instant::now();
        self.tombstones.insert(name, uid, now);
        self.misses.insert(name, now);
        if let Some(last) = last.or(own) {
            let _ = self.changes.send(crate::store::tombstone(&last));
        }
    }
}
