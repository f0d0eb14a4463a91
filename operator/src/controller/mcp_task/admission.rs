//! Per-tool concurrency (`McpTool.spec.maxConcurrentTasks`): which task may get its Job now.
//!
//! Pure: the decision reads only the tasks (as the controller's cache holds them), so the
//! queue lives in the cluster and survives an operator failover. A task holds a slot from the
//! moment its Job is recorded (`status.jobName`) until it ends; a task without a recorded Job,
//! not ended and not being cancelled, waits in the queue, ordered by `creationTimestamp`, then
//! name. A task is admitted when the slots held plus the queued tasks ahead of it are below the
//! limit, so a task never overtakes an earlier one.

use std::cmp::Ordering;

use kube::ResourceExt;
use mcp_task_operator_crds::McpTask;

use super::job_record;

/// Whether a task may get its Job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Create its Job.
    Admit,
    /// Wait: `ahead` queued tasks come before it (and every slot is taken).
    Queued {
        /// Queued tasks of the tool created before it.
        ahead: usize,
    },
}

/// The status message of a queued task.
pub fn queued_message(ahead: usize) -> String {
    format!("Queued: {ahead} ahead")
}

/// Whether `task` (of the tool limited to `limit` tasks at once) may get its Job, given every
/// task of the cluster `tasks` (the task itself may be among them, as any version).
pub fn admit<'a>(
    task: &McpTask,
    limit: usize,
    tasks: impl IntoIterator<Item = &'a McpTask>,
) -> Admission {
    let uid = task.uid();
    let mut active = 0;
    let mut ahead = 0;
    for other in tasks {
        if other.uid() == uid || !same_tool(task, other) || other.is_terminal() {
            continue;
        }
        if job_record::recorded(other.status.as_ref()) {
            active += 1;
        } else if is_queued(other) && queue_order(other, task) == Ordering::Less {
            ahead += 1;
        }
    }
    match active + ahead < limit {
        true => Admission::Admit,
        false => Admission::Queued { ahead },
    }
}

/// The queued tasks of the same tool as `task` (not `task` itself), as the cache holds them:
/// the ones to look at again once `task` ends.
pub fn queued_of_tool<'a>(
    task: &'a McpTask,
    tasks: impl IntoIterator<Item = &'a McpTask> + 'a,
) -> impl Iterator<Item = &'a McpTask> + 'a {
    let uid = task.uid();
    tasks.into_iter().filter(move |other| {
        other.uid() != uid && same_tool(task, other) && !other.is_terminal() && is_queued(other)
    })
}

/// Waiting for a slot: no Job recorded, and not being cancelled (a cancelled task gets none).
fn is_queued(task: &McpTask) -> bool {
    !job_record::recorded(task.status.as_ref()) && !task.is_cancel_requested()
}

fn same_tool(a: &McpTask, b: &McpTask) -> bool {
    a.spec.tool == b.spec.tool && a.namespace() == b.namespace()
}

/// The queue's order: `creationTimestamp`, then name.
fn queue_order(a: &McpTask, b: &McpTask) -> Ordering {
    let key = |t: &McpTask| {
        (
            t.metadata.creation_timestamp.as_ref().map(|c| c.0),
            t.metadata.name.clone(),
        )
    };
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests;
