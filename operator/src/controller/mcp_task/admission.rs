//! Per-tool concurrency (`McpTool.spec.maxConcurrentTasks`): which task may get its Job now.
//!
//! The decision reads the tasks (as the controller's cache holds them), so the queue lives in
//! the cluster and survives an operator failover. A task holds a slot from the moment its Job is
//! recorded (`status.jobName`) until it ends; a task without a recorded Job, not ended and not
//! being cancelled, waits in the queue. The queue is fair across callers (`spec.owner`): it is
//! ordered by each task's round (the slots its caller holds for the tool plus the caller's
//! queued tasks created before it), then by when the caller last got a slot (never first),
//! then `creationTimestamp`, then name. So callers take turns: one caller's many early tasks
//! never hold the head of the queue ahead of another caller's, and a caller's own tasks keep
//! their order. A task is admitted when the slots held plus the
//! queued tasks ahead of it are below the limit.
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

use k8s_openapi::jiff::Timestamp;
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
    let mut pending_seen = 0;
    let mut callers = Callers::default();
    // The queue, with `task` in it whatever its state.
    let mut queued: Vec<&McpTask> = vec![task];
    for other in tasks {
        if other.uid() == uid || !same_tool(task, other) {
            continue;
        }
        let owner = other.spec.owner.as_str();
        let is_pending = other.uid().is_some_and(|u| pending.contains(&u));
        if is_pending || job_record::recorded(other.status.as_ref()) {
            // Ended tasks still tell when their caller last got a slot.
            callers.served(owner, if is_pending { None } else { served_at(other) });
        }
        if other.is_terminal() {
            continue;
        }
        if is_pending {
            pending_seen += 1;
        }
        if is_pending || job_record::recorded(other.status.as_ref()) {
            active += 1;
            *callers.held.entry(owner).or_default() += 1;
        } else if is_queued(other) {
            queued.push(other);
        }
    }
    // Admitted, though `tasks` has not seen them yet (their callers unknown: no round).
    active += pending.len().saturating_sub(pending_seen);
    let ahead = callers
        .order(queued)
        .iter()
        .take_while(|t| t.uid() != uid)
        .count();
    match active + ahead < limit {
        true => Admission::Admit,
        false => Admission::Queued { ahead },
    }
}

/// What the fair order knows of each caller of one tool.
#[derive(Default)]
struct Callers<'a> {
    /// Slots held now.
    held: HashMap<&'a str, usize>,
    /// When the caller's latest task got its slot (`Timestamp::MAX`: just now, not confirmed).
    last_served: HashMap<&'a str, Timestamp>,
}

impl<'a> Callers<'a> {
    /// Notes that a task of `owner` got a slot at `at` (`None`: just now).
    fn served(&mut self, owner: &'a str, at: Option<Timestamp>) {
        let at = at.unwrap_or(Timestamp::MAX);
        let last = self.last_served.entry(owner).or_insert(at);
        *last = (*last).max(at);
    }

    /// `queued` in the queue's order: by round (slots the caller holds plus its queued tasks
    /// before this one, in creation order), then by when the caller last got a slot (never
    /// first), then creation order.
    fn order(&self, mut queued: Vec<&'a McpTask>) -> Vec<&'a McpTask> {
        queued.sort_by(|a, b| queue_order(a, b));
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut keys = Vec::with_capacity(queued.len());
        for (position, t) in queued.iter().enumerate() {
            let owner = t.spec.owner.as_str();
            let before = seen.entry(owner).or_default();
            let round = self.held.get(owner).copied().unwrap_or(0) + *before;
            *before += 1;
            keys.push((round, self.last_served.get(owner).copied(), position));
        }
        keys.sort_unstable();
        keys.into_iter().map(|(_, _, i)| queued[i]).collect()
    }
}

/// When `task` got its slot: when its Job was confirmed created; `None` while it is only
/// recorded (the Job is on its way: just now).
fn served_at(task: &McpTask) -> Option<Timestamp> {
    let status = task.status.as_ref()?;
    status
        .conditions
        .iter()
        .find(|c| c.type_ == job_record::JOB_CREATED_CONDITION)
        .map(|c| c.last_transition_time.0)
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
