//! The McpTask reconciler: level-triggered and idempotent. Each run derives everything from the
//! task, its Job, its pod and the pod's logs, as of one `now`, in named steps:
//!
//! 1. [`expire`]: delete an ended task past its expiry; move a running one's expiry ahead;
//! 2. resolve the tool ([`apply::find_tool`]);
//! 3. [`ensure`]: the one Job, recorded, created and confirmed (`job_record`);
//! 4. [`inspect`]: its pods and what they do, the start deadlines, the pod's annotations;
//! 5. [`progress`]: follow the tool container's log;
//! 6. decide ([`decide`]): the outcome and the action it calls for;
//! 7. [`write`]: carry out the action, write the status, publish the Event, requeue.
//!
//! An ended task runs step 1 and [`retain`]: its Job is deleted after the retention.
//!
//! Steps 1, 3 and 4 decide by pure functions ([`expiry`](super::ttl::expiry), [`ensure::plan`],
//! [`start_deadline`](super::observe::start_deadline)); the decision is [`decide`], pure too.

mod ensure;
mod expire;
mod inspect;
mod progress;
mod queue;
mod retain;
mod warm;
mod write;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_crds::mcp_tool::DEFAULT_CANCEL_GRACE_PERIOD_SECONDS;
use mcp_task_operator_telemetry::SPAN_TARGET;
use tracing::Instrument;

use super::apply;
use super::build::task_traceparent;
use super::follow::FollowState;
use super::job_record;
use super::observe::{Workload, select_pod, tool_container_finished};
use super::outcome::{Observation, Outcome, cancel_requested_at, decide};
use super::status::checkpoint_of;
use super::{attempts, idle, input_timeout};
use crate::context::Context;
use crate::controller::reconcile_guarded;
use crate::error::{Error, Result};
use crate::lock;

/// Name of this controller in metrics and logs.
pub const CONTROLLER: &str = "mcptask";
/// How soon to look again at a task whose expiry could not be moved because it changed since
/// it was read (its watch event brings it back sooner, as a rule).
const STALE_RETRY: Duration = Duration::from_millis(500);
/// How soon to look again at a task whose cached copy is older than this replica's last status
/// write to it: the watch brings a write back within milliseconds, as a rule.
const BEHIND_RETRY: Duration = Duration::from_millis(100);

/// Reconciles one task; a task the operator cannot even parse gets a Warning Event and waits
/// for a change. Its span joins the task's trace (the front end's `tools/call` span, from the
/// `mcptasks.io/traceparent` annotation) when there is one.
pub async fn reconcile(guard: Arc<DeserializeGuard<McpTask>>, ctx: Arc<Context>) -> Result<Action> {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "reconcile",
        name = %guard.name_any(),
        namespace = guard.namespace(),
        otel.status_code = tracing::field::Empty,
    );
    if let Some(parent) = guard.0.as_ref().ok().and_then(task_traceparent) {
        mcp_task_operator_telemetry::set_parent(&span, &parent);
    }
    let result = reconcile_guarded(&guard, &ctx, CONTROLLER, |task| {
        reconcile_task(task, &ctx, Timestamp::now())
    })
    .instrument(span.clone())
    .await;
    if result.is_err() {
        span.record("otel.status_code", "error");
    }
    result
}

/// Namespace, UID and name of the task being reconciled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.name` (the task ID, and the Job's name).
    pub name: String,
}

impl Ids {
    /// The task's IDs; a task the API server stored always has them.
    pub fn of(task: &McpTask) -> Result<Self> {
        let missing = |field| Error::MissingField {
            kind: "McpTask",
            field,
        };
        Ok(Self {
            namespace: task.namespace().ok_or(missing("metadata.namespace"))?,
            uid: task.uid().ok_or(missing("metadata.uid"))?,
            name: task.name_any(),
        })
    }
}

/// The driver: runs the steps in order; any step may end the run with its own action.
async fn reconcile_task(task: &McpTask, ctx: &Context, now: Timestamp) -> Result<Action> {
    let ids = Ids::of(task)?;
    // This replica wrote the task's terminal status, which never changes, and the cache has not
    // shown it yet: nothing to read, follow or write until it does.
    if !task.is_terminal() && ctx.ended_here(&ids.uid, false) {
        return Ok(Action::requeue(STALE_RETRY));
    }
    // The cache has not brought back this replica's last status write (the watch event of a
    // Job or pod came first): deciding from the status it replaced would write it again. The
    // operator's own writes trigger no reconcile, so look again shortly.
    if ctx.cache_behind(&ids.uid, task.metadata.resource_version.as_deref()) {
        return Ok(Action::requeue(BEHIND_RETRY));
    }
    // 1. Expire.
    let (task, until_expiry) = match expire::step(task, ctx, &ids, now).await? {
        expire::Expired::Stop(action) => return Ok(action),
        expire::Expired::Go { task, until_expiry } => (task, until_expiry),
    };
    let mut waits: Vec<Duration> = until_expiry.into_iter().collect();
    if task.is_terminal() {
        ctx.ended_here(&ids.uid, true);
        queue::wake(&task, ctx);
        ctx.followers.stop(&ids.uid);
        ctx.record_write(&ids.uid, true);
        waits.extend(retain::step(&task, ctx, &ids, now).await?);
        return Ok(write::requeue(&waits));
    }
    // 2. Resolve the tool.
    let tool = apply::find_tool(&ctx.client, ctx.tools.get(), &ids.namespace, &task).await?;
    let cancel_at = cancel_requested_at(&task);
    // 3. Ensure the Job.
    let (task, job) = match ensure::step(&task, tool.as_ref(), ctx, &ids, cancel_at, now).await? {
        ensure::Ensured::Stop(action) => return Ok(action),
        ensure::Ensured::Finish {
            task,
            decision,
            poll,
        } => {
            waits.extend(poll);
            return write::step(&task, ctx, &ids.uid, &decision, None, waits, now).await;
        }
        ensure::Ensured::Go { task, job } => (task, job),
    };
    // 4. Observe.
    let (pods, workload, start_wake) =
        match inspect::step(&task, ctx, &ids, job.as_ref(), cancel_at, now).await? {
            inspect::Inspected::Finish(decision) => {
                return write::step(&task, ctx, &ids.uid, &decision, job.as_ref(), waits, now)
                    .await;
            }
            inspect::Inspected::Seen {
                pods,
                workload,
                start_wake,
            } => (pods, workload, start_wake),
        };
    // A Job waiting for its queue, or retrying a disruption, is not failing; one its queue
    // took back is, unless it retries.
    let pod = select_pod(&pods);
    let followed = task.status.as_ref().and_then(checkpoint_of);
    let seen = attempts::Pods {
        current: pod.and_then(|p| p.metadata.uid.as_deref()),
        followed: followed.as_ref().map(|c| c.pod_uid.as_str()),
    };
    let workload = attempts::adjust(workload, job.as_ref(), seen);
    let admission_limit = inspect::signed(ctx.config.admission_timeout);
    let (workload, admission_wake) =
        attempts::admission_deadline(workload, job.as_ref(), admission_limit, now);
    // Nothing need change on the objects for a start grace period to end: look again then
    // (any other change to the start comes as a watch event of the pod or the Job).
    if matches!(workload, Workload::Starting { .. }) {
        waits.extend(start_wake);
        waits.extend(admission_wake.and_then(|d| Duration::try_from(d).ok()));
    }
    // 5. Follow.
    let (follow_state, workload) =
        match progress::step(&task, ctx, &ids, job.as_ref(), pod, workload, &waits) {
            progress::Followed::Wait(action) => return Ok(action),
            progress::Followed::Go { state, workload } => (state, workload),
        };
    // 6. Decide.
    let grace_secs = tool
        .as_ref()
        .map_or(DEFAULT_CANCEL_GRACE_PERIOD_SECONDS, |t| {
            t.spec.cancel_grace_period_seconds
        });
    let idle_limit = tool.as_ref().and_then(|t| t.spec.idle_timeout_seconds);
    let decision = {
        let empty = FollowState::default();
        let guard = follow_state.as_ref().map(|s| lock(s));
        let idle = guard.as_deref().map(FollowState::idle_for);
        let progress = &guard.as_deref().unwrap_or(&empty).progress;
        let mut decided = decide(&Observation {
            workload: &workload,
            progress,
            answers: task.spec.input_responses.as_ref(),
            cancel_requested_at: cancel_at,
            cancel_grace: SignedDuration::from_secs(grace_secs),
            job_recorded: job_record::recorded(task.status.as_ref()) || job.is_some(),
            finished_at: pod
                .and_then(tool_container_finished)
                .and_then(|t| Timestamp::try_from(t).ok()),
            now,
        });
        decided.start_note = matches!(decided.outcome, Outcome::Working { .. })
            && cancel_at.is_none()
            && progress.status_message().is_none()
            && matches!(workload, Workload::Starting { .. } | Workload::Running);
        // Silence counts only while the tool runs with nothing to wait for.
        match matches!(decided.outcome, Outcome::Working { .. }) && cancel_at.is_none() {
            true => match idle::check(&workload, idle, idle_limit) {
                Err(timed_out) => timed_out,
                Ok(left) => {
                    waits.extend(left);
                    decided
                }
            },
            false => decided,
        }
    };
    // An unanswered input round ends at the input timeout (the tool's, else the operator's).
    let input_limit = tool
        .as_ref()
        .and_then(|t| t.spec.input_timeout_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .map_or(ctx.config.input_timeout, Duration::from_secs);
    let (mut decision, input_wake) =
        input_timeout::check(decision, task.status.as_ref(), input_limit, now);
    waits.extend(input_wake);
    attempts::annotate(&mut decision, job.as_ref());
    // 7. Write.
    write::step(&task, ctx, &ids.uid, &decision, job.as_ref(), waits, now).await
}

#[cfg(test)]
mod tests;
