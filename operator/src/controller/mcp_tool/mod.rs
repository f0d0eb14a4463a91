//! The `McpTool` controller: validate each tool and report a `Ready` condition.

pub mod reconcile;
pub mod validate;

use std::sync::Arc;

use futures::StreamExt;
use kube::Api;
use kube::core::DeserializeGuard;
use kube::runtime::{Controller, watcher};
use mcp_task_operator_crds::McpTool;

use crate::context::Context;

/// Runs the McpTool controller until `shutdown` resolves.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let tools: Api<DeserializeGuard<McpTool>> = match &ctx.config.namespace {
        Some(ns) => Api::namespaced(ctx.client.clone(), ns),
        None => Api::all(ctx.client.clone()),
    };
    let controller = Controller::new(tools, watcher::Config::default().any_semantic());
    // The McpTask controller looks tools up here instead of listing them on every reconcile.
    let _ = ctx.tools.set(controller.store());
    controller
        .graceful_shutdown_on(shutdown)
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "McpTool controller event");
            }
        })
        .await;
}
