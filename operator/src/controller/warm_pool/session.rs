//! Per-caller reuse (`warmPool.reuse: perCaller`): a bridged server's pod that serves one
//! caller's calls, one at a time, in the same server process (`mcp-bridge --serve`).
//!
//! A pool pod becomes a caller's session when that caller's task claims it: its Job keeps its
//! tool as controller (so the pool's garbage collection still covers it) and gains the label
//! [`SESSION_LABEL`] (the server), the caller's hash and the task it serves. The next call of
//! that caller to the server claims the session while it serves nobody, by the same three
//! conditional steps as a pool pod (record, take, hand over); "take" sets the serving task
//! with a `resourceVersion` precondition, so two calls never share it. A task that ends gives
//! its session back (the serving annotations go, only if still its own). The pod ends when its
//! server has been idle for the pool's `idleSeconds`; the pool deletes ended sessions.
//!
//! A session's log holds every call it served. Each call's messages are signed with its own
//! task's nonce, so no call can take another's lines for its own; and a call's follower starts
//! past the last line logged before its claim ([`log_end`]), read from the kubelet (so no clock
//! is compared with the node's).

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{LogParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::warm_pool::{Reuse, WARM_POOL_LABEL};
use mcp_task_operator_crds::{McpTask, McpTool};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::claim::{Taken, is_warm};
use super::job::WARM_KEY_ANNOTATION;
use crate::FIELD_MANAGER;
use crate::context::Context;
use crate::contract::POD_MESSAGE_NONCE_ANNOTATION;
use crate::controller::mcp_server::offer::SERVER_LABEL;
use crate::controller::mcp_task::build::label_value;
use crate::controller::mcp_task::cache;
use crate::controller::mcp_task::follow::{Checkpoint, LinePos};
use crate::error::{Error, KubeOp, Result};

/// Label on a session's Job: the server (or, for a tool of no server, the tool) it runs.
pub const SESSION_LABEL: &str = "mcptasks.io/session";
/// Annotation on a session's Job: whose it is (a hash of the caller, `spec.owner`).
pub const SESSION_OWNER_ANNOTATION: &str = "mcptasks.io/session-owner";
/// Annotation on a session's Job: the name of the task it serves now (absent: none).
pub const SERVING_TASK_ANNOTATION: &str = "mcptasks.io/serving-task";
/// Annotation on a session's Job: the UID of the task it serves now.
pub const SERVING_UID_ANNOTATION: &str = "mcptasks.io/serving-uid";

/// Whether calls of `tool` reuse a caller's pod.
pub fn reuses(tool: &McpTool) -> bool {
    tool.spec
        .warm_pool
        .as_ref()
        .is_some_and(|p| p.reuse == Some(Reuse::PerCaller))
}

/// The session key of `tool`: its server's name (sessions serve every tool of the server), else
/// its own.
pub fn session_key(tool: &McpTool) -> Option<String> {
    let name = tool
        .labels()
        .get(SERVER_LABEL)
        .cloned()
        .unwrap_or_else(|| tool.name_any());
    label_value(&name)
}

/// The caller's hash: 32 hex digits of SHA-256 of `spec.owner` (the owner itself may be long,
/// and need not be shown on a Job).
pub fn owner_hash(task: &McpTask) -> String {
    let digest = Sha256::digest(task.spec.owner.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Whether `job` is a session.
pub fn is_session(job: &Job) -> bool {
    job.labels().contains_key(SESSION_LABEL)
}

/// The UID of the task `job` serves, if it is a session serving one.
pub fn serving_uid(job: &Job) -> Option<&str> {
    job.annotations()
        .get(SERVING_UID_ANNOTATION)
        .map(String::as_str)
        .filter(|u| !u.is_empty())
}

/// The name of the task `job` serves, if it is a session serving one.
pub fn serving_task(job: &Job) -> Option<&str> {
    job.annotations()
        .get(SERVING_TASK_ANNOTATION)
        .map(String::as_str)
        .filter(|t| !t.is_empty())
}

/// A session of `task`'s caller with `tool`'s server that serves nobody now and that this
/// replica can hand calls to, with its running pod.
pub fn pick(ctx: &Context, tool: &McpTool, task: &McpTask) -> Option<(Job, Pod)> {
    let caches = ctx.caches.get().filter(|c| cache::ready(&c.jobs))?;
    let namespace = tool.namespace()?;
    let key = session_key(tool)?;
    let owner = owner_hash(task);
    caches
        .jobs
        .state()
        .into_iter()
        .filter(|j| j.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|j| is_warm(j) && j.labels().get(SESSION_LABEL) == Some(&key))
        .filter(|j| j.annotations().get(SESSION_OWNER_ANNOTATION) == Some(&owner))
        .filter(|j| serves_nobody(ctx, j) && j.metadata.deletion_timestamp.is_none())
        .filter(|j| {
            j.annotations().get(WARM_KEY_ANNOTATION).map(String::as_str) == Some(ctx.warm.key.id())
        })
        .find_map(|j| {
            let pods = caches
                .pods_by_job
                .pods(&caches.pods, &namespace, &j.name_any());
            let pod = pods.into_iter().find(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })?;
            Some((Job::clone(&j), pod))
        })
}

/// Whether the session `job` serves no task that still runs: none, or one that ended (its
/// give-back may not have reached the cache yet, and the caller's next call must not start a
/// second session for that).
fn serves_nobody(ctx: &Context, job: &Job) -> bool {
    let Some(uid) = serving_uid(job) else {
        return true;
    };
    let (Some(name), Some(tasks)) = (serving_task(job), ctx.tasks.get()) else {
        return false;
    };
    let key =
        kube::runtime::reflector::ObjectRef::new(name).within(&job.namespace().unwrap_or_default());
    match tasks.get(&key).as_deref().and_then(|g| g.0.as_ref().ok()) {
        Some(task) => task.uid().as_deref() == Some(uid) && task.is_terminal(),
        None => false,
    }
}

/// Makes the Job `job` (as cached: a pool pod's, or `task`'s caller's idle session) serve
/// `task`: the serving annotations, the caller and the task's message `nonce`, and the run-time
/// limit of this call (`deadline` seconds from now, the Job having run its age already).
pub async fn take(
    ctx: &Context,
    task: &McpTask,
    tool: &McpTool,
    job: &Job,
    nonce: Option<&str>,
    deadline: Option<i64>,
) -> Result<Taken> {
    let metadata = json!({
        "labels": {SESSION_LABEL: session_key(tool)},
        "annotations": {
            SESSION_OWNER_ANNOTATION: owner_hash(task),
            SERVING_TASK_ANNOTATION: task.name_any(),
            SERVING_UID_ANNOTATION: task.uid(),
            POD_MESSAGE_NONCE_ANNOTATION: nonce,
        },
    });
    super::claim::take_with(ctx, job, metadata, deadline).await
}

/// Gives the session `job` back once the task with `uid` it serves has ended: the serving
/// annotations go, only while they are still that task's (a `resourceVersion` precondition;
/// a Job changed since, by its status say, is read again).
pub async fn release(ctx: &Context, job: &Job, uid: &str) -> Result<()> {
    let name = job.name_any();
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let mut current = Some(job.clone());
    for _ in 0..5 {
        let Some(job) = current.filter(|j| serving_uid(j) == Some(uid)) else {
            return Ok(());
        };
        let patch = json!({
            "metadata": {
                "resourceVersion": job.resource_version(),
                "annotations": {
                    SERVING_TASK_ANNOTATION: null,
                    SERVING_UID_ANNOTATION: null,
                    POD_MESSAGE_NONCE_ANNOTATION: null,
                },
            },
        });
        match api.patch(&name, &params, &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                current = api
                    .get_opt(&name)
                    .await
                    .map_err(|e| Error::kube(KubeOp::Get, "Job", &name, e))?;
            }
            Err(e) => return Err(Error::kube(KubeOp::Patch, "Job", name, e)),
        }
    }
    Err(Error::MissingField {
        kind: "Job",
        field: "metadata.resourceVersion (the session kept changing while it was given back)",
    })
}

/// Where a new call's follower of the session pod `pod` starts: past the last line the kubelet
/// logged before the claim (`None`: nothing logged yet, read from the start).
pub async fn log_end(ctx: &Context, pod: &Pod, container: &str) -> Option<Checkpoint> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &pod.namespace()?);
    let params = LogParams {
        container: Some(container.to_owned()),
        tail_lines: Some(1),
        timestamps: true,
        ..LogParams::default()
    };
    let tail = pods.logs(&pod.name_any(), &params).await.ok()?;
    let stamp = tail.lines().last()?.split_once(' ')?.0;
    Some(Checkpoint {
        pod_uid: pod.uid()?,
        bytes: 0,
        warnings: 0,
        // Every line of that time (however many) is the earlier calls'.
        at: Some(LinePos {
            time: stamp.parse().ok()?,
            nth: u32::MAX,
        }),
    })
}

/// Whether `job` is a pool Job (waiting or a session) of the tool with `uid`.
pub fn of_pool(job: &Job, uid: &str) -> bool {
    job.labels().contains_key(WARM_POOL_LABEL)
        && job
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{task, tool};

    #[test]
    fn a_session_is_keyed_by_its_server_and_its_caller() {
        let mut t = tool();
        assert_eq!(session_key(&t).as_deref(), Some("report"));
        t.labels_mut().insert(SERVER_LABEL.into(), "browser".into());
        assert_eq!(session_key(&t).as_deref(), Some("browser"));
        let mut alice = task();
        alice.spec.owner = "system:serviceaccount:agents:alice".into();
        let mut bob = alice.clone();
        bob.spec.owner = "system:serviceaccount:agents:bob".into();
        assert_eq!(owner_hash(&alice).len(), 32);
        assert_eq!(owner_hash(&alice), owner_hash(&alice.clone()));
        assert_ne!(owner_hash(&alice), owner_hash(&bob));
    }
}
