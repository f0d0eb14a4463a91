//! Step 3b, a warm start: before a cold Job is made for a task of a tool with a warm pool,
//! claim one of its waiting pods ([`claim`](crate::controller::warm_pool::claim) says how a
//! claim survives a failover); and finish a claim a run (maybe another replica's) began.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::{McpTask, McpTool};

use super::super::build::contract_values;
use super::super::observe::{FailureReason, runs_in, tool_container_name};
use super::super::outcome::{Decision, Outcome, SideEffect};
use super::super::{apply, cache, nonce};
use super::{Ids, STALE_RETRY};
use crate::context::Context;
use crate::controller::warm_pool::claim::{self, HandedOver, Launcher, Taken};
use crate::controller::warm_pool::session;
use crate::controller::warm_pool::starting::{self, Starting};
use crate::error::Result;

/// How soon a run looks again at a claim it could not finish (a pod that did not answer, a Job
/// to give back): the next run finishes it or gives it back.
const CLAIM_RETRY: Duration = Duration::from_millis(300);
/// How often one run tries to hand a task over before it leaves it to the next run.
const HAND_OVER_TRIES: usize = 3;

/// What the warm path came to.
#[derive(Debug)]
pub enum Warm {
    /// The task runs in this Job, claimed and handed over.
    Claimed(Box<Job>),
    /// No waiting pod: start cold.
    Cold,
    /// Look again (the record, the Job or the pod changed under this run).
    Again(Action),
    /// The claimed pod has not answered for [`claim::CLAIM_TIMEOUT`]: whether the tool started
    /// is unknown, so the task fails (the detail says why) and its Job goes ([`unanswered`]).
    Unanswered(String),
}

/// What a task whose claimed pod never answered ([`Warm::Unanswered`]) comes to: it fails
/// `ClaimUnanswered`, and the Job it claimed (a pool pod's, or its caller's session) is
/// deleted. Never started again elsewhere: the tool may have started, and a call runs once.
pub fn unanswered(detail: String) -> Decision {
    Decision::with(
        Outcome::failure(FailureReason::ClaimUnanswered, Some(detail)),
        SideEffect::DeleteJob,
    )
}

/// Claims a waiting pod of `tool`'s pool for `task`, whose cold Job would be `desired`.
pub async fn claim(task: &McpTask, tool: &McpTool, desired: &Job, ctx: &Context) -> Result<Warm> {
    let uid = task.uid().unwrap_or_default();
    ctx.warm.called(
        &task.namespace().unwrap_or_default(),
        &tool.name_any(),
        &uid,
    );
    let reuse = session::reuses(tool);
    // The caller's idle session first (its server keeps the caller's state), then a pool pod,
    // then one that is starting.
    let picked = match reuse {
        true => session::pick(ctx, tool, task).or_else(|| claim::pick(ctx, tool, &uid)),
        false => claim::pick(ctx, tool, &uid),
    };
    let picked = match picked {
        Some(picked) => Some(picked),
        None => match starting::wait(ctx, tool, &uid).await {
            Starting::Ready(job, pod) => Some((*job, *pod)),
            Starting::Wait => return Ok(Warm::Again(Action::requeue(starting::STARTING_POLL))),
            Starting::No => None,
        },
    };
    starting::done(ctx, &uid);
    let Some((job, pod)) = picked else {
        return Ok(Warm::Cold);
    };
    let name = job.name_any();
    if apply::record_job_named(&ctx.client, task, &name).await? == apply::Patched::Stale {
        return Ok(Warm::Again(Action::requeue(STALE_RETRY)));
    }
    // From here the task's record names the warm Job: a run that stops short, here or on a
    // replica that took over, finishes the claim or gives the Job back ([`resume`]).
    let nonce = nonce::of_job(desired).map(str::to_owned);
    let deadline = desired
        .spec
        .as_ref()
        .and_then(|s| s.active_deadline_seconds);
    let taken = match reuse {
        true => session::take(ctx, task, tool, &job, nonce.as_deref(), deadline).await?,
        false => claim::take(ctx, task, &job, nonce.as_deref(), deadline).await?,
    };
    let taken = match taken {
        Taken::Job(taken) => taken,
        Taken::Lost => return Ok(Warm::Again(Action::requeue(CLAIM_RETRY))),
    };
    hand_over(task, tool, ctx, taken, &pod).await
}

/// Finishes the claim of the warm Job `name` that `task` recorded and never confirmed.
pub async fn resume(
    task: &McpTask,
    tool: Option<&McpTool>,
    ctx: &Context,
    ids: &Ids,
) -> Result<Warm> {
    let name = apply_name(task);
    let (mut job, source) = cache::job(ctx, &ids.namespace, &name).await?;
    let mine = |j: &Option<Job>| j.as_ref().is_some_and(|j| runs_in(j, &ids.uid));
    // The cache may lag this task's own take: only the API server's word gives a Job back.
    if !mine(&job) && source == cache::Source::Cache {
        job = apply::get_job(&ctx.client, &ids.namespace, &name).await?;
    }
    let Some(job) = job.filter(|j| runs_in(j, &ids.uid)) else {
        // Another task took it, or it is gone (given back): the task starts again.
        return erase(task, ctx).await;
    };
    let (pods, _) = cache::pods(ctx, &ids.namespace, &job).await?;
    let running = pods.iter().find(|p| {
        p.metadata.deletion_timestamp.is_none()
            && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    });
    match (running, tool) {
        (Some(pod), Some(tool)) => {
            let pod = pod.clone();
            hand_over(task, tool, ctx, Box::new(job), &pod).await
        }
        // Its pod ended or went (or the tool did) before the hand-over was confirmed: the Job
        // is the task's, and what its pod did (nothing of this task, as a rule) decides.
        _ => Ok(Warm::Claimed(Box::new(job))),
    }
}

/// Hands `task` to the launcher of `pod` (of `job`, which the task controls, or a session that
/// serves it).
async fn hand_over(
    task: &McpTask,
    tool: &McpTool,
    ctx: &Context,
    job: Box<Job>,
    pod: &k8s_openapi::api::core::v1::Pod,
) -> Result<Warm> {
    let name = job.name_any();
    let in_session = session::is_session(&job);
    // The cold path fails the task with the same error (the Job's build checks it first).
    let Ok(env) = contract_values(task, tool) else {
        return give_back(task, ctx, &job).await;
    };
    let server_tool = claim::server_tool(tool);
    let body = claim::claim_body(task.task_id(), &env, nonce::of_job(&job), server_tool);
    // A session's log holds its earlier calls: this call's follower starts past them.
    if in_session && let Some(end) = session::log_end(ctx, pod, tool_container_name(pod)).await {
        ctx.warm.seed(&task.uid().unwrap_or_default(), end);
    }
    let mut last = HandedOver::NoAnswer(String::new());
    for attempt in 0..HAND_OVER_TRIES {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        last = claim::hand_over(ctx, pod, &name, body.clone()).await;
        match last {
            HandedOver::Yes => {
                let note = format!("Claimed the waiting pod {} of Job {name}", pod.name_any());
                let reason = if in_session {
                    "SessionClaimed"
                } else {
                    "JobClaimed"
                };
                ctx.publish(task, reason, note, false);
                return Ok(Warm::Claimed(job));
            }
            HandedOver::Refused(_) => break,
            HandedOver::NoAnswer(_) => {}
        }
    }
    // A session busy with its last call a moment longer, or that did not answer: the next run
    // hands over again (the launcher runs a task once, however often it is handed over), for
    // at most the claim timeout from the take.
    let overdue = claim::overdue(&job, Timestamp::now());
    let unanswered = |why: &str| {
        Warm::Unanswered(format!(
            "the pod {} of Job {name} did not answer the task's claim for {} s ({why}); \
             whether the tool started is unknown, so the call was not started again",
            pod.name_any(),
            claim::CLAIM_TIMEOUT.as_secs(),
        ))
    };
    if in_session {
        return match last {
            HandedOver::Refused(why) if !why.contains("busy") => give_back(task, ctx, &job).await,
            // Still busy with an ended call: the session is stuck and ends; nothing of this
            // call ran there, so it starts again (a pool pod, or cold).
            HandedOver::Refused(why) if overdue => {
                tracing::info!(job = %name, %why, "ending a session stuck in an ended call");
                let namespace = job.namespace().unwrap_or_default();
                apply::delete_job(&ctx.client, &namespace, &name).await?;
                erase(task, ctx).await
            }
            HandedOver::NoAnswer(why) if overdue => Ok(unanswered(&why)),
            _ => Ok(Warm::Again(Action::requeue(CLAIM_RETRY))),
        };
    }
    // Nothing of the task ran only if the launcher still waits: then the Job goes back (it is
    // deleted; the pool starts another). Claimed (by this task: only its runs claim the Job
    // it controls) means the hand-over reached it.
    match claim::probe(ctx, pod).await {
        Launcher::Waiting => {
            tracing::info!(job = %name, why = ?last, "giving a warm Job back");
            give_back(task, ctx, &job).await
        }
        Launcher::Claimed => Ok(Warm::Claimed(job)),
        Launcher::Unknown if overdue => Ok(unanswered(&format!("{last:?}"))),
        Launcher::Unknown => Ok(Warm::Again(Action::requeue(CLAIM_RETRY))),
    }
}

/// Gives back the warm Job the task took but could not hand anything to: a pool pod's Job is
/// deleted (the pool starts another), a session keeps its pod and loses the task; the next run
/// erases the record and starts again.
async fn give_back(task: &McpTask, ctx: &Context, job: &Job) -> Result<Warm> {
    if session::is_session(job) {
        session::release(ctx, job, &task.uid().unwrap_or_default()).await?;
        return erase(task, ctx).await;
    }
    let namespace = job.namespace().unwrap_or_default();
    apply::delete_job(&ctx.client, &namespace, &job.name_any()).await?;
    Ok(Warm::Again(Action::requeue(CLAIM_RETRY)))
}

async fn erase(task: &McpTask, ctx: &Context) -> Result<Warm> {
    apply::erase_job_record(&ctx.client, task).await?;
    Ok(Warm::Again(Action::requeue(STALE_RETRY)))
}

fn apply_name(task: &McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.job_name.clone())
        .unwrap_or_else(|| task.name_any())
}

/// Whether `task` recorded a Job that is not its own name's and did not confirm it: a claim
/// that a run began and none finished.
pub fn unfinished(task: &McpTask) -> bool {
    let status = task.status.as_ref();
    status
        .and_then(|s| s.job_name.as_deref())
        .is_some_and(|n| Some(n) != task.metadata.name.as_deref())
        && !super::super::job_record::confirmed(status)
}
