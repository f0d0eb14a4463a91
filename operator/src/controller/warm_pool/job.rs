//! The warm Job of a tool's pool: the tool's pod template, the contract's volume, and the tool
//! container's command behind the launcher, with no task data at all. Pure: no client.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{EnvVar, HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Resource, ResourceExt};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;
use rand::Rng;

use super::key::ClaimKey;
use crate::config::Config;
use crate::contract::{MESSAGE_NONCE_ENV, POD_INPUT_RESPONSES_ANNOTATION};
use crate::controller::mcp_server::bridged::{BRIDGE_BINARY, mount_bridge};
use crate::controller::mcp_task::attempts::QUEUE_NAME_LABEL;
use crate::controller::mcp_task::build::{
    BuildError, MANAGED_BY, TOOL_LABEL, contract_pod_template, label_value, tool_job_metadata,
};
use crate::policy::{PolicyViolation, check_job};
use mcp_task_operator_crds::CANCEL_REQUESTED_ANNOTATION;

/// The port the launcher listens on for the claim (and the kubelet's readiness probe).
pub const WARM_PORT: i32 = 7474;
/// Env of the waiting container: the SHA-256 of its claim secret, as hex.
pub const ENV_CLAIM_KEY_SHA256: &str = "MCP_WARM_CLAIM_KEY_SHA256";
/// Env of the waiting container: the port to listen on.
pub const ENV_PORT: &str = "MCP_WARM_PORT";
/// Env of the waiting container: how long to wait for a claim before it ends by itself.
pub const ENV_MAX_WAIT_SECONDS: &str = "MCP_WARM_MAX_WAIT_SECONDS";
/// Annotation on a warm Job: the ID of the claim key its secret comes from.
pub const WARM_KEY_ANNOTATION: &str = "mcptasks.io/warm-key";
/// Annotation on a warm Job: the tool's `metadata.generation` it was made from.
pub const WARM_GENERATION_ANNOTATION: &str = "mcptasks.io/warm-tool-generation";
/// How much longer than the pool's idle time a launcher waits before it ends by itself (when
/// no operator replaced it, say while none leads).
const LAUNCHER_MARGIN_SECONDS: i64 = 60;

/// Why a tool's pool cannot start pods (calls run cold meanwhile).
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    /// The tool container sets no command for the launcher to run.
    #[error(
        "the tool container sets no command: a warm pod's launcher runs it once claimed, and the operator cannot read an image's entrypoint"
    )]
    NoCommand,
    /// No bridge image is configured (`MCP_OPERATOR_BRIDGE_IMAGE`), so there is no launcher.
    #[error(
        "no bridge image is configured (MCP_OPERATOR_BRIDGE_IMAGE): the launcher comes from it"
    )]
    NoBridgeImage,
    /// Reuse needs a server that serves call after call (a bridged MCP server).
    #[error(
        "warmPool.reuse needs a bridged MCP server (an McpServer's tool): a native tool's process serves one call"
    )]
    ReuseNeedsServer,
    /// The tool retries disruptions, which needs a new pod for each attempt.
    #[error(
        "the tool sets retryOnDisruption: a retried attempt needs a pod of its own, so its calls start cold"
    )]
    Retries,
    /// The template cannot be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The tool policy refuses the pod.
    #[error(transparent)]
    Policy(#[from] PolicyViolation),
}

/// A fresh warm Job name for `tool`: its name (up to 50 characters) and `-w` and ten random
/// characters, within the 63 a Job's name may have (its pods carry it as a label value).
pub fn warm_job_name(tool: &McpTool) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let name = tool.name_any();
    let prefix: String = name.chars().take(50).collect();
    let prefix = prefix.trim_end_matches(['-', '.']);
    let mut rng = rand::rng();
    let suffix: String = (0..10)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{prefix}-w{suffix}")
}

/// The warm Job `name` of `tool`'s pool, owned by the tool, its pod waiting for a claim that
/// only `key` can make.
pub fn warm_job(
    tool: &McpTool,
    config: &Config,
    key: &ClaimKey,
    name: &str,
) -> Result<Job, WarmError> {
    let pool = tool.spec.warm_pool.clone().unwrap_or_default();
    if tool.spec.retry_on_disruption.is_some_and(|n| n > 0) {
        return Err(WarmError::Retries);
    }
    let namespace = tool.namespace().unwrap_or_default();
    let owner = tool
        .controller_owner_ref(&())
        .ok_or(BuildError::MissingTaskField {
            field: "McpTool metadata.uid",
        })?;
    let labels = pool_labels(tool);
    let annotations = [
        (CANCEL_REQUESTED_ANNOTATION.to_owned(), String::new()),
        (POD_INPUT_RESPONSES_ANNOTATION.to_owned(), "{}".to_owned()),
    ];
    let (mut template, index) = contract_pod_template(tool, labels.clone(), annotations, config)?;
    let pod = template.spec.as_mut().ok_or(BuildError::NoToolContainer {
        tool: tool.name_any(),
    })?;
    let container = &mut pod.containers[index];
    let command = container
        .command
        .take()
        .filter(|c| !c.is_empty())
        .ok_or(WarmError::NoCommand)?;
    let args = container.args.take().unwrap_or_default();
    let bridged = command.first().is_some_and(|c| c == BRIDGE_BINARY);
    let reuse = super::session::reuses(tool);
    if reuse && !bridged {
        return Err(WarmError::ReuseNeedsServer);
    }
    // A server that serves one caller's calls in turn, or one call.
    let mode = if reuse { "--serve" } else { "--warm" };
    let launcher: Vec<String> = match bridged {
        // A bridged server's tool: the bridge starts the server and initializes it first.
        true => [BRIDGE_BINARY.to_owned(), mode.to_owned()]
            .into_iter()
            .chain(command.into_iter().skip(1))
            .chain(args)
            .collect(),
        false => [
            BRIDGE_BINARY.to_owned(),
            "--launch".to_owned(),
            "--".to_owned(),
        ]
        .into_iter()
        .chain(command)
        .chain(args)
        .collect(),
    };
    container.command = Some(launcher);
    let env = container.env.get_or_insert_with(Vec::new);
    // The nonce comes with the claim; the pod's annotation holds none.
    env.retain(|e| {
        e.name != MESSAGE_NONCE_ENV
            && ![ENV_CLAIM_KEY_SHA256, ENV_PORT, ENV_MAX_WAIT_SECONDS].contains(&e.name.as_str())
    });
    let literal = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        value_from: None,
    };
    env.extend([
        literal(ENV_CLAIM_KEY_SHA256, key.secret_hash(&namespace, name)),
        literal(ENV_PORT, WARM_PORT.to_string()),
        // A waiting pod is replaced by the pool at idleSeconds (the launcher's own end is the
        // backstop); a caller's session ends by itself after idleSeconds without a call.
        literal(
            ENV_MAX_WAIT_SECONDS,
            match reuse {
                true => pool.idle_seconds,
                false => pool.idle_seconds + LAUNCHER_MARGIN_SECONDS,
            }
            .to_string(),
        ),
    ]);
    // Ready while it waits for a claim (for a bridged server: once the server answered
    // `initialize`); the operator claims only ready pods.
    container.readiness_probe = Some(Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/ready".to_owned()),
            port: IntOrString::Int(WARM_PORT),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(1),
        failure_threshold: Some(1),
        timeout_seconds: Some(1),
        ..Probe::default()
    });
    if !bridged {
        let image = config
            .bridge_image
            .as_deref()
            .ok_or(WarmError::NoBridgeImage)?;
        mount_bridge(pod, index, image);
    }
    let mut job_labels = tool_job_metadata(tool.spec.job_labels.as_ref());
    job_labels.extend(labels);
    if let Some(queue) = &tool.spec.queue_name {
        job_labels.insert(QUEUE_NAME_LABEL.to_owned(), queue.clone());
    }
    let mut job_annotations = tool_job_metadata(tool.spec.job_annotations.as_ref());
    job_annotations.insert(WARM_KEY_ANNOTATION.to_owned(), key.id().to_owned());
    job_annotations.insert(
        WARM_GENERATION_ANNOTATION.to_owned(),
        tool.metadata.generation.unwrap_or_default().to_string(),
    );
    let job = Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace),
            labels: Some(job_labels),
            annotations: Some(job_annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            // Created suspended for an external queue (Kueue), which admits it as any Job.
            suspend: tool.spec.queue_name.as_ref().map(|_| true),
            completions: Some(1),
            parallelism: Some(1),
            pod_replacement_policy: Some("Failed".to_owned()),
            // The run time counts from the claim: set then, from the tool's limit.
            active_deadline_seconds: None,
            template,
            ..JobSpec::default()
        }),
        status: None,
    };
    check_job(&job, &config.tool_policy)?;
    Ok(job)
}

/// Labels of a warm Job and its pod: the operator's (its watches select on
/// `app.kubernetes.io/managed-by`), the tool's and the pool's.
fn pool_labels(tool: &McpTool) -> BTreeMap<String, String> {
    let name = label_value(&tool.name_any()).unwrap_or_default();
    BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGED_BY.to_owned(),
        ),
        (
            "app.kubernetes.io/part-of".to_owned(),
            MANAGED_BY.to_owned(),
        ),
        (
            "app.kubernetes.io/component".to_owned(),
            "warm-pool".to_owned(),
        ),
        (TOOL_LABEL.to_owned(), name.clone()),
        (WARM_POOL_LABEL.to_owned(), name),
    ])
}

#[cfg(test)]
mod tests;
