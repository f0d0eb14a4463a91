//! Step 5, follow: the log follower of the tool container, once it has started. The follower
//! owns its timing (re-reading a dropped stream, confirming a stopped container's output):
//! this step only learns whether its progress can be used yet, and whether the output was read
//! whole.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::McpTask;

use super::super::cache;
use super::super::follow::{
    FollowState, LOGS_PENDING, LogSource, LogsNeeded, PodReads, logs_needed, resume_of,
};
use super::super::nonce;
use super::super::notify::notifier;
use super::super::observe::{FailureReason, Workload, tool_container_name, tool_container_started};
use super::Ids;
use crate::context::Context;
use crate::lock;
use k8s_openapi::api::batch::v1::Job;

/// What the follow step found.
pub enum Followed {
    /// The output is not settled yet: look again then.
    Wait(Action),
    /// Go on with the follower's state (if one runs or ran) and the workload (failed
    /// `OutputUnavailable` if the output cannot be read whole).
    Go {
        /// The follower's state.
        state: Option<Arc<Mutex<FollowState>>>,
        /// What the workload does, as far as the output goes.
        workload: Workload,
    },
}

/// Starts (or keeps) the follower of `pod`'s tool container and asks whether its output can
/// be used; `waits` are the run's other times to look again.
pub fn step(
    task: &McpTask,
    ctx: &Context,
    ids: &Ids,
    job: Option<&Job>,
    pod: Option<&Pod>,
    mut workload: Workload,
    waits: &[Duration],
) -> Followed {
    let state = match pod.filter(|p| tool_container_started(p)) {
        Some(pod) => {
            let pod_uid = pod.uid().unwrap_or_default();
            let source = LogSource {
                pod_name: &pod.name_any(),
                pod_uid: &pod_uid,
                container: tool_container_name(pod),
                nonce: job.and_then(nonce::of_job),
            };
            let pods = PodReads {
                api: kube::Api::namespaced(ctx.client.clone(), &ids.namespace),
                namespace: ids.namespace.clone(),
                cache: ctx
                    .caches
                    .get()
                    .filter(|c| cache::ready(&c.pods))
                    .map(|c| c.pods.clone()),
            };
            // A call in a caller's session starts past the earlier calls' lines.
            let recorded = task
                .status
                .as_ref()
                .and_then(resume_of)
                .or_else(|| ctx.warm.take_seed(&ids.uid));
            let notify = notifier(ctx, task);
            Some(
                ctx.followers
                    .ensure(&ids.uid, pods, source, recorded.as_ref(), notify),
            )
        }
        // The follower outlives its pod: a result read before the pod went still counts.
        None => ctx.followers.state(&ids.uid),
    };
    if let Some(state) = &state {
        let (view, told) = {
            let s = lock(state);
            (s.view(), s.progress.terminal().is_some())
        };
        match logs_needed(&workload, &view, told) {
            LogsNeeded::No => {}
            LogsNeeded::Wait => {
                let soonest = waits.iter().min().copied().unwrap_or(LOGS_PENDING);
                return Followed::Wait(Action::requeue(soonest.min(LOGS_PENDING)));
            }
            LogsNeeded::Unavailable(why) => {
                workload = Workload::Failed {
                    reason: FailureReason::OutputUnavailable,
                    detail: Some(why),
                };
            }
        }
    }
    Followed::Go { state, workload }
}
