//! The McpTool reconciler: validate the tool against its namespace and report `Ready`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use mcp_task_operator_crds::mcp_tool::READY_CONDITION;
use mcp_task_operator_crds::{McpTool, McpToolStatus};
use tracing::instrument;

use super::validate::{ToolInvalid, ready_condition, validate_tool};
use crate::context::Context;
use crate::controller::reconcile_guarded;
use crate::error::{Error, KubeOp, Result};

/// Name of this controller in metrics and logs.
pub const CONTROLLER: &str = "mcptool";
/// How soon a tool that lost a duplicate-name contest looks again (the winner may go away).
const DUPLICATE_RECHECK: Duration = Duration::from_secs(30);

/// Reconciles one tool; a tool the operator cannot even parse gets a Warning Event and waits
/// for a change.
#[instrument(skip(guard, ctx), fields(name = %guard.name_any(), namespace = guard.namespace()))]
pub async fn reconcile(guard: Arc<DeserializeGuard<McpTool>>, ctx: Arc<Context>) -> Result<Action> {
    reconcile_guarded(&guard, &ctx, CONTROLLER, |tool| reconcile_tool(tool, &ctx)).await
}

async fn reconcile_tool(tool: &McpTool, ctx: &Context) -> Result<Action> {
    let namespace = tool.namespace().ok_or(Error::MissingField {
        kind: "McpTool",
        field: "metadata.namespace",
    })?;
    let api: Api<McpTool> = Api::namespaced(ctx.client.clone(), &namespace);
    let siblings = api
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube(KubeOp::List, "McpTool", &namespace, e))?
        .items;
    let result = validate_tool(tool, &siblings, &ctx.config.tool_policy);
    let previous = tool
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == READY_CONDITION));
    let condition = ready_condition(
        &result,
        tool.metadata.generation,
        previous,
        Timestamp::now(),
    );
    let changed =
        previous.is_none_or(|p| p.status != condition.status || p.reason != condition.reason);
    let status = McpToolStatus {
        conditions: vec![condition.clone()],
        observed_generation: tool.metadata.generation,
        mcp_name: Some(tool.mcp_name()),
        image: tool.tool_container().and_then(|c| c.image.clone()),
    };
    if tool.status.as_ref() != Some(&status) {
        crate::controller::apply_status(&ctx.client, tool, &status, "McpTool status").await?;
    }
    if changed {
        let warning = result.is_err();
        ctx.publish(tool, &condition.reason, condition.message.clone(), warning);
    }
    Ok(match result {
        Err(ToolInvalid::DuplicateName { .. }) => Action::requeue(DUPLICATE_RECHECK),
        _ => Action::requeue(crate::controller::jittered_resync(&ctx.config)),
    })
}

#[cfg(test)]
mod tests;
