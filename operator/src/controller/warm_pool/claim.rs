//! A task claims a waiting pod of its tool's pool, in three steps that survive a failover
//! between any two of them, so that a pod serves at most one task and a task at most one pod:
//!
//! 1. **Record** `status.jobName` = the warm Job, only if the task is as read (as for a Job
//!    made for the task, `job_record`).
//! 2. **Take** the Job: make the task its controller, only if the Job is as cached (a
//!    resourceVersion precondition): of two tasks recording the same Job, one takes it; the
//!    pool, which deletes with the same precondition, never deletes a taken one.
//! 3. **Hand over**: POST the task's contract env to the pod's launcher, authenticated by the
//!    Job's claim secret ([`super::key`]). The launcher accepts one task, and the same task
//!    again (a retry after a lost answer). Only then is the Job confirmed (`JobCreated`), and
//!    the task goes on as with a Job of its own.
//!
//! A task that recorded a Job it could not take (another task took it, or it is gone) or hand
//! over (its pod died, or another key started it) gives it back: it deletes the Job if it took
//! it (no tool code ran for it: the launcher ran nothing), erases the record, and starts again,
//! cold if no other pod waits.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;
use mcp_task_operator_crds::{McpTask, McpTool, TASK_LABEL};
use serde_json::json;

use super::job::{WARM_GENERATION_ANNOTATION, WARM_KEY_ANNOTATION, WARM_PORT};
use crate::FIELD_MANAGER;
use crate::context::Context;
use crate::contract::{MESSAGE_NONCE_ENV, POD_MESSAGE_NONCE_ANNOTATION};
use crate::controller::mcp_task::build::label_value;
use crate::controller::mcp_task::cache;
use crate::error::{Error, KubeOp, Result};

/// How long one hand-over may take: the launcher answers at once.
const HAND_OVER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long after taking a Job a task may go on trying to hand itself over to a pod that does
/// not answer (or, for a session, is still busy with an ended call) before it stops trying.
pub const CLAIM_TIMEOUT: SignedDuration = SignedDuration::from_secs(30);
/// Annotation on a taken Job: when the task that took it (last, for a session) took it.
pub const CLAIMED_AT_ANNOTATION: &str = "mcptasks.io/claimed-at";
/// Largest launcher answer read.
const MAX_ANSWER_BYTES: usize = 4096;

/// The client that hands tasks to waiting pods (plain HTTP/1.1 on the pod network: the claim
/// secret authenticates the operator; docs/SECURITY.md says what this trusts).
pub fn http_client() -> HttpClient<HttpConnector, Full<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(HAND_OVER_TIMEOUT));
    connector.set_nodelay(true);
    HttpClient::builder(TokioExecutor::new()).build(connector)
}

/// Whether `pod` waits for a claim: ready (its launcher says so), not being deleted, with an IP.
pub fn waiting(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status.and_then(|s| s.pod_ip.as_deref()).is_some()
        && status.is_some_and(|s| {
            s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// Whether `job` is a warm Job (claimed or not).
pub fn is_warm(job: &Job) -> bool {
    job.labels().contains_key(WARM_POOL_LABEL)
}

/// The Jobs of `tool`'s pool this replica can claim, with their pods: started with this
/// replica's key from the tool's current generation, owned by the tool, not being deleted.
fn claimable(ctx: &Context, tool: &McpTool) -> Vec<(Job, Vec<Pod>)> {
    let Some(caches) = ctx.caches.get().filter(|c| cache::ready(&c.jobs)) else {
        return Vec::new();
    };
    let (Some(namespace), Some(uid)) = (tool.namespace(), tool.uid()) else {
        return Vec::new();
    };
    let Some(pool) = label_value(&tool.name_any()) else {
        return Vec::new();
    };
    let generation = tool.metadata.generation.unwrap_or_default().to_string();
    caches
        .jobs
        .state()
        .into_iter()
        .filter(|j| j.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|j| j.labels().get(WARM_POOL_LABEL) == Some(&pool))
        .filter(|j| !super::session::is_session(j) && j.metadata.deletion_timestamp.is_none())
        .filter(|j| {
            j.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && o.uid == uid)
        })
        .filter(|j| {
            j.annotations().get(WARM_KEY_ANNOTATION).map(String::as_str) == Some(ctx.warm.key.id())
        })
        .filter(|j| j.annotations().get(WARM_GENERATION_ANNOTATION) == Some(&generation))
        .map(|j| {
            let pods = caches
                .pods_by_job
                .pods(&caches.pods, &namespace, &j.name_any());
            (Job::clone(&j), pods)
        })
        .collect()
}

/// A waiting Job of `tool`'s pool the task with `uid` can claim, with its pod: claimable
/// ([`claimable`]), its pod waiting, not reserved for another call ([`super::starting`]).
pub fn pick(ctx: &Context, tool: &McpTool, uid: &str) -> Option<(Job, Pod)> {
    claimable(ctx, tool).into_iter().find_map(|(job, pods)| {
        let pod = pods.into_iter().find(waiting)?;
        let other = super::starting::reserved_for_other(ctx, &job.name_any(), uid);
        (!other).then_some((job, pod))
    })
}

/// The claimable Jobs of `tool`'s pool whose pod is on its way, oldest first: no pod waits
/// yet, the Job is admitted (not suspended) and has not ended, and no pod of it ended.
pub fn starting(ctx: &Context, tool: &McpTool) -> Vec<(Job, Vec<Pod>)> {
    let mut jobs: Vec<(Job, Vec<Pod>)> = claimable(ctx, tool)
        .into_iter()
        .filter(|(job, pods)| {
            let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
            let ended = job.status.as_ref().is_some_and(|s| {
                s.succeeded.unwrap_or(0) > 0
                    || s.failed.unwrap_or(0) > 0
                    || s.completion_time.is_some()
            });
            let pod_ended = pods.iter().any(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                matches!(phase, Some("Succeeded" | "Failed"))
                    || p.metadata.deletion_timestamp.is_some()
            });
            !suspended && !ended && !pod_ended && !pods.iter().any(waiting)
        })
        .collect();
    jobs.sort_by_key(|(job, _)| job.metadata.creation_timestamp.as_ref().map(|t| t.0));
    jobs
}

/// What taking a Job came to.
#[derive(Debug)]
pub enum Taken {
    /// The task controls the Job now.
    Job(Box<Job>),
    /// Another task took it first, or it is gone.
    Lost,
}

/// Makes `task` the controller of the warm Job `job` (as cached), labels it with the task,
/// keeps the task's message `nonce` on it and starts its run-time limit (`deadline` seconds
/// from now, the Job having run `job`'s age already).
pub async fn take(
    ctx: &Context,
    task: &McpTask,
    job: &Job,
    nonce: Option<&str>,
    deadline: Option<i64>,
) -> Result<Taken> {
    let owner = task.controller_owner_ref(&()).ok_or(Error::MissingField {
        kind: "McpTask",
        field: "metadata.uid",
    })?;
    let mut labels = serde_json::Map::new();
    if let Some(id) = label_value(task.task_id()) {
        labels.insert(TASK_LABEL.to_owned(), json!(id));
    }
    let mut annotations = serde_json::Map::new();
    if let Some(nonce) = nonce {
        annotations.insert(POD_MESSAGE_NONCE_ANNOTATION.to_owned(), json!(nonce));
    }
    let metadata = json!({
        "ownerReferences": [owner],
        "labels": labels,
        "annotations": annotations,
    });
    take_with(ctx, job, metadata, deadline).await
}

/// Merges `metadata` into the warm Job `job` only if it is as read (its `resourceVersion`), and
/// sets its run-time limit to `deadline` seconds from now (the Job's `activeDeadlineSeconds`
/// counts from its start: the time it waited is added).
pub async fn take_with(
    ctx: &Context,
    job: &Job,
    mut metadata: serde_json::Value,
    deadline: Option<i64>,
) -> Result<Taken> {
    let name = job.name_any();
    let waited = job
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(0, |t| Timestamp::now().duration_since(t.0).as_secs().max(0));
    metadata["resourceVersion"] = json!(job.resource_version());
    metadata["annotations"][CLAIMED_AT_ANNOTATION] = json!(Timestamp::now().to_string());
    let patch = json!({
        "metadata": metadata,
        "spec": {"activeDeadlineSeconds": deadline.map(|d| d.saturating_add(waited))},
    });
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    match api.patch(&name, &params, &Patch::Merge(&patch)).await {
        Ok(taken) => Ok(Taken::Job(Box::new(taken))),
        Err(kube::Error::Api(s)) if [404, 409, 422].contains(&s.code) => Ok(Taken::Lost),
        Err(e) => Err(Error::kube(KubeOp::Patch, "Job", name, e)),
    }
}

/// Whether the task that took `job` took it more than [`CLAIM_TIMEOUT`] before `now` (a Job
/// with no time of its taking, or an unreadable one, counts as just taken).
pub fn overdue(job: &Job, now: Timestamp) -> bool {
    job.annotations()
        .get(CLAIMED_AT_ANNOTATION)
        .and_then(|t| t.parse::<Timestamp>().ok())
        .is_some_and(|at| now.duration_since(at) > CLAIM_TIMEOUT)
}

/// What handing the task to the pod came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandedOver {
    /// The pod runs the task's call.
    Yes,
    /// The pod cannot run it (another task's, a refused secret, no launcher): give it back.
    Refused(String),
    /// The pod did not answer (yet): try again while it waits, else give it back.
    NoAnswer(String),
}

/// Env naming the server's tool a bridged call runs (set in a bridged tool's template).
pub const BRIDGE_TOOL_ENV: &str = "MCP_BRIDGE_TOOL";

/// The server-side name of the bridged `tool` (its template's [`BRIDGE_TOOL_ENV`]), if any.
pub fn server_tool(tool: &McpTool) -> Option<&str> {
    tool.tool_container()?
        .env
        .iter()
        .flatten()
        .find(|e| e.name == BRIDGE_TOOL_ENV)?
        .value
        .as_deref()
}

/// The claim the launcher of a warm pod gets for the task `task_id`: the contract's `env` of
/// the task, with its message `nonce` when it has one, and the server's tool to call.
pub fn claim_body(
    task_id: &str,
    env: &[(&'static str, String)],
    nonce: Option<&str>,
    server_tool: Option<&str>,
) -> String {
    let mut vars: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if let Some(nonce) = nonce {
        vars.insert(MESSAGE_NONCE_ENV, nonce);
    }
    // A session serves every tool of its server: the call names its own.
    if let Some(tool) = server_tool {
        vars.insert(BRIDGE_TOOL_ENV, tool);
    }
    json!({"taskId": task_id, "env": vars}).to_string()
}

/// POSTs `body` to the launcher of `pod`, with the claim secret of the warm Job `job_name`.
pub async fn hand_over(ctx: &Context, pod: &Pod, job_name: &str, body: String) -> HandedOver {
    let Some(ip) = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()) else {
        return HandedOver::NoAnswer("the pod has no IP yet".into());
    };
    let namespace = pod.namespace().unwrap_or_default();
    let secret = ctx.warm.key.secret(&namespace, job_name);
    let host = match ip.contains(':') {
        true => format!("[{ip}]"),
        false => ip.to_owned(),
    };
    let request = axum::http::Request::post(format!("http://{host}:{WARM_PORT}/claim"))
        .header(
            axum::http::header::AUTHORIZATION,
            format!("Bearer {secret}"),
        )
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)));
    let request = match request {
        Ok(r) => r,
        Err(e) => return HandedOver::Refused(format!("cannot build the claim: {e}")),
    };
    let sent = tokio::time::timeout(HAND_OVER_TIMEOUT, async {
        let response = ctx.warm.http.request(request).await?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default();
        Ok::<_, hyper_util::client::legacy::Error>((status, body))
    })
    .await;
    match sent {
        Err(_) => HandedOver::NoAnswer(format!("no answer within {HAND_OVER_TIMEOUT:?}")),
        Ok(Err(e)) => HandedOver::NoAnswer(format!("cannot reach the pod's launcher: {e}")),
        Ok(Ok((status, _))) if status.is_success() => HandedOver::Yes,
        Ok(Ok((status, body))) => {
            HandedOver::Refused(format!("the launcher answered {status}: {}", body.trim()))
        }
    }
}

/// What a launcher says of itself (`GET /ready`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// It waits for a claim: nothing of any task ran in the pod.
    Waiting,
    /// It was claimed (by the task that controls its Job: only that task's runs claim it).
    Claimed,
    /// No clear answer.
    Unknown,
}

/// Asks the launcher of `pod` whether it waits or was claimed.
pub async fn probe(ctx: &Context, pod: &Pod) -> Launcher {
    let Some(ip) = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()) else {
        return Launcher::Unknown;
    };
    let host = match ip.contains(':') {
        true => format!("[{ip}]"),
        false => ip.to_owned(),
    };
    let Ok(request) = axum::http::Request::get(format!("http://{host}:{WARM_PORT}/ready"))
        .body(Full::new(Bytes::new()))
    else {
        return Launcher::Unknown;
    };
    let answer = tokio::time::timeout(HAND_OVER_TIMEOUT, async {
        let response = ctx.warm.http.request(request).await.ok()?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .ok()?
            .to_bytes();
        Some((status, String::from_utf8_lossy(&body).trim().to_owned()))
    })
    .await;
    match answer {
        Ok(Some((status, body))) if status.is_success() && body == "waiting" => Launcher::Waiting,
        Ok(Some((_, body))) if body == "claimed" => Launcher::Claimed,
        _ => Launcher::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_carries_the_contract_env_and_the_nonce_as_the_launcher_reads_them() {
        let env = vec![
            ("MCP_TASK_ID", "t-1".to_owned()),
            ("MCP_TOOL_ARGUMENTS", r#"{"a":"$(SECRET)"}"#.to_owned()),
        ];
        let body: serde_json::Value =
            serde_json::from_str(&claim_body("t-1", &env, Some("abc"), Some("navigate"))).unwrap();
        assert_eq!(body["taskId"], "t-1");
        // Raw, not kubelet-escaped: no kubelet reads it.
        assert_eq!(body["env"]["MCP_TOOL_ARGUMENTS"], r#"{"a":"$(SECRET)"}"#);
        assert_eq!(body["env"]["MCP_MESSAGE_NONCE"], "abc");
        assert_eq!(body["env"]["MCP_BRIDGE_TOOL"], "navigate");
        let plain: serde_json::Value =
            serde_json::from_str(&claim_body("t-1", &env, None, None)).unwrap();
        assert!(plain["env"].get("MCP_MESSAGE_NONCE").is_none());
    }

    #[test]
    fn a_claim_is_overdue_past_the_claim_timeout_from_its_take() {
        let taken: Timestamp = "2026-12-07T10:00:00Z".parse().unwrap();
        let mut job = Job::default();
        // Never taken (or taken by an operator that wrote no time): never overdue.
        assert!(!overdue(&job, taken));
        job.annotations_mut()
            .insert(CLAIMED_AT_ANNOTATION.into(), taken.to_string());
        assert!(!overdue(&job, taken + CLAIM_TIMEOUT));
        assert!(overdue(
            &job,
            taken + CLAIM_TIMEOUT + SignedDuration::from_secs(1)
        ));
        job.annotations_mut()
            .insert(CLAIMED_AT_ANNOTATION.into(), "yesterday".into());
        assert!(!overdue(&job, taken + SignedDuration::from_hours(48)));
    }
}
