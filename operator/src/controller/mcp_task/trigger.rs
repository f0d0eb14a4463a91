//! Which task updates trigger a reconcile: every change but one to the status alone.
//!
//! The operator writes each running task's status many times (progress, expiry); each write
//! comes back as a watch event, and reconciling on it would cost a run for nothing (the run
//! that wrote it knew what it wrote, and requeues itself when it needs to look again). A
//! client's changes all show outside the status: `tasks/update` answers change the spec (and
//! so `metadata.generation`); a cancel sets the `mcptasks.io/cancel-requested` annotation;
//! deletion sets `deletionTimestamp`. The reconciler reads the task from the cache (always
//! current, the filter comes after it), so a filtered event loses nothing.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use kube::Resource;
use kube::core::DeserializeGuard;
use mcp_task_operator_crds::McpTask;

/// A hash of everything of `task` but its status (and resourceVersion): generation, labels,
/// annotations, finalizers, deletion timestamp, owner references. Equal hashes: only the
/// status changed, no reconcile.
pub fn beyond_status(task: &DeserializeGuard<McpTask>) -> Option<u64> {
    let meta = task.meta();
    let mut hasher = DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .hash(&mut hasher);
    meta.owner_references
        .iter()
        .flatten()
        .map(|r| &r.uid)
        .collect::<Vec<_>>()
        .hash(&mut hasher);
    // A task the operator cannot parse has no status to tell apart: every change counts.
    if task.0.is_err() {
        meta.resource_version.hash(&mut hasher);
    }
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::task;
    use kube::ResourceExt;
    use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTaskStatus, TaskStatus};

    fn hash(t: &McpTask) -> Option<u64> {
        beyond_status(&DeserializeGuard(Ok(t.clone())))
    }

    #[test]
    fn a_status_write_triggers_nothing_a_cancel_an_answer_or_a_deletion_does() {
        let mut t = task();
        t.metadata.generation = Some(1);
        t.metadata.resource_version = Some("1".into());
        let before = hash(&t);
        let mut written = t.clone();
        written.status = Some(McpTaskStatus {
            status: TaskStatus::Working,
            status_message: Some("50%".into()),
            ..McpTaskStatus::default()
        });
        written.metadata.resource_version = Some("2".into());
        assert_eq!(hash(&written), before, "a status-only update is filtered");

        let mut cancelled = t.clone();
        cancelled.annotations_mut().insert(
            CANCEL_REQUESTED_ANNOTATION.into(),
            "2026-12-02T00:00:00Z".into(),
        );
        assert_ne!(hash(&cancelled), before, "a cancel triggers");

        let mut answered = t.clone();
        answered.metadata.generation = Some(2);
        assert_ne!(
            hash(&answered),
            before,
            "tasks/update (a spec change) triggers"
        );

        let mut deleted = t.clone();
        deleted.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-12-02T00:00:00Z".parse().unwrap(),
            ));
        assert_ne!(hash(&deleted), before, "a deletion triggers");
    }
}
