//! Step 4, observe: the Job's pods and what they do ([`Workload`]), with the start deadlines
//! applied as of `now`, and the pod's annotations kept in step with the task.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::super::apply::{self, PodSync};
use super::super::cache;
use super::super::observe::{
    FailureReason, StartLimits, Workload, mount_check_due, mount_failed, observe_workload,
    pods_refused, refusal_possible, select_pod, start_deadline, start_wake,
};
use super::super::outcome::{self, Decision, Outcome};
use super::Ids;
use crate::config::Config;
use crate::context::Context;
use crate::error::Result;
use mcp_task_operator_crds::McpTask;

/// What the observe step saw.
pub enum Inspected {
    /// The task's status is decided already.
    Finish(Decision),
    /// The Job's pods and what the chosen one does.
    Seen {
        /// The pods the Job controls.
        pods: Vec<Pod>,
        /// What the workload does, start deadlines applied.
        workload: Workload,
        /// How long until a start deadline can next pass (for a task still starting).
        start_wake: Option<Duration>,
    },
}

/// Lists the Job's pods, judges them as of `now` and syncs the pod's annotations.
pub async fn step(
    task: &McpTask,
    ctx: &Context,
    ids: &Ids,
    job: Option<&Job>,
    cancel_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<Inspected> {
    let client = &ctx.client;
    let pods = match job {
        Some(job) => {
            let (pods, source) = cache::pods(ctx, &ids.namespace, job).await?;
            // A pod gone ends the task: the cache's word alone (it may lag) never does.
            let ends = matches!(observe_workload(Some(job), None), Workload::Failed { .. });
            match select_pod(&pods) {
                None if ends => cache::pods_or_api(ctx, &ids.namespace, job, pods, source).await?,
                _ => pods,
            }
        }
        None => Vec::new(),
    };
    let pod = select_pod(&pods);
    let limits = start_limits(&ctx.config);
    let mut workload = start_deadline(observe_workload(job, pod), job, pod, &limits, now);
    let mut wake = start_wake(pod, job, &limits, now);
    if let (Workload::Starting { .. }, None, Some(job)) = (&workload, pod, job)
        && refusal_possible(job, &limits, now)
        && let Some((since, message)) =
            apply::pods_refused_since(client, &ids.namespace, job).await?
    {
        if pods_refused(&workload, pod, Some(since), &limits, now) {
            workload = Workload::Failed {
                reason: FailureReason::PodRefused,
                detail: Some(message),
            };
        } else if let Ok(counts) = since.checked_add(limits.pod_refused_grace) {
            // Refused since a moment after the Job's sync: look again when it counts.
            wake = Some(counts.duration_since(now));
        }
    }
    // A volume that does not mount (a missing Secret or ConfigMap) shows only in the
    // kubelet's Events: read once the grace period is over, then every start wake-up.
    if let Some(pod) = pod
        && mount_check_due(&workload, pod, &limits, now)
        && let Some(note) = apply::mount_failure(client, &ids.namespace, pod).await?
    {
        workload = mount_failed(&note, &limits);
    }
    if let Some(pod) = pod
        && let PodSync::AnswersTooLarge(detail) =
            apply::sync_pod_annotations(client, task, pod).await?
        && cancel_at.is_none()
    {
        // The cancel (if any) has reached the pod; answers that cannot would be retried for
        // ever: the task fails, and its Job is stopped.
        return Ok(Inspected::Finish(Decision::with(
            Outcome::failure(FailureReason::InputTooLarge, Some(detail)),
            outcome::SideEffect::DeleteJob,
        )));
    }
    Ok(Inspected::Seen {
        pods,
        workload,
        start_wake: wake.and_then(|d| Duration::try_from(d).ok()),
    })
}

/// `d` as a signed duration (a longer one than it holds counts as for ever).
pub fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

/// The start grace periods and deadline of `config`, for [`start_deadline`].
pub fn start_limits(config: &Config) -> StartLimits {
    StartLimits {
        image_pull_grace: signed(config.image_pull_grace),
        config_error_grace: signed(config.config_error_grace),
        unschedulable_after: signed(config.unschedulable_after),
        pod_refused_grace: signed(config.pod_refused_grace),
        volume_mount_grace: signed(config.volume_mount_grace),
        start_timeout: signed(config.start_timeout),
    }
}
