//! Step 1, expire: an ended task past its expiry is deleted; a running one's expiry moves
//! ahead instead (a running task never disappears under its client).

use std::borrow::Cow;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::McpTask;

use super::super::apply;
use super::super::ttl::{Expiry, expiry, extension_window};
use super::{Ids, STALE_RETRY};
use crate::context::Context;
use crate::error::Result;

/// What the expire step leaves for the rest of the run.
#[expect(
    clippy::large_enum_variant,
    reason = "made and taken apart once per reconcile, never stored"
)]
pub enum Expired<'a> {
    /// The run ends here (the task was deleted, or must be read again).
    Stop(Action),
    /// Go on with `task` (its expiry moved, if it did), looking again within `until_expiry`.
    Go {
        /// The task, with the moved expiry the rest of the run must not write back.
        task: Cow<'a, McpTask>,
        /// Time to the task's expiry (or to the next move of a running task's), if it expires.
        until_expiry: Option<Duration>,
    },
}

/// Deletes an expired task, or moves a running task's expiry ahead, as of `now`.
pub async fn step<'a>(
    task: &'a McpTask,
    ctx: &Context,
    ids: &Ids,
    now: Timestamp,
) -> Result<Expired<'a>> {
    let go = |task, until_expiry| Ok(Expired::Go { task, until_expiry });
    match expiry(task, now) {
        Expiry::Now => {
            ctx.followers.stop(&ids.uid);
            ctx.record_write(&ids.uid, true);
            let note = "Task TTL elapsed; deleting the task".to_owned();
            ctx.publish(task, "Expired", note, false);
            apply::delete_task(&ctx.client, &ids.namespace, &ids.name).await?;
            Ok(Expired::Stop(Action::await_change()))
        }
        Expiry::Extend(to) => match apply::extend_expiry(&ctx.client, task, to).await? {
            apply::Patched::Stale => Ok(Expired::Stop(Action::requeue(STALE_RETRY))),
            apply::Patched::Done => {
                if task.expires_at() == task.requested_expiry() {
                    let note = "The task's TTL is ending while it still runs: its expiry \
                                moves ahead while it runs"
                        .to_owned();
                    ctx.publish(task, "TTLExtended", note, false);
                }
                go(
                    Cow::Owned(with_expiry(task, to)),
                    Some(extension_window(task) / 2),
                )
            }
        },
        Expiry::After(left) => go(Cow::Borrowed(task), Some(left)),
        Expiry::Never => go(Cow::Borrowed(task), None),
    }
}

/// `task` with `status.expiresAt` moved to `to`.
pub fn with_expiry(task: &McpTask, to: Timestamp) -> McpTask {
    let mut extended = task.clone();
    let status = extended.status.get_or_insert_with(Default::default);
    status.expires_at = Some(Time(to));
    extended
}
