//! Step 3, ensure the one Job: use the task's Job, wait for an earlier task's Job of the same
//! name to go, or record and create it ([`job_record`] says when a missing Job is created and
//! when it was deleted). [`plan`] decides, without the API server.

use std::borrow::Cow;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::{McpTask, McpTool};

use super::super::admission;
use super::super::apply;
use super::super::build::{BuildError, build_job};
use super::super::cache;
use super::super::job_record::{self, Missing};
use super::super::nonce;
use super::super::observe::{FailureReason, earlier_task_job, foreign_job};
use super::super::outcome::{Decision, Outcome};
use super::super::tool_identity;
use super::{Ids, STALE_RETRY, queue, warm};
use crate::config::Config;
use crate::context::Context;
use crate::error::Result;
use crate::policy::check_job;

/// How long from its creation a task waits for the Job of an earlier task of the same name to
/// be deleted (by garbage collection, within seconds as a rule) before it fails (JobConflict).
pub const EARLIER_JOB_WAIT: SignedDuration = SignedDuration::from_secs(60);
/// How often a task waiting for an earlier task's Job to go looks again (besides that Job's
/// watch events, which wake it: the Jobs share the task's name).
const EARLIER_JOB_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// What to do about the task's Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The Job of the name exists: use it (if this task controls it).
    Use,
    /// The Job of the name belongs to an earlier task of the same name and is going away with
    /// it: wait (the Job's name).
    WaitForEarlier(String),
    /// Create the Job; record it first (conditionally on the task as read) if `record`.
    Create {
        /// Whether `status.jobName` must be written first.
        record: bool,
    },
    /// A recorded Job, never confirmed, is missing: read the task from the API server (the
    /// cache may lag this operator's own confirmation) and plan again.
    ReadAgain,
    /// No Job, and none to create: it was deleted, or the task is being cancelled.
    NoJob,
}

/// What to do about the task's Job `job` (as the API server has it), at `now`. `fresh`: the
/// task was just read from the API server (not the cache).
pub fn plan(
    task: &McpTask,
    job: Option<&Job>,
    ids: &Ids,
    cancel_at: Option<Timestamp>,
    now: Timestamp,
    fresh: bool,
) -> Plan {
    let status = task.status.as_ref();
    if let Some(job) = job {
        let age = task.created_at().map(|t| now.duration_since(t));
        let waiting = earlier_task_job(job, &ids.name, &ids.uid)
            && !job_record::recorded(status)
            && cancel_at.is_none()
            && age.is_none_or(|a| a < EARLIER_JOB_WAIT);
        return match waiting {
            true => Plan::WaitForEarlier(job.name_any()),
            false => Plan::Use,
        };
    }
    if cancel_at.is_some() {
        return Plan::NoJob;
    }
    match job_record::missing(status) {
        Missing::NotRecorded => Plan::Create { record: true },
        Missing::Unconfirmed if fresh => Plan::Create { record: false },
        Missing::Unconfirmed => Plan::ReadAgain,
        Missing::Deleted => Plan::NoJob,
    }
}

/// What the ensure step leaves for the rest of the run.
#[expect(
    clippy::large_enum_variant,
    reason = "made and taken apart once per reconcile, never stored"
)]
pub enum Ensured<'a> {
    /// The run ends here.
    Stop(Action),
    /// The task's status is decided already (`poll`: look again soon, for a wait).
    Finish {
        /// The task as last read.
        task: Cow<'a, McpTask>,
        /// What to write.
        decision: Decision,
        /// When to look again (for a wait), at the latest.
        poll: Option<std::time::Duration>,
    },
    /// Go on with the task (read again, if it was) and its Job, if it has one.
    Go {
        /// The task as last read.
        task: Cow<'a, McpTask>,
        /// The task's own Job.
        job: Option<Job>,
    },
}

/// Ensures the task's one Job per [`plan`].
pub async fn step<'a>(
    task: &'a McpTask,
    tool: Option<&McpTool>,
    ctx: &Context,
    ids: &Ids,
    cancel_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<Ensured<'a>> {
    let client = &ctx.client;
    // A claim of a warm pod that a run began (maybe on another replica) is finished first.
    if warm::unfinished(task) {
        return Ok(match warm::resume(task, tool, ctx, ids).await? {
            warm::Warm::Claimed(job) => Ensured::Go {
                task: Cow::Borrowed(task),
                job: Some(*job),
            },
            warm::Warm::Again(action) => Ensured::Stop(action),
            warm::Warm::Cold => Ensured::Stop(Action::requeue(STALE_RETRY)),
            warm::Warm::Unanswered(detail) => Ensured::Finish {
                task: Cow::Borrowed(task),
                decision: warm::unanswered(detail),
                poll: None,
            },
        });
    }
    // A task's Job is named after it, unless it claimed a warm one.
    let job_name = job_record::job_name(task.status.as_ref(), &ids.name).to_owned();
    let (mut job, mut source) = cache::job(ctx, &ids.namespace, &job_name).await?;
    let mut task = Cow::Borrowed(task);
    let mut fresh = false;
    loop {
        let planned = plan(&task, job.as_ref(), ids, cancel_at, now, fresh);
        // No Job ends the task: the cache's word alone (it may lag a creation) never does.
        if planned == Plan::NoJob && source == cache::Source::Cache {
            (job, source) = cache::jobs_or_api(ctx, &ids.namespace, &job_name, job, source).await?;
            continue;
        }
        match planned {
            Plan::ReadAgain => match apply::get_task(client, &ids.namespace, &ids.name).await? {
                Some(t) if !t.is_terminal() && t.uid().as_deref() == Some(ids.uid.as_str()) => {
                    task = Cow::Owned(t);
                    fresh = true;
                }
                // Ended or gone since: the operator's own status writes trigger no reconcile,
                // so look again soon (the cache then has it).
                _ => return Ok(Ensured::Stop(Action::requeue(STALE_RETRY))),
            },
            Plan::WaitForEarlier(old) => {
                let message =
                    format!("Waiting for Job {old} of an earlier task of this name to be deleted");
                let decision = Decision::just(Outcome::Working { message });
                return Ok(Ensured::Finish {
                    task,
                    decision,
                    poll: Some(EARLIER_JOB_POLL),
                });
            }
            Plan::Create { record } => {
                // A task whose Job was recorded holds its slot already.
                if record && let Some(ahead) = queue::check(&task, tool, ctx).await? {
                    let message = admission::queued_message(ahead);
                    return Ok(Ensured::Finish {
                        task,
                        decision: Decision::just(Outcome::Working { message }),
                        poll: Some(queue::QUEUE_POLL),
                    });
                }
                let desired = match desired_job(&task, tool, &ctx.config) {
                    Ok(desired) => desired,
                    Err(failed) => return Ok(finish(task, failed)),
                };
                if record && let Some(tool) = tool.filter(|t| t.spec.warm_pool.is_some()) {
                    match warm::claim(&task, tool, &desired, ctx).await? {
                        warm::Warm::Claimed(claimed) => {
                            job = Some(*claimed);
                            break;
                        }
                        warm::Warm::Again(action) => return Ok(Ensured::Stop(action)),
                        warm::Warm::Unanswered(detail) => {
                            return Ok(Ensured::Finish {
                                task,
                                decision: warm::unanswered(detail),
                                poll: None,
                            });
                        }
                        warm::Warm::Cold => {}
                    }
                }
                if record && apply::record_job(client, &task).await? == apply::Patched::Stale {
                    return Ok(Ensured::Stop(Action::requeue(STALE_RETRY)));
                }
                match apply::create_job(client, &ids.namespace, &desired).await? {
                    apply::Created::Job(created) => {
                        let note = format!("Created Job {}", ids.name);
                        ctx.publish(task.as_ref(), "JobCreated", note, false);
                        // A cold call of a pooled tool may need its pool's slot (or quota):
                        // the pool looks again once the caches show the Job.
                        if let Some(tool) = tool.filter(|t| t.spec.warm_pool.is_some()) {
                            let after = std::time::Duration::from_secs(1);
                            ctx.warm
                                .round_after(&ids.namespace, &tool.name_any(), after);
                        }
                        job = Some(*created);
                    }
                    apply::Created::Refused(message) => {
                        let failed = Outcome::failure(FailureReason::JobRefused, Some(message));
                        return Ok(finish(task, failed));
                    }
                }
                break;
            }
            Plan::Use | Plan::NoJob => break,
        }
    }
    // Only a Job this task controls is its own; a foreign one is never used, nor deleted.
    if let Some(detail) = job.as_ref().and_then(|j| foreign_job(j, &ids.uid)) {
        let failed = Outcome::failure(FailureReason::JobConflict, Some(detail));
        return Ok(finish(task, failed));
    }
    Ok(Ensured::Go { task, job })
}

fn finish(task: Cow<'_, McpTask>, outcome: Outcome) -> Ensured<'_> {
    Ensured::Finish {
        task,
        decision: Decision::just(outcome),
        poll: None,
    }
}

/// The Job to create for `task`, or the failure that stops it: no tool, another tool than the
/// call was authorized on ([`tool_identity::tool_changed`]), a template that
/// cannot be built, or one the tool policy refuses (checked again here: the tool may not be
/// Ready, or the policy tightened since).
pub fn desired_job(
    task: &McpTask,
    tool: Option<&McpTool>,
    config: &Config,
) -> Result<Job, Outcome> {
    let Some(tool) = tool else {
        return Err(Outcome::failure(
            FailureReason::ToolNotFound,
            Some(task.spec.tool.clone()),
        ));
    };
    // Before anything else about the tool: a task runs the object its call was authorized on.
    if let Some(changed) = tool_identity::tool_changed(task, tool) {
        return Err(Outcome::failure(FailureReason::ToolChanged, Some(changed)));
    }
    let mut job = build_job(task, tool, config).map_err(|e| {
        let reason = match &e {
            BuildError::EnvTooLarge(_) => FailureReason::ArgumentsTooLarge,
            _ => FailureReason::ToolInvalid,
        };
        Outcome::failure(reason, Some(e.to_string()))
    })?;
    if let Err(v) = check_job(&job, &config.tool_policy) {
        return Err(Outcome::failure(
            FailureReason::TemplateNotAllowed,
            Some(v.to_string()),
        ));
    }
    if tool.spec.message_nonce {
        nonce::add_to_job(&mut job, &nonce::generate());
    }
    Ok(job)
}

#[cfg(test)]
mod tests;
