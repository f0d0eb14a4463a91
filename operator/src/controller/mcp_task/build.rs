//! Building the Job that runs one task: the tool's pod template plus the container contract.
//!
//! Pure: no client. The Job is named after the task, owned by it (so garbage collection removes
//! it with the task), never retried, and its tool container gets the contract's env vars and the
//! downward-API volume that projects the pod's cancel and input-responses annotations.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, EnvVar, ObjectFieldSelector, PodSpec,
    PodTemplateSpec, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use mcp_task_operator_crds::mcp_tool::{
    MAX_JOB_METADATA_ENTRIES, RESERVED_JOB_KEY_PREFIX, RESERVED_JOB_KEYS, tool_container_index,
};
use mcp_task_operator_crds::{
    CANCEL_REQUESTED_ANNOTATION, McpTask, McpTool, TRACEPARENT_ANNOTATION,
};
use mcp_task_operator_telemetry::TraceParent;

use super::attempts::QUEUE_NAME_LABEL;

use crate::config::Config;
use crate::contract::yaml_safe::escape_refused_json;
use crate::contract::{
    CANCEL_FILE, ENV_CLIENT_CAPABILITIES, ENV_START_INPUTS, ENV_TASK_ID, ENV_TOOL_ARGUMENTS,
    ENV_TOOL_NAME, ENV_TRACEPARENT, EnvTooLarge, INPUT_RESPONSES_FILE, MOUNT_PATH,
    POD_INPUT_RESPONSES_ANNOTATION, VOLUME_NAME, check_env_size, kubelet_literal,
};

pub use mcp_task_operator_crds::TASK_LABEL;
/// Label on Jobs and pods naming the `McpTool` (object name) they run.
pub const TOOL_LABEL: &str = "mcptasks.io/tool";
/// Value of `app.kubernetes.io/managed-by` and `app.kubernetes.io/part-of`.
pub const MANAGED_BY: &str = crate::NAME;

/// Why a Job could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The task object lacks a field the Job needs (it was never stored by the API server).
    #[error("task has no {field}")]
    MissingTaskField {
        /// The missing field.
        field: &'static str,
    },
    /// The tool's template has no container that runs the tool.
    #[error(
        "tool {tool} has no tool container: the template needs one container, or one named \"tool\""
    )]
    NoToolContainer {
        /// The tool's object name.
        tool: String,
    },
    /// An env var (the arguments, say) is larger than a container can receive.
    #[error(transparent)]
    EnvTooLarge(#[from] EnvTooLarge),
    /// A JSON value for the container could not be serialized.
    #[error("failed to serialize {what}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
}

/// The Job that runs `task` with `tool`: same name and namespace as the task, owned by it.
pub fn build_job(task: &McpTask, tool: &McpTool, config: &Config) -> Result<Job, BuildError> {
    let missing = |field| BuildError::MissingTaskField { field };
    let name = task.metadata.name.clone().ok_or(missing("metadata.name"))?;
    let namespace = task
        .metadata
        .namespace
        .clone()
        .ok_or(missing("metadata.namespace"))?;
    let owner = task
        .controller_owner_ref(&())
        .ok_or(missing("metadata.uid"))?;
    let labels = job_labels(task, tool);
    let mut job_meta_labels = tool_job_metadata(tool.spec.job_labels.as_ref());
    job_meta_labels.extend(labels.clone());
    if let Some(queue) = &tool.spec.queue_name {
        job_meta_labels.insert(QUEUE_NAME_LABEL.to_owned(), queue.clone());
    }
    let annotations = tool_job_metadata(tool.spec.job_annotations.as_ref());
    let retries = tool.spec.retry_on_disruption.filter(|n| *n > 0);
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace),
            labels: Some(job_meta_labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            // One attempt, unless the tool opts in to retries of disruptions only: a tool call
            // is not idempotent in general.
            backoff_limit: Some(retries.map_or(0, |n| i32::try_from(n).unwrap_or(0))),
            pod_failure_policy: retries
                .and(tool.tool_container())
                .map(|c| disruptions_only(&c.name)),
            // Created suspended for an external queue (Kueue), which resumes it on admission.
            suspend: tool.spec.queue_name.as_ref().map(|_| true),
            completions: Some(1),
            parallelism: Some(1),
            // Never start a replacement pod while the first one is still terminating.
            pod_replacement_policy: Some("Failed".to_owned()),
            active_deadline_seconds: tool
                .spec
                .active_deadline_seconds
                .or(config.default_active_deadline_seconds),
            template: build_pod_template(task, tool, labels, config)?,
            ..JobSpec::default()
        }),
        status: None,
    })
}

/// The tool's own Job labels or annotations, without the keys it may not set (the schema
/// refuses them; an object stored under an older schema may still hold them).
pub fn tool_job_metadata(extra: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    extra
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            !k.starts_with(RESERVED_JOB_KEY_PREFIX) && !RESERVED_JOB_KEYS.contains(&k.as_str())
        })
        .take(MAX_JOB_METADATA_ENTRIES)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The pod failure policy of a tool that retries disruptions: a pod disrupted (evicted,
/// preempted, its node lost: condition `DisruptionTarget`) counts against the backoff limit
/// and is replaced; any non-zero exit of the tool container fails the Job at once. NB: the
/// disruption rule comes first, as a disrupted container exits non-zero too.
fn disruptions_only(tool_container: &str) -> PodFailurePolicy {
    PodFailurePolicy {
        rules: vec![
            PodFailurePolicyRule {
                action: "Count".to_owned(),
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".to_owned(),
                    status: "True".to_owned(),
                }]),
                on_exit_codes: None,
            },
            PodFailurePolicyRule {
                action: "FailJob".to_owned(),
                on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                    container_name: Some(tool_container.to_owned()),
                    operator: "NotIn".to_owned(),
                    values: vec![0],
                }),
                on_pod_conditions: None,
            },
        ],
    }
}

/// Labels shared by the Job and its pod: `app.kubernetes.io/*` plus task and tool.
pub fn job_labels(task: &McpTask, tool: &McpTool) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGED_BY.to_owned(),
        ),
        (
            "app.kubernetes.io/part-of".to_owned(),
            MANAGED_BY.to_owned(),
        ),
        ("app.kubernetes.io/component".to_owned(), "task".to_owned()),
    ]);
    if let Some(id) = label_value(task.task_id()) {
        labels.insert("app.kubernetes.io/instance".to_owned(), id.clone());
        labels.insert(TASK_LABEL.to_owned(), id);
    }
    if let Some(tool_name) = label_value(&tool.name_any()) {
        labels.insert("app.kubernetes.io/name".to_owned(), tool_name.clone());
        labels.insert(TOOL_LABEL.to_owned(), tool_name);
    }
    labels
}

/// The pod annotation value projected into the cancel file: the request time, or empty.
pub fn cancel_annotation_value(task: &McpTask) -> String {
    task.annotations()
        .get(CANCEL_REQUESTED_ANNOTATION)
        .cloned()
        .unwrap_or_default()
}

/// The task's trace context: its `mcptasks.io/traceparent` annotation when that is a valid
/// W3C `traceparent` (a malformed one is ignored).
pub fn task_traceparent(task: &McpTask) -> Option<TraceParent> {
    TraceParent::parse(task.annotations().get(TRACEPARENT_ANNOTATION)?)
}

/// The pod annotation value projected into the input-responses file: the answers as JSON.
pub fn input_responses_annotation_value(task: &McpTask) -> Result<String, BuildError> {
    pod_json(task.spec.input_responses.as_ref(), "spec.inputResponses")
}

/// `value` (the task's field `what`) as JSON for its pod, an empty object if it is absent.
/// NB: escaped, or a character the API server refuses in an apply patch (a client may send
/// any) would fail every apply of the Job.
fn pod_json(
    value: Option<&impl serde::Serialize>,
    what: &'static str,
) -> Result<String, BuildError> {
    match value {
        None => Ok("{}".to_owned()),
        Some(value) => serde_json::to_string(value)
            .map(escape_refused_json)
            .map_err(|source| BuildError::Serialize { what, source }),
    }
}

fn build_pod_template(
    task: &McpTask,
    tool: &McpTool,
    labels: BTreeMap<String, String>,
    config: &Config,
) -> Result<PodTemplateSpec, BuildError> {
    let annotations = [
        (
            CANCEL_REQUESTED_ANNOTATION.to_owned(),
            cancel_annotation_value(task),
        ),
        (
            POD_INPUT_RESPONSES_ANNOTATION.to_owned(),
            input_responses_annotation_value(task)?,
        ),
    ];
    let (mut template, index) = contract_pod_template(tool, labels, annotations, config)?;
    let env = contract_env(task, tool)?;
    if let Some(spec) = template.spec.as_mut() {
        let container_env = spec.containers[index].env.get_or_insert_with(Vec::new);
        container_env.retain(|e| !env.iter().any(|ours| ours.name == e.name));
        container_env.extend(env);
    }
    Ok(template)
}

/// The tool's pod template with the contract's volume, mounted in the tool container, and
/// everything else a task's pod gets but the task's own env: `labels` and the pod
/// `annotations` the volume projects added. Also returns the tool container's index. A warm
/// pod is this template, its task's env arriving with the claim.
pub fn contract_pod_template(
    tool: &McpTool,
    labels: BTreeMap<String, String>,
    annotations: impl IntoIterator<Item = (String, String)>,
    config: &Config,
) -> Result<(PodTemplateSpec, usize), BuildError> {
    let mut template = tool.spec.template.clone();
    let meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    meta.labels.get_or_insert_with(BTreeMap::new).extend(labels);
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .extend(annotations);

    let no_container = || BuildError::NoToolContainer {
        tool: tool.name_any(),
    };
    let spec: &mut PodSpec = template.spec.as_mut().ok_or_else(no_container)?;
    spec.restart_policy = Some("Never".to_owned());
    // The tool talks to nothing in the cluster unless its template asks for a token.
    spec.automount_service_account_token = spec.automount_service_account_token.or(Some(false));
    add_node_lost_tolerations(spec, config.node_lost_toleration);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != VOLUME_NAME);
    volumes.push(contract_volume());

    let index = tool_container_index(&spec.containers).ok_or_else(no_container)?;
    let container = &mut spec.containers[index];
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    mounts.retain(|m| m.name != VOLUME_NAME && m.mount_path != MOUNT_PATH);
    mounts.push(VolumeMount {
        name: VOLUME_NAME.to_owned(),
        mount_path: MOUNT_PATH.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    });
    Ok((template, index))
}

/// Taints the node controller puts on a node it lost (no heartbeats) or that is not ready.
pub const NODE_LOST_TAINTS: [&str; 2] = [
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/not-ready",
];

/// Bounds how long the pod stays bound to a lost node: a NoExecute toleration of
/// `after` for each of [`NODE_LOST_TAINTS`] that the template does not tolerate already
/// (a tool's own toleration of that key, or of every key, whatever its effect or time, wins). Without it the
/// DefaultTolerationSeconds admission plugin gives 300 s, and the task waits that long.
fn add_node_lost_tolerations(spec: &mut PodSpec, after: std::time::Duration) {
    let seconds = i64::try_from(after.as_secs()).unwrap_or(i64::MAX);
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for key in NODE_LOST_TAINTS {
        // NB: an empty key with `Exists` tolerates every taint.
        let tolerated = |t: &Toleration| match t.key.as_deref() {
            None | Some("") => t.operator.as_deref() == Some("Exists"),
            Some(k) => k == key,
        };
        if tolerations.iter().any(tolerated) {
            continue;
        }
        tolerations.push(Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some("NoExecute".to_owned()),
            toleration_seconds: Some(seconds),
            value: None,
        });
    }
}

/// The contract's env vars. NB: every value goes through [`kubelet_literal`]: the kubelet
/// would otherwise expand `$(NAME)` in caller data with the template's own env (secrets too).
fn contract_env(task: &McpTask, tool: &McpTool) -> Result<Vec<EnvVar>, BuildError> {
    Ok(contract_values(task, tool)?
        .into_iter()
        .map(|(name, value)| EnvVar {
            name: name.to_owned(),
            value: Some(kubelet_literal(&value)),
            value_from: None,
        })
        .collect())
}

/// The contract's env vars of `task` as the tool container receives them (unescaped), each
/// checked to fit one env var. A warm pod gets them so with its claim.
pub fn contract_values(
    task: &McpTask,
    tool: &McpTool,
) -> Result<Vec<(&'static str, String)>, BuildError> {
    let var = |name: &'static str, value: String| -> Result<(&'static str, String), BuildError> {
        check_env_size(name, &value)?;
        Ok((name, value))
    };
    let arguments = pod_json(task.spec.arguments.as_ref(), "spec.arguments")?;
    let capabilities = pod_json(
        task.spec.client_capabilities.as_ref(),
        "spec.clientCapabilities",
    )?;
    let mut env = vec![
        var(ENV_TASK_ID, task.task_id().to_owned())?,
        var(ENV_TOOL_NAME, task.spec.tool.clone())?,
        var(ENV_TOOL_ARGUMENTS, arguments)?,
        var(ENV_CLIENT_CAPABILITIES, capabilities)?,
    ];
    let has_start_inputs = tool
        .spec
        .start_inputs
        .as_ref()
        .is_some_and(|s| !s.is_empty());
    if has_start_inputs || task.spec.start_input_responses.is_some() {
        let answers = pod_json(
            task.spec.start_input_responses.as_ref(),
            "spec.startInputResponses",
        )?;
        env.push(var(ENV_START_INPUTS, answers)?);
    }
    // Rendered from the parsed IDs, so only the W3C format reaches the container.
    if let Some(trace) = task_traceparent(task) {
        env.push(var(ENV_TRACEPARENT, trace.to_string())?);
    }
    Ok(env)
}

fn contract_volume() -> Volume {
    let file = |path: &str, annotation: &str| DownwardAPIVolumeFile {
        path: path.to_owned(),
        field_ref: Some(ObjectFieldSelector {
            api_version: None,
            field_path: format!("metadata.annotations['{annotation}']"),
        }),
        ..DownwardAPIVolumeFile::default()
    };
    Volume {
        name: VOLUME_NAME.to_owned(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![
                file(CANCEL_FILE, CANCEL_REQUESTED_ANNOTATION),
                file(INPUT_RESPONSES_FILE, POD_INPUT_RESPONSES_ANNOTATION),
            ]),
            default_mode: None,
        }),
        ..Volume::default()
    }
}

/// A valid label value made from `s`: allowed characters only, at most 63, alphanumeric ends.
pub fn label_value(s: &str) -> Option<String> {
    let kept: String = s
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(63)
        .collect();
    let trimmed = kept.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_policy;
