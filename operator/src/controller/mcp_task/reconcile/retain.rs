//! Retention: an ended task's Job (and, by garbage collection, its pod) is deleted once the
//! task has been ended for `MCP_OPERATOR_FINISHED_JOB_RETENTION_SECONDS`; the task keeps its
//! result until its own TTL. Until then `kubectl logs job/<task>` shows the tool's log.
//!
//! The task is terminal only once its output was read (`follow.rs`), so nothing the task
//! needs is lost. The Job is read from the cache only: a Job the cache does not have yet is
//! deleted at a later run (or with the task, by garbage collection).

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::reflector::ObjectRef;
use mcp_task_operator_crds::McpTask;

use super::super::apply;
use super::super::cache;
use super::super::observe::controlled_by;
use super::Ids;
use crate::context::Context;
use crate::error::Result;

/// How soon to look again when the Job cache has not had its first list.
const CACHE_WAIT: Duration = Duration::from_secs(10);

/// When the ended `task`'s Job is due for deletion, as of `now`: `None` when it is now (or
/// the task has no end time), else the time left.
pub fn due_in(task: &McpTask, retention: Duration, now: Timestamp) -> Option<Duration> {
    let ended = task.status.as_ref()?.last_updated_at.as_ref()?.0;
    let retention = SignedDuration::try_from(retention).unwrap_or(SignedDuration::MAX);
    let left = ended
        .checked_add(retention)
        .map_or(SignedDuration::MAX, |due| due.duration_since(now));
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// Deletes the ended task's own Job once it is due; returns when to look again, if ever.
pub async fn step(
    task: &McpTask,
    ctx: &Context,
    ids: &Ids,
    now: Timestamp,
) -> Result<Option<Duration>> {
    let Some(caches) = ctx.caches.get() else {
        return Ok(None);
    };
    if !cache::ready(&caches.jobs) {
        return Ok(Some(CACHE_WAIT));
    }
    let name = super::super::job_record::job_name(task.status.as_ref(), &ids.name);
    let key = ObjectRef::new(name).within(&ids.namespace);
    let Some(job) = caches.jobs.get(&key) else {
        return Ok(None);
    };
    // A caller's session outlives its calls: the ended task gives it back.
    if crate::controller::warm_pool::session::is_session(&job) {
        crate::controller::warm_pool::session::release(ctx, &job, &ids.uid).await?;
        return Ok(None);
    }
    if !controlled_by(&job.metadata, &ids.uid) || job.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    if let Some(left) = due_in(task, ctx.config.scale.finished_job_retention, now) {
        return Ok(Some(left));
    }
    apply::delete_job(&ctx.client, &ids.namespace, name).await?;
    ctx.metrics.finished_job_deleted();
    Ok(None)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use mcp_task_operator_crds::{McpTaskStatus, TaskStatus};

    use super::*;
    use crate::fixtures::task;

    #[test]
    fn an_ended_tasks_job_is_due_after_the_retention() {
        let mut t = task();
        let ended: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
        t.status = Some(McpTaskStatus {
            status: TaskStatus::Completed,
            last_updated_at: Some(Time(ended)),
            ..McpTaskStatus::default()
        });
        let five = Duration::from_secs(300);
        let at = |s: i64| ended.checked_add(SignedDuration::from_secs(s)).unwrap();
        assert_eq!(due_in(&t, five, at(0)), Some(five));
        assert_eq!(due_in(&t, five, at(299)), Some(Duration::from_secs(1)));
        assert_eq!(due_in(&t, five, at(300)), None);
        assert_eq!(due_in(&t, five, at(3600)), None);
        assert_eq!(due_in(&t, Duration::ZERO, at(0)), None);
    }
}
