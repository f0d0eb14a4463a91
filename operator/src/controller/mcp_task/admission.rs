//! Per-tool concurrency (`McpTool.spec.maxConcurrentTasks`): which task may get its Job now.
//!
//! The decision reads the tasks (as the controller's cache holds them), so the queue lives in
//! the cluster and survives an operator failover. A task holds a slot from the moment its Job is
//! recorded (`status.jobName`) until it ends; a task without a recorded Job, not ended and not
//! being cancelled, waits in the queue, ordered by `creationTimestamp`, then name. A task is
//! admitted when the slots held plus the queued tasks ahead of it are below the limit, so a task
//! never overtakes an earlier one.
//!
//! The cache learns of a recorded Job only after the status write comes back through the watch,
//! and reconciles of several tasks run at once: two of them reading the same cache would both
//! see a free slot. So [`Admitted`] makes each decision and its record one step under a lock, and
//! a task this replica admitted holds its slot from that moment until the cache shows its Job
//! (or its end).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use mcp_task_operator_crds::McpTask;

use super::job_record;
use crate::lock;

/// How long a task this replica admitted holds its slot while the cache has not seen the task
/// at all: long enough for any watch lag; a task deleted before the cache saw it frees the slot
/// then.
pub const UNSEEN_ADMITTED: Duration = Duration::from_secs(60);

/// Tasks this replica admitted whose Job its cache does not show yet: UID -> (the tool's
/// namespace and name, when admitted).
#[derive(Debug, Default)]
pub struct Admitted(Mutex<HashMap<String, (String, Instant)>>);

impl Admitted {
    /// [`admit`] for `task` over `tasks` (its tool's and others, as any version) and the tasks
    /// this replica admitted before, recording `task` when it is admitted; one step for
    /// concurrent reconciles. A task admitted before is admitted again (its Job is on its way).
    pub fn decide<'a>(
        &self,
        task: &McpTask,
        limit: usize,
        tasks: impl IntoIterator<Item = &'a McpTask>,
    ) -> Admission {
        let uid = task.uid().unwrap_or_default();
        let mut admitted = lock(&self.0);
        if admitted.contains_key(&uid) {
            return Admission::Admit;
        }
        let tasks: Vec<&McpTask> = tasks.into_iter().collect();
        let by_uid: HashMap<String, &McpTask> =
            tasks.iter().filter_map(|t| Some((t.uid()?, *t))).collect();
        // Forget the tasks the cache now shows with their Job or ended.
        admitted.retain(|uid, (_, at)| match by_uid.get(uid) {
            Some(t) => !t.is_terminal() && !job_record::recorded(t.status.as_ref()),
            None => at.elapsed() < UNSEEN_ADMITTED,
        });
        let key = tool_key(task);
        let pending: HashSet<String> = admitted
            .iter()
            .filter(|(_, (k, _))| *k == key)
            .map(|(uid, _)| uid.clone())
            .collect();
        let admission = admit(task, limit, tasks, &pending);
        if admission == Admission::Admit {
            admitted.insert(uid, (key, Instant::now()));
        }
        admission
    }
}

/// A tool's key among the admitted: its namespace and MCP name.
fn tool_key(task: &McpTask) -> String {
    format!(
        "{}/{}",
        task.namespace().unwrap_or_default(),
        task.spec.tool
    )
}

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
/// task of the cluster `tasks` (the task itself may be among them, as any version) and the UIDs
/// of the tool's tasks admitted before whose Job `tasks` does not show yet (`pending`, which
/// hold a slot whether or not `tasks` has them at all).
pub fn admit<'a>(
    task: &McpTask,
    limit: usize,
    tasks: impl IntoIterator<Item = &'a McpTask>,
    pending: &HashSet<String>,
) -> Admission {
    let uid = task.uid();
    let mut active = 0;
    let mut ahead = 0;
    let mut pending_seen = 0;
    for other in tasks {
        if other.uid() == uid || !same_tool(task, other) || other.is_terminal() {
            continue;
        }
        if other.uid().is_some_and(|u| pending.contains(&u)) {
            pending_seen += 1;
            active += 1;
        } else if job_record::recorded(other.status.as_ref()) {
            active += 1;
        } else if is_queued(other) && queue_order(other, task) == Ordering::Less {
            ahead += 1;
        }
    }
    // Admitted, though `tasks` has not seen them yet.
    active += pending.len().saturating_sub(pending_seen);
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
