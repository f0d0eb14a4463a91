//! The McpTask reconciler: level-triggered and idempotent. Each run derives everything from the
//! task, its Job, its pod and the pod's logs: expire, ensure the one Job, keep the pod's
//! annotations in step, decide the outcome, carry out its action, write the status.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_crds::mcp_tool::DEFAULT_CANCEL_GRACE_PERIOD_SECONDS;
use mcp_task_operator_telemetry::SPAN_TARGET;
use rand::Rng;
use tracing::Instrument;

use super::apply::{self, PodSync};
use super::build::{BuildError, build_job, task_traceparent};
use super::follow::{FollowState, LOGS_PENDING, LogSource, LogsNeeded, lock, logs_needed};
use super::nonce;
use super::notify::notifier;
use super::observe::{
    FailureReason, StartLimits, Workload, earlier_task_job, foreign_job, observe_workload,
    pods_refused, select_pod, start_deadline, tool_container_finished, tool_container_name,
    tool_container_started,
};
use super::outcome::{self, Decision, Observation, Outcome, cancel_requested_at, decide};
use super::status::{
    StatusContext, check_budget, checkpoint_of, next_status, refused_write, transition_event,
    write_delay,
};
use super::ttl::{Expiry, expiry, extension_window};
use crate::context::Context;
use crate::controller::{reconcile_guarded, retry_after_error};
use crate::error::{Error, Result};
use crate::policy::check_job;

/// Name of this controller in metrics and logs.
pub const CONTROLLER: &str = "mcptask";
/// How soon to look again at a task whose expiry could not be moved because it changed since
/// it was read (its watch event brings it back sooner, as a rule).
const STALE_RETRY: Duration = Duration::from_millis(500);

/// How long from its creation a task waits for the Job of an earlier task of the same name to
/// be deleted (by garbage collection, within seconds as a rule) before it fails (JobConflict).
const EARLIER_JOB_WAIT: SignedDuration = SignedDuration::from_secs(60);

/// How often a task whose pod has not started is looked at again, for its start deadlines.
const START_POLL: Duration = Duration::from_secs(2);

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
    let result = reconcile_guarded(&guard, &ctx, CONTROLLER, |task| reconcile_task(task, &ctx))
        .instrument(span.clone())
        .await;
    if result.is_err() {
        span.record("otel.status_code", "error");
    }
    result
}

/// Logs the error, counts it by category and retries after a jittered backoff.
pub fn error_policy(
    task: Arc<DeserializeGuard<McpTask>>,
    err: &Error,
    ctx: Arc<Context>,
) -> Action {
    retry_after_error(task.as_ref(), err, &ctx, CONTROLLER)
}

async fn reconcile_task(task: &McpTask, ctx: &Context) -> Result<Action> {
    let missing = |field| Error::MissingField {
        kind: "McpTask",
        field,
    };
    let namespace = task.namespace().ok_or(missing("metadata.namespace"))?;
    let uid = task.uid().ok_or(missing("metadata.uid"))?;
    let name = task.name_any();
    let now = Timestamp::now();

    let moved;
    let (task, until_expiry) = match expiry(task, now) {
        Expiry::Now => {
            ctx.followers.stop(&uid);
            ctx.record_write(&uid, true);
            ctx.publish(
                task,
                "Expired",
                "Task TTL elapsed; deleting the task".into(),
                false,
            )
            .await;
            apply::delete_task(&ctx.client, &namespace, &name).await?;
            return Ok(Action::await_change());
        }
        // A task that still runs is never deleted: its expiry moves ahead instead.
        Expiry::Extend(to) => match apply::extend_expiry(&ctx.client, task, to).await? {
            apply::Patched::Stale => return Ok(Action::requeue(STALE_RETRY)),
            apply::Patched::Done => {
                if task.expires_at() == task.requested_expiry() {
                    let note = "The task's TTL is ending while it still runs: its expiry \
                                moves ahead while it runs"
                        .to_owned();
                    ctx.publish(task, "TTLExtended", note, false).await;
                }
                // The rest of this run must not write the old expiry back.
                let mut extended = task.clone();
                let status = extended.status.get_or_insert_with(Default::default);
                status.expires_at = Some(Time(to));
                moved = extended;
                (&moved, Some(extension_window(task) / 2))
            }
        },
        Expiry::After(left) => (task, Some(left)),
        Expiry::Never => (task, None),
    };
    if task.is_terminal() {
        ctx.followers.stop(&uid);
        ctx.record_write(&uid, true);
        return Ok(until_expiry.map_or_else(Action::await_change, Action::requeue));
    }

    let client = &ctx.client;
    let cache = ctx.tools.get();
    let tool = apply::find_tool(client, cache, &namespace, &task.spec.tool).await?;
    let cancel_at = cancel_requested_at(task);
    let job_recorded = task.status.as_ref().is_some_and(|s| s.job_name.is_some());
    let mut job = apply::get_job(client, &namespace, &name).await?;

    // The Job of an earlier task of this name is going away with it: wait, up to a bound.
    if let Some(old) = job.as_ref().filter(|j| earlier_task_job(j, &name, &uid))
        && !job_recorded
    {
        let age = task.created_at().map(|t| now.duration_since(t));
        if age.is_none_or(|a| a < EARLIER_JOB_WAIT) && cancel_at.is_none() {
            let outcome = Outcome::Working {
                message: format!(
                    "Waiting for Job {} of an earlier task of this name to be deleted",
                    old.name_any()
                ),
            };
            let mut waits: Vec<Duration> = until_expiry.into_iter().collect();
            waits.push(START_POLL);
            return finish(task, ctx, &uid, &Decision::just(outcome), None, waits).await;
        }
    }

    // Create the Job only for a task that never had one and is not being cancelled: a
    // recorded-but-missing Job was deleted, and a second Job must never run the same call.
    // The record is written first, and only if the task is as read (not a stale copy), so
    // no two runs, and no run after the Job's deletion, ever create a second Job.
    if job.is_none() && !job_recorded && cancel_at.is_none() {
        let built = match &tool {
            None => Err(Outcome::failure(
                FailureReason::ToolNotFound,
                Some(task.spec.tool.clone()),
            )),
            Some(tool) => build_job(task, tool, &ctx.config)
                .map_err(|e| {
                    let reason = match &e {
                        BuildError::EnvTooLarge(_) => FailureReason::ArgumentsTooLarge,
                        _ => FailureReason::ToolInvalid,
                    };
                    Outcome::failure(reason, Some(e.to_string()))
                })
                // Again here: the tool may not be Ready, or the policy tightened since.
                .and_then(|job| match check_job(&job, &ctx.config.tool_policy) {
                    Ok(()) => Ok(job),
                    Err(v) => Err(Outcome::failure(
                        FailureReason::TemplateNotAllowed,
                        Some(v.to_string()),
                    )),
                }),
        };
        match built {
            Ok(mut desired) => {
                if tool.as_ref().is_some_and(|t| t.spec.message_nonce) {
                    nonce::add_to_job(&mut desired, &nonce::generate());
                }
                if apply::record_job(client, task).await? == apply::Patched::Stale {
                    return Ok(Action::requeue(STALE_RETRY));
                }
                match apply::create_job(client, &namespace, &desired).await? {
                    apply::Created::Job(created) => {
                        job = Some(*created);
                        ctx.publish(task, "JobCreated", format!("Created Job {name}"), false)
                            .await;
                    }
                    apply::Created::Refused(message) => {
                        let failed = Outcome::failure(FailureReason::JobRefused, Some(message));
                        let waits = until_expiry.into_iter().collect();
                        return finish(task, ctx, &uid, &Decision::just(failed), None, waits).await;
                    }
                }
            }
            Err(failed) => {
                let waits = until_expiry.into_iter().collect();
                return finish(task, ctx, &uid, &Decision::just(failed), None, waits).await;
            }
        }
    }

    // Only a Job this task controls is its own; a foreign one is never used, nor deleted.
    if let Some(detail) = job.as_ref().and_then(|j| foreign_job(j, &uid)) {
        let decision = Decision {
            outcome: Outcome::failure(FailureReason::JobConflict, Some(detail)),
            action: None,
            recheck_after: None,
        };
        let waits = until_expiry.into_iter().collect();
        return finish(task, ctx, &uid, &decision, None, waits).await;
    }
    let pods = match &job {
        Some(job) => apply::list_pods(client, &namespace, job).await?,
        None => Vec::new(),
    };
    let message_nonce = job.as_ref().and_then(nonce::of_job);
    let pod = select_pod(&pods);
    let limits = start_limits(&ctx.config);
    let mut workload = start_deadline(observe_workload(job.as_ref(), pod), pod, &limits, now);
    if let (Workload::Starting { .. }, None, Some(job)) = (&workload, pod, &job)
        && let Some((since, message)) = apply::pods_refused_since(client, &namespace, job).await?
        && pods_refused(&workload, pod, Some(since), &limits, now)
    {
        workload = Workload::Failed {
            reason: FailureReason::PodRefused,
            detail: Some(message),
        };
    }
    if let Some(pod) = pod
        && let PodSync::AnswersTooLarge(detail) =
            apply::sync_pod_annotations(client, task, pod).await?
        && cancel_at.is_none()
    {
        // The cancel (if any) has reached the pod; answers that cannot would be retried for
        // ever: the task fails, and its Job is stopped.
        let decision = Decision {
            outcome: Outcome::failure(FailureReason::InputTooLarge, Some(detail)),
            action: Some(outcome::Action::DeleteJob),
            recheck_after: None,
        };
        let job_name = job.as_ref().map(|j| j.name_any());
        let waits = until_expiry.into_iter().collect();
        return finish(task, ctx, &uid, &decision, job_name, waits).await;
    }

    // Follow the tool container's logs once it has started. The follower owns its timing
    // (re-reading a dropped stream, confirming a stopped container's output): it only says
    // whether its progress can be used yet, and whether the output was read whole.
    let mut waits: Vec<Duration> = until_expiry.into_iter().collect();
    // Nothing need change on the objects for a start grace period to end: look again.
    if matches!(workload, Workload::Starting { .. }) {
        waits.push(START_POLL);
    }
    let follow_state = match pod.filter(|p| tool_container_started(p)) {
        Some(pod) => {
            let pod_uid = pod.uid().unwrap_or_default();
            let source = LogSource {
                pod_name: &pod.name_any(),
                pod_uid: &pod_uid,
                container: tool_container_name(pod),
                nonce: message_nonce,
            };
            let pods_api = kube::Api::namespaced(client.clone(), &namespace);
            let recorded = task.status.as_ref().and_then(checkpoint_of);
            let notify = notifier(ctx, task);
            Some(
                ctx.followers
                    .ensure(&uid, pods_api, source, recorded.as_ref(), notify),
            )
        }
        // The follower outlives its pod: a result read before the pod went still counts.
        None => ctx.followers.state(&uid),
    };
    if let Some(state) = &follow_state {
        let (view, told) = {
            let s = lock(state);
            (s.view(), s.progress.terminal().is_some())
        };
        match logs_needed(&workload, &view, told) {
            LogsNeeded::No => {}
            LogsNeeded::Wait => {
                let soonest = waits.iter().min().copied().unwrap_or(LOGS_PENDING);
                return Ok(Action::requeue(soonest.min(LOGS_PENDING)));
            }
            LogsNeeded::Unavailable(why) => {
                workload = Workload::Failed {
                    reason: FailureReason::OutputUnavailable,
                    detail: Some(why),
                };
            }
        }
    }

    let grace_secs = tool
        .as_ref()
        .map_or(DEFAULT_CANCEL_GRACE_PERIOD_SECONDS, |t| {
            t.spec.cancel_grace_period_seconds
        });
    let decision = {
        let empty = FollowState::default();
        let guard = follow_state.as_ref().map(|s| lock(s));
        let progress = &guard.as_deref().unwrap_or(&empty).progress;
        decide(&Observation {
            workload: &workload,
            progress,
            answers: task.spec.input_responses.as_ref(),
            cancel_requested_at: cancel_at,
            cancel_grace: SignedDuration::from_secs(grace_secs),
            job_recorded: job_recorded || job.is_some(),
            finished_at: pod
                .and_then(tool_container_finished)
                .and_then(|t| Timestamp::try_from(t).ok()),
            now,
        })
    };
    let job_name = job.as_ref().map(|j| j.name_any());
    finish(task, ctx, &uid, &decision, job_name, waits).await
}

/// The start grace periods and deadline of `config`, for [`start_deadline`].
fn start_limits(config: &crate::config::Config) -> StartLimits {
    let signed = |d: Duration| SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    StartLimits {
        image_pull_grace: signed(config.image_pull_grace),
        config_error_grace: signed(config.config_error_grace),
        unschedulable_after: signed(config.unschedulable_after),
        pod_refused_grace: signed(config.pod_refused_grace),
    }
}

/// Carries out the decided action, writes the decided status (coalesced), publishes the
/// transition Event and requeues for the soonest of `wait` (expiry, log settling), a coalesced
/// write, a cancel deadline and resync.
///
/// A terminal decision is checked against the task as the API server has it now: the
/// controller's cache may lag the operator's own last write (say the Job deletion that followed
/// a terminal status is seen first), and the same terminal status with other details (a
/// `JobDeleted` error over `ImagePullFailed`) would pass the CRD's "terminal never changes"
/// rule.
async fn finish(
    task: &McpTask,
    ctx: &Context,
    uid: &str,
    decision: &Decision,
    job_name: Option<String>,
    mut wait: Vec<Duration>,
) -> Result<Action> {
    let current = task.status.as_ref();
    let status_ctx = StatusContext {
        job_name: job_name.or_else(|| current.and_then(|s| s.job_name.clone())),
        created_at: task.created_at(),
        expires_at: task.expires_at(),
        generation: task.metadata.generation,
        checkpoint: ctx.followers.state(uid).map(|s| lock(&s).view().checkpoint),
        now: Timestamp::now(),
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
            // Its own watch event brings the fresh task (and its expiry) here again.
            return Ok(Action::await_change());
        }
    }
    if decision.action == Some(outcome::Action::DeleteJob) {
        apply::delete_job(&ctx.client, &namespace, &name).await?;
    }
    if let Some(mut next) = next {
        let delay = write_delay(
            ctx.since_last_write(uid),
            ctx.config.status_interval,
            current.map(|s| s.status),
            outcome.status(),
        );
        if delay.is_zero() {
            let started = std::time::Instant::now();
            if let Err(refused) = apply::apply_status(&ctx.client, task, &next).await {
                // A status the API server refuses (too large, invalid) would be retried until
                // the TTL: the task fails with a small status saying why, once.
                let Some(detail) = refused_write(&refused) else {
                    return Err(refused);
                };
                tracing::warn!(task = %name, error = %refused, "status refused; failing the task");
                outcome = Outcome::failure(FailureReason::StatusRefused, Some(detail));
                let Some(failed) = next_status(current, &outcome, &status_ctx) else {
                    return Err(refused);
                };
                next = failed;
                apply::apply_status(&ctx.client, task, &next).await?;
            }
            let terminal = outcome.status().is_terminal();
            ctx.metrics.status_written(started.elapsed());
            ctx.record_write(uid, terminal);
            if let Some(event) = transition_event(current.map(|s| s.status), &outcome) {
                ctx.metrics.transition(event.reason);
                ctx.publish(task, event.reason, event.note, event.warning)
                    .await;
            }
            if terminal {
                ctx.followers.stop(uid);
            }
        } else {
            wait.push(delay);
        }
    }
    if !terminal {
        let resync = ctx.config.resync.as_millis() as u64;
        wait.push(Duration::from_millis(
            rand::rng().random_range(resync..=resync + resync / 10),
        ));
    }
    if let Some(recheck) = decision
        .recheck_after
        .and_then(|d| Duration::try_from(d).ok())
    {
        wait.push(recheck);
    }
    Ok(wait
        .into_iter()
        .min()
        .map_or_else(Action::await_change, Action::requeue))
}

#[cfg(test)]
mod tests;
