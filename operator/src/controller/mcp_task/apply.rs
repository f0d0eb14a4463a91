//! The McpTask controller's API calls: find the tool, ensure the one Job, read the pod, keep the
//! pod's annotations in step with the task, delete, and write status by server-side apply.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::Store;
use kube::{Client, ResourceExt};
use mcp_task_operator_crds::{
    CANCEL_REQUESTED_ANNOTATION, JOB_NAME_LABEL, McpTask, McpTaskStatus, McpTool,
};
use serde_json::json;

use super::build::{cancel_annotation_value, input_responses_annotation_value};
use super::observe::controlled_by;
use super::tool_identity;
use crate::FIELD_MANAGER;
use crate::contract::POD_INPUT_RESPONSES_ANNOTATION;
use crate::error::{Error, KubeOp, Result};

/// The McpTool of `namespace` (the task's) whose MCP name is `task.spec.tool`, preferring the one
/// its call was authorized on ([`tool_identity::is_authorized`]), then a Ready one: from the
/// McpTool controller's cache when it has one, else (a tool newer than the cache, the
/// authorized one among them, or no cache yet) from the API server. Malformed tools are
/// skipped, never fatal.
pub async fn find_tool(
    client: &Client,
    cache: Option<&Store<DeserializeGuard<McpTool>>>,
    namespace: &str,
    task: &McpTask,
) -> Result<Option<McpTool>> {
    let mcp_name = task.spec.tool.as_str();
    let pick = |tools: Vec<McpTool>| {
        let mut matching: Vec<McpTool> = tools
            .into_iter()
            .filter(|t| t.namespace().as_deref() == Some(namespace) && t.mcp_name() == mcp_name)
            .collect();
        matching.sort_by_key(|t| (!tool_identity::is_authorized(task, t), !t.is_ready()));
        matching.into_iter().next()
    };
    if let Some(cache) = cache {
        let cached = cache
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok().cloned())
            .collect();
        // A cache behind the front end may not hold the authorized tool yet: ask the API server.
        if let Some(tool) = pick(cached).filter(|t| tool_identity::is_authorized(task, t)) {
            return Ok(Some(tool));
        }
    }
    let tools: Api<DeserializeGuard<McpTool>> = Api::namespaced(client.clone(), namespace);
    let list = tools
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube(KubeOp::List, "McpTool", namespace, e))?;
    Ok(pick(
        list.items.into_iter().filter_map(|g| g.0.ok()).collect(),
    ))
}

/// The task's Job, if it exists.
pub async fn get_job(client: &Client, namespace: &str, name: &str) -> Result<Option<Job>> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    jobs.get_opt(name)
        .await
        .map_err(|e| Error::kube(KubeOp::Get, "Job", name, e))
}

/// What came of creating a Job.
#[derive(Debug)]
pub enum Created {
    /// The Job exists: created now, or found there (whose it is, the caller checks).
    Job(Box<Job>),
    /// The API server refused the Job (quota, admission webhook, invalid template): its
    /// message, bounded to [`MAX_REFUSAL_CHARS`].
    Refused(String),
}

/// Most characters of an API server refusal kept for a task's error.
pub const MAX_REFUSAL_CHARS: usize = 1024;

/// Creates `desired` (a POST: an existing Job of the name, whoever's, is never changed).
/// Called only when the Job did not exist and the task has recorded it ([`record_job`]). A Job
/// of the name that exists already (a racing run, or an earlier task of the same name) is
/// returned for the caller to check whose it is. A refusal (400, 403, 422) is
/// [`Created::Refused`]: retrying would be refused again.
pub async fn create_job(client: &Client, namespace: &str, desired: &Job) -> Result<Created> {
    let name = desired.name_any();
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    match jobs.create(&params, desired).await {
        Ok(job) => Ok(Created::Job(Box::new(job))),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            match get_job(client, namespace, &name).await? {
                Some(job) => Ok(Created::Job(Box::new(job))),
                None => Err(Error::MissingField {
                    kind: "Job",
                    field: "metadata (the Job of the name vanished while being created)",
                }),
            }
        }
        Err(kube::Error::Api(status)) if [400, 403, 422].contains(&status.code) => {
            Ok(Created::Refused(bounded(&status.message)))
        }
        Err(e) => Err(Error::kube(KubeOp::Create, "Job", name, e)),
    }
}

/// `message` cut to [`MAX_REFUSAL_CHARS`] characters.
pub fn bounded(message: &str) -> String {
    match message.char_indices().nth(MAX_REFUSAL_CHARS) {
        Some((at, _)) => format!("{}...", &message[..at]),
        None => message.to_owned(),
    }
}

/// When the Job controller first failed to create a pod of `job` (its `FailedCreate` Event)
/// and what the API server said, if it did: the Event's first time is kept by the API server,
/// so the grace period survives an operator restart.
pub async fn pods_refused_since(
    client: &Client,
    namespace: &str,
    job: &Job,
) -> Result<Option<(Timestamp, String)>> {
    let Some(uid) = job.uid() else {
        return Ok(None);
    };
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().fields(&format!("regarding.uid={uid},reason=FailedCreate"));
    let list = events
        .list(&params)
        .await
        .map_err(|e| Error::kube(KubeOp::List, "Event", job.name_any(), e))?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|e| {
            let first = e
                .deprecated_first_timestamp
                .map(|t| t.0)
                .or(e.event_time.map(|t| t.0))
                .or(e.metadata.creation_timestamp.map(|t| t.0))?;
            Some((first, bounded(e.note.as_deref().unwrap_or_default())))
        })
        .min_by_key(|(first, _)| *first))
}

/// What the kubelet last said about the volumes of `pod` that it failed to mount (the note
/// of its newest `FailedMount` Event, which names the volume and the missing Secret or
/// ConfigMap), if it failed to mount any.
pub async fn mount_failure(client: &Client, namespace: &str, pod: &Pod) -> Result<Option<String>> {
    let Some(uid) = pod.uid() else {
        return Ok(None);
    };
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().fields(&format!("regarding.uid={uid},reason=FailedMount"));
    let list = events
        .list(&params)
        .await
        .map_err(|e| Error::kube(KubeOp::List, "Event", pod.name_any(), e))?;
    // A repeated Event is one series: its last time moves, its first stays.
    let last = |e: &Event| {
        e.series
            .as_ref()
            .map(|s| s.last_observed_time.0)
            .or(e.deprecated_last_timestamp.as_ref().map(|t| t.0))
            .or(e.event_time.as_ref().map(|t| t.0))
            .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
    };
    Ok(list
        .items
        .iter()
        .max_by_key(|e| last(e))
        .map(|e| bounded(e.note.as_deref().unwrap_or_default())))
}

/// The pods of the task's Job: labelled with its name and controlled by it (its UID). A pod
/// that only copies the label (anyone may) is never read, followed or annotated.
pub async fn list_pods(client: &Client, namespace: &str, job: &Job) -> Result<Vec<Pod>> {
    let name = job.name_any();
    // NB: the API server gives every object a UID; an empty one matches no reference.
    let job_uid = job.uid().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(&format!("{JOB_NAME_LABEL}={name}"));
    let list = pods
        .list(&params)
        .await
        .map_err(|e| Error::kube(KubeOp::List, "Pod", &name, e))?;
    Ok(list
        .items
        .into_iter()
        .filter(|p| controlled_by(&p.metadata, &job_uid))
        .collect())
}

/// Most bytes the API server accepts in all of an object's annotations together (keys and
/// values): 256 KiB.
pub const MAX_POD_ANNOTATION_BYTES: usize = 256 * 1024;

/// What keeping the pod's annotations in step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodSync {
    /// Nothing to do, or done.
    Synced,
    /// The answers cannot fit the pod's annotations; they were not sent (the cancel was).
    AnswersTooLarge(String),
}

/// Patches the live pod's cancel and input-responses annotations when they lag the task; the
/// kubelet then refreshes the files in /var/run/mcp.
///
/// The cancel goes in a patch of its own, first: it is a few bytes and must never wait on the
/// answers, which may not fit. Answers that would take the pod's annotations over
/// [`MAX_POD_ANNOTATION_BYTES`] (or that the API server refuses as invalid) are not retried:
/// [`PodSync::AnswersTooLarge`] says why.
pub async fn sync_pod_annotations(client: &Client, task: &McpTask, pod: &Pod) -> Result<PodSync> {
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    if finished || pod.metadata.deletion_timestamp.is_some() {
        return Ok(PodSync::Synced);
    }
    let name = pod.name_any();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    let patch = |key: &str, value: &str| {
        let patch = json!({"metadata": {"annotations": {key: value}}});
        let (pods, name) = (pods.clone(), name.clone());
        async move {
            pods.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    let current = pod.annotations();
    let cancel = cancel_annotation_value(task);
    if current.get(CANCEL_REQUESTED_ANNOTATION) != Some(&cancel) {
        patch(CANCEL_REQUESTED_ANNOTATION, &cancel)
            .await
            .map_err(|e| Error::kube(KubeOp::Patch, "Pod", &name, e))?;
    }
    let inputs = input_responses_annotation_value(task).map_err(|e| Error::BuildJob {
        task: task.name_any(),
        source: e,
    })?;
    if current.get(POD_INPUT_RESPONSES_ANNOTATION) == Some(&inputs) {
        return Ok(PodSync::Synced);
    }
    let others: usize = current
        .iter()
        .filter(|(k, _)| k.as_str() != POD_INPUT_RESPONSES_ANNOTATION)
        .map(|(k, v)| k.len() + v.len())
        .sum();
    let total = others + POD_INPUT_RESPONSES_ANNOTATION.len() + inputs.len();
    if total > MAX_POD_ANNOTATION_BYTES {
        return Ok(PodSync::AnswersTooLarge(format!(
            "the answers take {} bytes; with the pod's other annotations that is {total} bytes, \
             over the {MAX_POD_ANNOTATION_BYTES}-byte limit of a pod's annotations",
            inputs.len()
        )));
    }
    match patch(POD_INPUT_RESPONSES_ANNOTATION, &inputs).await {
        Ok(_) => Ok(PodSync::Synced),
        Err(kube::Error::Api(s)) if s.code == 422 => {
            Ok(PodSync::AnswersTooLarge(bounded(&s.message)))
        }
        Err(e) => Err(Error::kube(KubeOp::Patch, "Pod", name, e)),
    }
}

/// Deletes the task's Job and, by background propagation, its pod. Gone already is fine.
pub async fn delete_job(client: &Client, namespace: &str, name: &str) -> Result<()> {
    delete::<Job>(client, namespace, name, "Job").await
}

/// Deletes the `K` (`kind`) `name` in `namespace`; what it owns follows by background
/// propagation. Gone already is fine.
async fn delete<K>(client: &Client, namespace: &str, name: &str, kind: &'static str) -> Result<()>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(Error::kube(KubeOp::Delete, kind, name, e)),
    }
}

/// The task as the API server has it now (not the controller's cache), if it still exists.
///
/// A get without a resourceVersion is a quorum read, so it sees the operator's own last write.
pub async fn get_task(client: &Client, namespace: &str, name: &str) -> Result<Option<McpTask>> {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), namespace);
    tasks
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(KubeOp::Get, "McpTask", name, e))
}

/// Deletes an expired task; its Job and pod follow by garbage collection.
pub async fn delete_task(client: &Client, namespace: &str, name: &str) -> Result<()> {
    delete::<McpTask>(client, namespace, name, "McpTask").await
}

/// What came of a status patch made only if the task is as it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patched {
    /// The status now carries the patch.
    Done,
    /// The task changed since it was read (a stale cache), or is gone: nothing was written.
    Stale,
}

/// Moves the expiry of a task that still runs to `to` (`status.expiresAt`). Made only if the
/// task is as read, so a task that has ended since is never extended from a stale copy.
pub async fn extend_expiry(client: &Client, task: &McpTask, to: Timestamp) -> Result<Patched> {
    patch_status_if_current(client, task, json!({"expiresAt": to.to_string()})).await
}

/// Records the task's Job (`status.jobName`) before the Job is created. Made only if the task
/// is as read: a copy older than another run's record (a stale cache) claims nothing, so at
/// most one run creates the Job, and a task whose Job was deleted never gets another.
pub async fn record_job(client: &Client, task: &McpTask) -> Result<Patched> {
    record_job_named(client, task, &task.name_any()).await
}

/// Records the Job `name` as the task's, as [`record_job`] does: a warm Job it is about to
/// claim has a name of its own.
pub async fn record_job_named(client: &Client, task: &McpTask, name: &str) -> Result<Patched> {
    patch_status_if_current(client, task, json!({"jobName": name})).await
}

/// Erases the task's record of a warm Job it could not claim (`status.jobName`), only if the
/// task is as read: the run that reads it next starts again.
pub async fn erase_job_record(client: &Client, task: &McpTask) -> Result<Patched> {
    patch_status_if_current(client, task, json!({"jobName": null})).await
}

/// Merges `fields` into the task's status if its `resourceVersion` is still the one read
/// (the API server refuses the patch with 409 otherwise).
async fn patch_status_if_current(
    client: &Client,
    task: &McpTask,
    mut fields: serde_json::Value,
) -> Result<Patched> {
    let name = task.name_any();
    let tasks: Api<McpTask> =
        Api::namespaced(client.clone(), &task.namespace().unwrap_or_default());
    if task.status.is_none() {
        // The schema needs a status value; a task without status is working.
        fields["status"] = json!("working");
    }
    let patch = json!({
        "metadata": {"resourceVersion": task.resource_version()},
        "status": fields,
    });
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    match tasks
        .patch_status(&name, &params, &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(Patched::Done),
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(Patched::Stale),
        Err(e) => Err(Error::kube(KubeOp::Patch, "McpTask status", name, e)),
    }
}

/// Writes the task's status by server-side apply (fields left out are released); returns the
/// task's `resourceVersion` after the write.
pub async fn apply_status(
    client: &Client,
    task: &McpTask,
    status: &McpTaskStatus,
) -> Result<Option<String>> {
    crate::controller::apply_status(client, task, status, "McpTask status").await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::{Request, Response};
    use kube::client::Body;
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::fixtures::tool;

    /// A task of `mcp_name`, bound to the McpTool of `uid` when one is given.
    fn task_of_uid(mcp_name: &str, uid: Option<&str>) -> McpTask {
        serde_json::from_value(json!({
            "metadata": {"name": "t", "namespace": "tools"},
            "spec": {"tool": mcp_name, "owner": "o", "toolUid": uid},
        }))
        .expect("an McpTask")
    }

    fn task_of(mcp_name: &str) -> McpTask {
        task_of_uid(mcp_name, None)
    }

    #[tokio::test]
    async fn find_tool_uses_the_cache_without_calling_the_api() {
        // Nobody answers this client: an API call would time out the test.
        let (service, _handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let (cache, mut writer) = reflector::store::<DeserializeGuard<McpTool>>();
        writer.apply_watcher_event(&watcher::Event::Apply(DeserializeGuard(Ok(tool()))));
        let invalid = kube::core::error_boundary::InvalidObject {
            error: "bad".into(),
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("broken".into()),
                namespace: Some("tools".into()),
                ..Default::default()
            },
        };
        writer.apply_watcher_event(&watcher::Event::Apply(DeserializeGuard(Err(invalid))));
        let found = tokio::time::timeout(
            Duration::from_secs(5),
            find_tool(&client, Some(&cache), "tools", &task_of("restock_report")),
        )
        .await
        .expect("answered from the cache")
        .unwrap();
        assert_eq!(found.map(|t| t.name_any()).as_deref(), Some("report"));
    }

    #[tokio::test]
    async fn find_tool_prefers_the_tool_the_call_was_authorized_on_to_a_ready_duplicate() {
        let (service, _handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let (cache, mut writer) = reflector::store::<DeserializeGuard<McpTool>>();
        // The Ready one first; the authorized duplicate is not Ready (say, rejected later).
        let mut ready = tool();
        ready.metadata.uid = Some("ready".into());
        ready.status = serde_json::from_value(json!({
            "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Valid", "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        }))
        .expect("a Ready status");
        let mut authorized = tool();
        authorized.metadata.name = Some("report-copy".into());
        authorized.metadata.uid = Some("authorized".into());
        authorized.status = None;
        for t in [ready, authorized] {
            writer.apply_watcher_event(&watcher::Event::Apply(DeserializeGuard(Ok(t))));
        }
        let find = |task: McpTask| {
            let (client, cache) = (client.clone(), cache.clone());
            async move {
                tokio::time::timeout(
                    Duration::from_secs(5),
                    find_tool(&client, Some(&cache), "tools", &task),
                )
                .await
                .expect("answered from the cache")
                .unwrap()
                .map(|t| t.name_any())
            }
        };
        let bound = task_of_uid("restock_report", Some("authorized"));
        assert_eq!(find(bound).await.as_deref(), Some("report-copy"));
        assert_eq!(
            find(task_of("restock_report")).await.as_deref(),
            Some("report")
        );
    }
}
