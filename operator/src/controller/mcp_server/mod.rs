//! The `McpServer` controller: discover an MCP server image's tools and offer each as an
//! `McpTool` that runs the server through the bridge.

pub mod apply;
pub mod bridged;
pub mod discovery;
pub mod limits;
pub mod offer;
pub mod reconcile;

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use kube::core::DeserializeGuard;
use kube::runtime::{Controller, watcher};
use mcp_task_operator_crds::{McpServer, McpTool};

use super::{drain, error_policy, watched};
use crate::context::Context;

/// Runs the McpServer controller until `shutdown` resolves.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let servers = watched::<DeserializeGuard<McpServer>>(&ctx);
    let (jobs, tools) = (watched::<Job>(&ctx), watched::<McpTool>(&ctx));
    // Only the objects a server owns: its discovery Jobs and its McpTools.
    let owned = || {
        watcher::Config::default()
            .labels(offer::SERVER_LABEL)
            .any_semantic()
    };
    let on_error = error_policy(reconcile::CONTROLLER);
    let results = Controller::new(servers, watcher::Config::default().any_semantic())
        .owns(jobs, owned())
        .owns(tools, owned())
        .graceful_shutdown_on(shutdown)
        .run(reconcile::reconcile, on_error, ctx);
    drain(results, "McpServer").await;
}
