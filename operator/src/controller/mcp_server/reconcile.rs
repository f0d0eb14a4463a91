//! The McpServer reconciler: run the server once in a discovery Job (the bridge's `--list`),
//! read the tool list from the Job's log, apply one McpTool per offered tool (deleting the
//! server's McpTools no longer offered), and report it all in status with a `Ready` condition.
//!
//! Discovery runs once per generation; it runs again when an offered McpTool is missing.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::mcp_server::{Discovery, McpServerStatus};
use mcp_task_operator_crds::mcp_tool::READY_CONDITION;
use mcp_task_operator_crds::{McpServer, McpTool};
use serde_json::Value;
use tracing::instrument;

use super::bridged::{Mode, bridged};
use super::offer::{SERVER_LABEL, offer, owner};
use crate::FIELD_MANAGER;
use crate::context::Context;
use crate::controller::reconcile_guarded;
use crate::error::{Error, KubeOp, Result};
use crate::policy::check_job;

/// Name of this controller in metrics and logs.
pub const CONTROLLER: &str = "mcpserver";
/// How often a running discovery is looked at.
const DISCOVERY_POLL: Duration = Duration::from_secs(2);
/// Most log bytes read from a discovery (a long tool list with schemas fits easily).
const MAX_DISCOVERY_LOG_BYTES: i64 = 4 * 1024 * 1024;
/// Longest condition message.
const MAX_MESSAGE_CHARS: usize = 1024;

/// Reconciles one server.
#[instrument(skip(guard, ctx), fields(name = %guard.name_any(), namespace = guard.namespace()))]
pub async fn reconcile(
    guard: Arc<DeserializeGuard<McpServer>>,
    ctx: Arc<Context>,
) -> Result<Action> {
    reconcile_guarded(&guard, &ctx, CONTROLLER, |server| {
        reconcile_server(server, &ctx)
    })
    .await
}

/// Where discovery stands.
pub(super) enum Found {
    /// Still running.
    Running,
    /// The server's tools.
    Tools(Discovery),
    /// Discovery failed: why.
    Failed(String),
}

async fn reconcile_server(server: &McpServer, ctx: &Context) -> Result<Action> {
    let namespace = server.namespace().ok_or(Error::MissingField {
        kind: "McpServer",
        field: "metadata.namespace",
    })?;
    let name = server.name_any();
    let generation = server.metadata.generation;
    let Some(bridge_image) = ctx.config.bridge_image.clone() else {
        let message =
            "The operator has no bridge image (MCP_OPERATOR_BRIDGE_IMAGE): MCP servers cannot run"
                .to_owned();
        return not_ready(server, ctx, "BridgeNotConfigured", message).await;
    };
    let tools_api: Api<McpTool> = Api::namespaced(ctx.client.clone(), &namespace);
    let current = server.status.as_ref();
    if current.is_some_and(|s| s.observed_generation == generation && is_ready(s)) {
        let listed = tools_api
            .list(&ListParams::default().labels(&format!("{SERVER_LABEL}={name}")))
            .await
            .map_err(|e| Error::kube(KubeOp::List, "McpTool", &name, e))?;
        let all_there = current.is_some_and(|s| {
            s.tools
                .iter()
                .all(|t| listed.items.iter().any(|m| m.name_any() == t.mcp_tool))
        });
        if all_there {
            return Ok(Action::await_change());
        }
    }
    let template = match bridged(server, &bridge_image, Mode::Discover) {
        Ok(template) => template,
        Err(e) => return not_ready(server, ctx, "InvalidTemplate", e.to_string()).await,
    };
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let job_name = discovery_job_name(&name, generation.unwrap_or(0));
    let job = jobs
        .get_opt(&job_name)
        .await
        .map_err(|e| Error::kube(KubeOp::Get, "Job", &job_name, e))?;
    let Some(job) = job else {
        let job = discovery_job(server, &job_name, template);
        if let Err(violation) = check_job(&job, &ctx.config.tool_policy) {
            return not_ready(server, ctx, "TemplateNotAllowed", violation.to_string()).await;
        }
        jobs.create(&PostParams::default(), &job)
            .await
            .map_err(|e| Error::kube(KubeOp::Apply, "Job", &job_name, e))?;
        ctx.publish(
            server,
            "Discovering",
            format!("Running the server in Job {job_name} to list its tools"),
            false,
        );
        write_status(
            server,
            ctx,
            McpServerStatus {
                conditions: vec![ready(
                    server,
                    "False",
                    "Discovering",
                    format!("Listing the server's tools in Job {job_name}"),
                )],
                observed_generation: generation,
                ..current.cloned().unwrap_or_default()
            },
        )
        .await?;
        return Ok(Action::requeue(DISCOVERY_POLL));
    };
    match discovery_result(ctx, &namespace, &job).await? {
        Found::Running => Ok(Action::requeue(DISCOVERY_POLL)),
        Found::Failed(why) => {
            let already =
                current.is_some_and(|s| s.conditions.iter().any(|c| c.reason == "DiscoveryFailed"));
            if !already {
                ctx.publish(server, "DiscoveryFailed", why.clone(), true);
            }
            not_ready(server, ctx, "DiscoveryFailed", why).await
        }
        Found::Tools(discovery) => {
            let offer = match offer(server, &discovery, &bridge_image) {
                Ok(offer) => offer,
                Err(e) => return not_ready(server, ctx, "InvalidTemplate", e.to_string()).await,
            };
            for tool in &offer.tools {
                let tool_name = tool.name_any();
                tools_api
                    .patch(
                        &tool_name,
                        &PatchParams::apply(FIELD_MANAGER).force(),
                        &Patch::Apply(tool),
                    )
                    .await
                    .map_err(|e| Error::kube(KubeOp::Apply, "McpTool", &tool_name, e))?;
            }
            remove_unoffered(&tools_api, &name, &offer.offered).await?;
            let server_version = discovery
                .server_info
                .get("name")
                .and_then(Value::as_str)
                .map(
                    |n| match discovery.server_info.get("version").and_then(Value::as_str) {
                        Some(v) => format!("{n} {v}"),
                        None => n.to_owned(),
                    },
                );
            let message = format!(
                "{} tools offered, {} left out",
                offer.offered.len(),
                offer.skipped.len()
            );
            ctx.publish(server, "Discovered", message.clone(), false);
            write_status(
                server,
                ctx,
                McpServerStatus {
                    conditions: vec![ready(server, "True", "Discovered", message)],
                    observed_generation: generation,
                    discovered_at: Some(Time(Timestamp::now())),
                    server_version,
                    protocol_version: discovery.protocol_version.clone(),
                    tool_count: Some(offer.offered.len() as i64),
                    tools: offer.offered,
                    skipped: offer.skipped,
                },
            )
            .await?;
            let background = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..DeleteParams::default()
            };
            match jobs.delete(&job.name_any(), &background).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(e) => return Err(Error::kube(KubeOp::Delete, "Job", job.name_any(), e)),
            }
            Ok(Action::await_change())
        }
    }
}

/// The discovery Job's outcome, from its pod's tool container and log.
async fn discovery_result(ctx: &Context, namespace: &str, job: &Job) -> Result<Found> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = format!(
        "{}={}",
        mcp_task_operator_crds::JOB_NAME_LABEL,
        job.name_any()
    );
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| Error::kube(KubeOp::List, "Pod", job.name_any(), e))?;
    let job_uid = job.uid().unwrap_or_default();
    let pod = listed.items.into_iter().find(|p| {
        p.owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == job_uid)
    });
    let terminated = pod.as_ref().and_then(|p| {
        p.status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .iter()
            .find(|c| c.name == "tool")?
            .state
            .as_ref()?
            .terminated
            .clone()
    });
    if terminated.is_none() {
        let failed = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.type_ == "Failed" && c.status == "True")
                    .map(|c| c.message.clone().unwrap_or_default())
            });
        return Ok(match failed {
            Some(message) => Found::Failed(cut(&format!("The discovery Job failed: {message}"))),
            None => Found::Running,
        });
    }
    let Some(pod) = pod else {
        return Ok(Found::Running);
    };
    let params = LogParams {
        container: Some("tool".into()),
        limit_bytes: Some(MAX_DISCOVERY_LOG_BYTES),
        ..LogParams::default()
    };
    let log = pods
        .logs(&pod.name_any(), &params)
        .await
        .map_err(|e| Error::kube(KubeOp::ReadLogs, "Pod", pod.name_any(), e))?;
    Ok(parse_discovery(&log))
}

/// The last contract message of a discovery log: the tool list, or the bridge's error.
pub(super) fn parse_discovery(log: &str) -> Found {
    let last = log
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|m| m.get("mcp").is_some());
    match last {
        Some(m) if m["mcp"] == "result" => {
            match serde_json::from_value::<Discovery>(m["result"]["structuredContent"].clone()) {
                Ok(discovery) => Found::Tools(discovery),
                Err(e) => Found::Failed(cut(&format!(
                    "The bridge printed a tool list the operator cannot read: {e}"
                ))),
            }
        }
        Some(m) if m["mcp"] == "error" => Found::Failed(cut(m["error"]["message"]
            .as_str()
            .unwrap_or("The bridge reported an error"))),
        _ => {
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            Found::Failed(cut(&format!(
                "The discovery printed no tool list; its last lines: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )))
        }
    }
}

/// Deletes the server's McpTools that are not in `offered`.
async fn remove_unoffered(
    api: &Api<McpTool>,
    server: &str,
    offered: &[mcp_task_operator_crds::mcp_server::OfferedTool],
) -> Result<()> {
    let listed = api
        .list(&ListParams::default().labels(&format!("{SERVER_LABEL}={server}")))
        .await
        .map_err(|e| Error::kube(KubeOp::List, "McpTool", server, e))?;
    for tool in listed.items {
        let name = tool.name_any();
        if !offered.iter().any(|o| o.mcp_tool == name) {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(e) => return Err(Error::kube(KubeOp::Delete, "McpTool", name, e)),
            }
        }
    }
    Ok(())
}

/// The Job that runs the server once with `--list`, owned by the server.
fn discovery_job(
    server: &McpServer,
    name: &str,
    mut template: k8s_openapi::api::core::v1::PodTemplateSpec,
) -> Job {
    if let Some(pod) = template.spec.as_mut() {
        pod.restart_policy = Some("Never".into());
        if pod.automount_service_account_token.is_none() {
            pod.automount_service_account_token = Some(false);
        }
    }
    let mut job = Job {
        spec: Some(JobSpec {
            template,
            backoff_limit: Some(0),
            active_deadline_seconds: Some(server.spec.discovery_timeout_seconds),
            ttl_seconds_after_finished: Some(3600),
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    job.metadata.name = Some(name.to_owned());
    job.metadata.namespace = server.namespace();
    job.metadata.labels = Some([(SERVER_LABEL.to_owned(), server.name_any())].into());
    job.metadata.owner_references = Some(vec![owner(server)]);
    job
}

/// `<server>-discover-<generation>`, at most 63 characters (a Job's pods get a label with its
/// name). A successful discovery deletes its Job, so a rerun (an offered McpTool went missing)
/// reuses the name.
fn discovery_job_name(server: &str, generation: i64) -> String {
    let suffix = format!("-discover-{generation}");
    let keep = 63 - suffix.len();
    let mut base: String = server.chars().take(keep).collect();
    while base.ends_with('-') {
        base.pop();
    }
    format!("{base}{suffix}")
}

fn is_ready(status: &McpServerStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == READY_CONDITION && c.status == "True")
}

fn ready(server: &McpServer, status: &str, reason: &str, message: String) -> Condition {
    let previous = server
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == READY_CONDITION));
    let last_transition_time = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    Condition {
        type_: READY_CONDITION.into(),
        status: status.into(),
        reason: reason.into(),
        message: cut(&message),
        last_transition_time,
        observed_generation: server.metadata.generation,
    }
}

async fn not_ready(
    server: &McpServer,
    ctx: &Context,
    reason: &str,
    message: String,
) -> Result<Action> {
    let status = McpServerStatus {
        conditions: vec![ready(server, "False", reason, message)],
        observed_generation: server.metadata.generation,
        ..server.status.clone().unwrap_or_default()
    };
    write_status(server, ctx, status).await?;
    Ok(Action::await_change())
}

async fn write_status(server: &McpServer, ctx: &Context, status: McpServerStatus) -> Result<()> {
    if server.status.as_ref() == Some(&status) {
        return Ok(());
    }
    crate::controller::apply_status(&ctx.client, server, &status, "McpServer status").await?;
    Ok(())
}

fn cut(text: &str) -> String {
    text.chars().take(MAX_MESSAGE_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_message_of_the_log_decides() {
        let log = "mcp-bridge: server x speaks MCP 2025-11-25\n\
                   {\"mcp\":\"result\",\"result\":{\"content\":[],\"structuredContent\":{\"protocolVersion\":\"2025-11-25\",\"serverInfo\":{\"name\":\"x\"},\"tools\":[{\"name\":\"t\"}]}}}\n";
        match parse_discovery(log) {
            Found::Tools(d) => assert_eq!(d.tools[0]["name"], "t"),
            _ => panic!("tools"),
        }
        let failed = "{\"mcp\":\"error\",\"error\":{\"code\":-32603,\"message\":\"The MCP server exited (exit status: 1) before answering initialize\"}}";
        match parse_discovery(failed) {
            Found::Failed(why) => assert!(why.contains("before answering initialize")),
            _ => panic!("failed"),
        }
        match parse_discovery("boom\nno such file\n") {
            Found::Failed(why) => assert!(why.ends_with("boom | no such file"), "{why}"),
            _ => panic!("failed"),
        }
    }

    #[test]
    fn job_names_fit_a_label_value() {
        assert_eq!(discovery_job_name("time", 3), "time-discover-3");
        let long = discovery_job_name(&"s".repeat(80), 12);
        assert_eq!(long.len(), 63);
        assert!(long.ends_with("-discover-12"));
    }
}
