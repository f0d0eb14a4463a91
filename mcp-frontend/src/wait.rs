//! Waiting, inside one `tools/call`, for the task it created: a synchronous call waits for
//! the result, and a call of a tool with `immediateResultMs` waits that long before it answers
//! with the task handle.

use std::sync::Arc;
use std::time::Duration;

use mcp_task_operator_crds::{McpTask, TaskStatus};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::error::{Error, Result};
use crate::state::AppState;
use crate::wire;

/// How a wait ended.
#[derive(Debug)]
pub enum Waited {
    /// The task is terminal, or needs input its client can give ([`needs_client`]).
    Settled(Arc<McpTask>),
    /// The limit passed first; the task as last seen.
    TimedOut(Arc<McpTask>),
}

/// Whether `task` waits for its client: `input_required` with at least one outstanding
/// request the client is shown. Requests it is not shown are answered by the front end
/// ([`crate::unanswerable`]), so they leave the task running.
pub fn needs_client(task: &McpTask) -> bool {
    task.task_status() == TaskStatus::InputRequired
        && task
            .outstanding_input_requests()
            .values()
            .any(|request| wire::is_shown(task, request))
}

/// Waits, through the store's change feed `changes` (subscribed before the task was created,
/// so that no change is missed), until `current` is terminal or [`needs_client`], or `limit`
/// passes.
pub async fn wait_for_task(
    state: &AppState,
    mut current: Arc<McpTask>,
    changes: &mut broadcast::Receiver<Arc<McpTask>>,
    limit: Duration,
) -> Result<Waited> {
    let id = current.task_id().to_owned();
    let deadline = tokio::time::Instant::now() + limit;
    while !current.is_terminal() && !needs_client(&current) {
        // Deleted before it finished: nothing will ever finish it.
        if crate::store::is_deleted(&current) {
            return Err(Error::TaskDeleted { task_id: id });
        }
        let Ok(change) = tokio::time::timeout_at(deadline, changes.recv()).await else {
            return Ok(Waited::TimedOut(current));
        };
        match change {
            Ok(task) if task.task_id() == id => current = task,
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => match state.tasks.get(&id).await? {
                Some(task) => current = task,
                None => return Err(Error::TaskDeleted { task_id: id }),
            },
            Err(RecvError::Closed) => {
                return Err(Error::Store(crate::store::StoreError::Unavailable {
                    operation: "watch",
                }));
            }
        }
    }
    Ok(Waited::Settled(current))
}
