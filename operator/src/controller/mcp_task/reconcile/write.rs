//! Step 7, write: carry out the decided action, write the decided status (coalesced), publish
//! the transition Event and say when to look again.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::{McpTask, TaskStatus};

use super::super::apply;
use super::super::job_record;
use super::super::observe::{FailureReason, runs_in};
use super::super::outcome::{self, Decision, Outcome, cancel_requested_at};
use super::super::signals;
use super::super::status::{
    StatusContext, check_budget, next_status, refused_write, transition_event, write_delay,
};
use crate::context::Context;
use crate::controller::warm_pool::session;
use crate::error::Result;
use crate::lock;

/// Carries out the decided action, writes the decided status (coalesced), publishes the
/// transition Event and requeues for the soonest of `wait` (expiry, log settling), a coalesced
/// write, a cancel deadline and resync.
///
/// A terminal decision is checked against the task as the API server has it now: the
/// controller's cache may lag the operator's own last write (say the Job deletion that followed
/// a terminal status is seen first), and the same terminal status with other details (a
/// `JobDeleted` error over `ImagePullFailed`) would pass the CRD's "terminal never changes"
/// rule.
pub async fn step(
    task: &McpTask,
    ctx: &Context,
    uid: &str,
    decision: &Decision,
    job: Option<&Job>,
    mut wait: Vec<Duration>,
    now: Timestamp,
) -> Result<Action> {
    let current = task.status.as_ref();
    // Only a Job this task controls is confirmed as its own.
    let own_job = job.filter(|j| runs_in(j, uid));
    let status_ctx = StatusContext {
        job_name: own_job
            .map(ResourceExt::name_any)
            .or_else(|| current.and_then(|s| s.job_name.clone())),
        job_uid: own_job.and_then(|j| j.uid()),
        created_at: task.created_at(),
        expires_at: task.expires_at(),
        poll_interval_ms: task.spec.poll_interval_ms,
        generation: task.metadata.generation,
        checkpoint: ctx.followers.state(uid).map(|s| lock(&s).view().checkpoint),
        now,
    };
    // A status that would make the task too large for etcd fails the task instead.
    let mut outcome = decision.outcome.clone();
    let mut next = next_status(current, &outcome, &status_ctx);
    if let Some(Err(detail)) = next.as_ref().map(|n| check_budget(task, n)) {
        outcome = Outcome::failure(FailureReason::StatusTooLarge, Some(detail));
        next = next_status(current, &outcome, &status_ctx);
    }
    let terminal = outcome.status().is_terminal();
    let (namespace, name) = (task.namespace().unwrap_or_default(), task.name_any());
    if terminal {
        let fresh = apply::get_task(&ctx.client, &namespace, &name).await?;
        if fresh.as_ref().is_none_or(McpTask::is_terminal) {
            ctx.followers.stop(uid);
            ctx.record_write(uid, true);
            // The operator's own status writes trigger no reconcile: look again soon, when
            // the cache has the terminal task (and its expiry).
            return Ok(Action::requeue(super::STALE_RETRY));
        }
    }
    if decision.side_effect == Some(outcome::SideEffect::DeleteJob) {
        // The task's Job: named after it, or the warm Job it claimed (its record says).
        let job_name = job_record::job_name(current, &name);
        apply::delete_job(&ctx.client, &namespace, job_name).await?;
    }
    if let Some(mut next) = next {
        // The Job's confirmation goes out at once: until it is stored, a failover would
        // take a deleted Job for one never created. A status change (terminal,
        // `input_required`) goes at once too; progress waits for its turn in the budget.
        let urgent = job_record::newly_confirmed(current, &next)
            || current.map(|s| s.status) != Some(outcome.status())
            || outcome.status() == TaskStatus::InputRequired;
        let delay = if job_record::newly_confirmed(current, &next) {
            Duration::ZERO
        } else {
            let settle = match decision.start_note && !urgent {
                true => ctx.start_note_wait(uid),
                false => Duration::ZERO,
            };
            settle.max(write_delay(
                ctx.since_last_write(uid),
                ctx.config.status_interval,
                current.map(|s| s.status),
                outcome.status(),
            ))
        };
        let delay = match (delay.is_zero(), urgent) {
            (false, _) => delay,
            (true, true) => {
                ctx.budget.spend(std::time::Instant::now());
                Duration::ZERO
            }
            (true, false) => {
                let wait = ctx.budget.progress(uid, std::time::Instant::now());
                if !wait.is_zero() {
                    ctx.metrics.status_write_deferred();
                }
                wait
            }
        };
        if delay.is_zero() {
            let started = std::time::Instant::now();
            let written = match apply::apply_status(&ctx.client, task, &next).await {
                Ok(written) => written,
                // A status the API server refuses (too large, invalid) would be retried until
                // the TTL: the task fails with a small status saying why, once.
                Err(refused) => {
                    let Some(detail) = refused_write(&refused) else {
                        return Err(refused);
                    };
                    tracing::warn!(task = %name, error = %refused, "status refused; failing the task");
                    outcome = Outcome::failure(FailureReason::StatusRefused, Some(detail));
                    let Some(failed) = next_status(current, &outcome, &status_ctx) else {
                        return Err(refused);
                    };
                    next = failed;
                    apply::apply_status(&ctx.client, task, &next).await?
                }
            };
            ctx.record_written(uid, written);
            let terminal = outcome.status().is_terminal();
            ctx.metrics.status_written(started.elapsed());
            ctx.record_write(uid, terminal);
            if let Some(event) = transition_event(current.map(|s| s.status), &outcome) {
                ctx.metrics.transition(event.reason);
                signals::record_end(&ctx.metrics, &outcome, cancel_requested_at(task), now);
                ctx.publish(task, event.reason, event.note, event.warning);
            }
            if terminal {
                ctx.record_ended(uid);
                ctx.followers.stop(uid);
                // A caller's session is free for the caller's next call at once.
                if let Some(session) = own_job.filter(|j| session::is_session(j)) {
                    session::release(ctx, session, uid).await?;
                }
                // Its Job goes after the retention (`reconcile/retain.rs`).
                wait.push(ctx.config.scale.finished_job_retention);
            }
        } else {
            wait.push(delay);
        }
    }
    if !terminal {
        wait.push(crate::controller::jittered_resync(&ctx.config));
    }
    if let Some(recheck) = decision
        .recheck_after
        .and_then(|d| Duration::try_from(d).ok())
    {
        wait.push(recheck);
    }
    Ok(requeue(&wait))
}

/// Requeue at the soonest of `wait`, or wait for a change when there is none.
pub fn requeue(wait: &[Duration]) -> Action {
    wait.iter()
        .min()
        .copied()
        .map_or_else(Action::await_change, Action::requeue)
}
