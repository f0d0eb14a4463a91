//! Step 3a, the tool's concurrency limit: before a task's Job is first recorded, [`check`]
//! says whether the task must wait for a slot ([`admission::Admitted::decide`], over the tasks
//! the controller's cache holds and those this replica admitted); [`wake`] looks again at the queued tasks of a tool when one
//! of its tasks ends, so a freed slot is taken at once.

use std::sync::Arc;
use std::time::Duration;

use kube::api::ListParams;
use kube::core::DeserializeGuard;
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::{McpTask, McpTool};

use super::super::admission::{self, Admission};
use crate::context::{Context, TaskRef};
use crate::error::{Error, KubeOp, Result};

/// How often a queued task is looked at again without a wake-up: a fallback, and how soon its
/// "N ahead" follows the tasks ahead of it that are cancelled.
pub const QUEUE_POLL: Duration = Duration::from_secs(10);

/// `Some(ahead)` when `task` must wait for a slot of `tool`'s concurrency limit.
pub async fn check(task: &McpTask, tool: Option<&McpTool>, ctx: &Context) -> Result<Option<usize>> {
    let Some(limit) = tool.and_then(|t| t.spec.max_concurrent_tasks) else {
        return Ok(None);
    };
    let limit = usize::try_from(limit).unwrap_or(0);
    let cached = cached_tasks(ctx);
    let in_cache = tasks_of(&cached).any(|t| t.uid() == task.uid());
    let admission = match in_cache {
        true => ctx.admitted.decide(task, limit, tasks_of(&cached)),
        // The cache has not seen the task yet (it is still syncing): ask the API server.
        false => {
            let namespace = task.namespace().unwrap_or_default();
            let api: Api<DeserializeGuard<McpTask>> =
                Api::namespaced(ctx.client.clone(), &namespace);
            let list = api
                .list(&ListParams::default())
                .await
                .map_err(|e| Error::kube(KubeOp::List, "McpTask", &namespace, e))?;
            let tasks: Vec<McpTask> = list.items.into_iter().filter_map(|g| g.0.ok()).collect();
            ctx.admitted.decide(task, limit, &tasks)
        }
    };
    Ok(match admission {
        Admission::Admit => None,
        Admission::Queued { ahead } => Some(ahead),
    })
}

/// Asks for a reconcile of every queued task of `task`'s tool, when that tool limits its
/// concurrency (other tools' tasks never queue). Called for an ended task.
pub fn wake(task: &McpTask, ctx: &Context) {
    let namespace = task.namespace();
    let limited = ctx.tools.get().is_some_and(|tools| {
        tools
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .any(|tool| {
                tool.namespace() == namespace
                    && tool.mcp_name() == task.spec.tool
                    && tool.spec.max_concurrent_tasks.is_some()
            })
    });
    if !limited {
        return;
    }
    let cached = cached_tasks(ctx);
    for queued in admission::queued_of_tool(task, tasks_of(&cached)) {
        let Some(ns) = queued.namespace() else {
            continue;
        };
        // NB: the controller merges this with any reconcile of the task already due.
        let _ = ctx
            .trigger
            .unbounded_send(TaskRef::new(&queued.name_any()).within(&ns));
    }
}

/// The tasks of the controller's cache (none before the controller runs).
fn cached_tasks(ctx: &Context) -> Vec<Arc<DeserializeGuard<McpTask>>> {
    ctx.tasks
        .get()
        .map(|store| store.state())
        .unwrap_or_default()
}

/// The tasks among `cached` that parse.
fn tasks_of(cached: &[Arc<DeserializeGuard<McpTask>>]) -> impl Iterator<Item = &McpTask> {
    cached.iter().filter_map(|g| g.0.as_ref().ok())
}
