//! The McpServer reconciler: run the server once in a discovery Job (`discovery.rs`), turn its
//! tool list into McpTools within the operator's bounds (`offer.rs`, `limits.rs`), apply them
//! (`apply.rs`), and report it all in status with a `Ready` condition.
//!
//! Discovery runs once per generation; it runs again when an offered McpTool is missing. A
//! discovery refused for its size (`TooManyTools`, `ToolsTooLarge`) runs again only for a new
//! generation. The controller reads, deletes and overwrites only the objects it controls.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions, PropagationPolicy};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::mcp_server::{Discovery, McpServerStatus};
use mcp_task_operator_crds::mcp_tool::READY_CONDITION;
use mcp_task_operator_crds::{McpServer, McpTool};
use serde_json::Value;
use tracing::instrument;

use super::apply::{apply_tools, blocked_names, controlled_by, not_owned, taken_by_others};
use super::bridged::{Mode, bridged};
use super::discovery::{Found, discovery_job, discovery_job_name, discovery_result};
use super::limits::{INVALID_TEMPLATE, is_settled_refusal, server_text, summarize};
use super::offer::{SERVER_LABEL, offer};
use crate::context::Context;
use crate::controller::reconcile_guarded;
use crate::error::{Error, KubeOp, Result};
use crate::policy::check_job;

/// Name of this controller in metrics and logs.
pub const CONTROLLER: &str = "mcpserver";
/// How often a running discovery is looked at.
const DISCOVERY_POLL: Duration = Duration::from_secs(2);
/// How often a server whose discovery Job name, or an McpTool name, is taken looks again: the
/// controller watches only the objects servers own, so that object's deletion reaches it by
/// this poll.
const FOREIGN_POLL: Duration = Duration::from_secs(20);
/// `Ready` reason while the discovery Job's name is taken by a Job the server does not own.
const JOB_NOT_OWNED: &str = "DiscoveryJobNotOwned";
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

async fn reconcile_server(server: &McpServer, ctx: &Context) -> Result<Action> {
    let missing = |field| Error::MissingField {
        kind: "McpServer",
        field,
    };
    let namespace = server.namespace().ok_or(missing("metadata.namespace"))?;
    let uid = server.uid().ok_or(missing("metadata.uid"))?;
    let name = server.name_any();
    let generation = server.metadata.generation;
    let Some(bridge_image) = ctx.config.bridge_image.clone() else {
        let message =
            "The operator has no bridge image (MCP_OPERATOR_BRIDGE_IMAGE): MCP servers cannot run"
                .to_owned();
        return not_ready(server, ctx, "BridgeNotConfigured", message).await;
    };
    let tools_api: Api<McpTool> = Api::namespaced(ctx.client.clone(), &namespace);
    let current = server
        .status
        .as_ref()
        .filter(|s| s.observed_generation == generation);
    if current.is_some_and(|s| ready_reason(s).is_some_and(is_settled_refusal)) {
        return Ok(Action::await_change());
    }
    if let Some(status) = current.filter(|s| ready_reason(s) == Some(DISCOVERED)) {
        let listed = tools_api
            .list_metadata(&ListParams::default().labels(&format!("{SERVER_LABEL}={name}")))
            .await
            .map_err(|e| Error::kube(KubeOp::List, "McpTool", &name, e))?;
        let ours: BTreeSet<String> = listed
            .items
            .iter()
            .filter(|m| controlled_by(m.owner_references(), &uid))
            .map(ResourceExt::name_any)
            .collect();
        if status.tools.iter().all(|t| ours.contains(&t.mcp_tool)) {
            // A tool left out because another McpTool has its name is offered once that
            // McpTool is gone: the discovery runs again then.
            let blocked = blocked_names(&name, status);
            if blocked.is_empty() {
                return Ok(Action::await_change());
            }
            let taken = taken_by_others(&tools_api, &name, &uid).await?;
            if blocked.is_subset(&taken) {
                return Ok(Action::requeue(FOREIGN_POLL));
            }
        }
    }
    let template = match bridged(server, &bridge_image, Mode::Discover) {
        Ok(template) => template,
        Err(e) => return not_ready(server, ctx, INVALID_TEMPLATE, e.to_string()).await,
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
        let message = format!("Listing the server's tools in Job {job_name}");
        write_status(
            server,
            ctx,
            not_ready_status(server, "Discovering", message),
        )
        .await?;
        return Ok(Action::requeue(DISCOVERY_POLL));
    };
    // A Job of the name that the server does not control is someone else's: its log could
    // forge the tool list, so it is neither read nor deleted.
    if !controlled_by(job.owner_references(), &uid) {
        let message = format!(
            "{}: delete it (the server looks again every {} s)",
            not_owned("Job", &job_name),
            FOREIGN_POLL.as_secs()
        );
        refuse(server, ctx, JOB_NOT_OWNED, message).await?;
        return Ok(Action::requeue(FOREIGN_POLL));
    }
    match discovery_result(ctx, &namespace, &job).await? {
        Found::Running => Ok(Action::requeue(DISCOVERY_POLL)),
        Found::Failed(why) => {
            refuse(server, ctx, "DiscoveryFailed", why).await?;
            Ok(Action::await_change())
        }
        Found::Tools(discovery) => {
            offer_tools(server, ctx, &tools_api, &discovery, &bridge_image, &uid).await?;
            // Read: the Job is done with, whether its tools were offered or refused.
            delete_job(&jobs, &job).await?;
            Ok(Action::await_change())
        }
    }
}

/// `Ready` reason once the tools are offered.
const DISCOVERED: &str = "Discovered";

/// Applies the McpTools of `discovery`, or refuses them all (once for the generation: the
/// same image would list the same tools), and says so in status.
async fn offer_tools(
    server: &McpServer,
    ctx: &Context,
    tools_api: &Api<McpTool>,
    discovery: &Discovery,
    bridge_image: &str,
    uid: &str,
) -> Result<()> {
    let mut offer = match offer(server, discovery, bridge_image, &ctx.config.mcp_server) {
        Ok(offer) => offer,
        Err(refused) => return refuse(server, ctx, refused.reason(), refused.to_string()).await,
    };
    apply_tools(tools_api, &server.name_any(), uid, &mut offer).await?;
    let info = |key| discovery.server_info.get(key).and_then(Value::as_str);
    let server_version = info("name").map(|n| match info("version") {
        Some(v) => server_text(&format!("{n} {v}")),
        None => server_text(n),
    });
    let offered = offer.offered.len();
    let (skipped, message) = summarize(offered, offer.skipped);
    ctx.publish(server, DISCOVERED, message.clone(), false);
    let status = McpServerStatus {
        conditions: vec![ready(server, "True", DISCOVERED, message)],
        observed_generation: server.metadata.generation,
        discovered_at: Some(Time(Timestamp::now())),
        server_version,
        protocol_version: discovery.protocol_version.as_deref().map(server_text),
        tool_count: Some(offered as i64),
        tools: offer.offered,
        skipped,
    };
    write_status(server, ctx, status).await
}

/// `Ready=False` for `reason`, with a Warning Event the first time.
async fn refuse(server: &McpServer, ctx: &Context, reason: &str, message: String) -> Result<()> {
    let already = server
        .status
        .as_ref()
        .is_some_and(|s| ready_reason(s) == Some(reason));
    if !already {
        ctx.publish(server, reason, message.clone(), true);
    }
    write_status(server, ctx, not_ready_status(server, reason, message)).await
}

/// Deletes the server's own discovery Job (its UID is the precondition).
async fn delete_job(jobs: &Api<Job>, job: &Job) -> Result<()> {
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: Some(Preconditions {
            uid: job.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match jobs.delete(&job.name_any(), &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(Error::kube(KubeOp::Delete, "Job", job.name_any(), e)),
    }
}

fn ready_reason(status: &McpServerStatus) -> Option<&str> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == READY_CONDITION)
        .map(|c| c.reason.as_str())
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

/// The server's status with `Ready=False` for `reason`, the rest kept.
fn not_ready_status(server: &McpServer, reason: &str, message: String) -> McpServerStatus {
    McpServerStatus {
        conditions: vec![ready(server, "False", reason, message)],
        observed_generation: server.metadata.generation,
        ..server.status.clone().unwrap_or_default()
    }
}

async fn not_ready(
    server: &McpServer,
    ctx: &Context,
    reason: &str,
    message: String,
) -> Result<Action> {
    write_status(server, ctx, not_ready_status(server, reason, message)).await?;
    Ok(Action::await_change())
}

async fn write_status(server: &McpServer, ctx: &Context, status: McpServerStatus) -> Result<()> {
    if server.status.as_ref() == Some(&status) {
        return Ok(());
    }
    crate::controller::apply_status(&ctx.client, server, &status, "McpServer status").await?;
    Ok(())
}

/// `text` cut to the longest condition message.
pub(super) fn cut(text: &str) -> String {
    text.chars().take(MAX_MESSAGE_CHARS).collect()
}
