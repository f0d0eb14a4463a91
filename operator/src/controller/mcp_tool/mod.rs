//! The `McpTool` controller: validate each tool and report a `Ready` condition.

pub mod reconcile;
pub mod validate;

use std::sync::Arc;

use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use mcp_task_operator_crds::McpTool;

use super::{drain, error_policy, watched};
use crate::context::Context;

/// Runs the McpTool controller until `shutdown` resolves.
pub async fn run(ctx: Arc<Context>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let tools = watched::<DeserializeGuard<McpTool>>(&ctx);
    let controller = Controller::new(tools.clone(), watcher::Config::default().any_semantic());
    let store = controller.store();
    // The McpTask controller looks tools up here instead of listing them on every reconcile.
    let _ = ctx.tools.set(store.clone());
    let on_error = error_policy(reconcile::CONTROLLER);
    let results = controller
        // Whether a tool keeps its MCP name depends on the other tools using it: when one
        // appears, changes or goes, look again at those.
        .watches(
            tools,
            watcher::Config::default().any_semantic(),
            move |changed: DeserializeGuard<McpTool>| same_name_siblings(&store.state(), &changed),
        )
        .graceful_shutdown_on(shutdown)
        .run(reconcile::reconcile, on_error, ctx);
    drain(results, "McpTool").await;
}

/// The other tools of `changed`'s namespace with its MCP name, which a change of `changed` can
/// make win or lose that name.
///
/// Found end to end: without this, a tool that was Ready kept its `Ready=True` when a tool that
/// wins the name (older, or as old and first by name) appeared, until the next resync.
pub fn same_name_siblings(
    tools: &[Arc<DeserializeGuard<McpTool>>],
    changed: &DeserializeGuard<McpTool>,
) -> Vec<ObjectRef<DeserializeGuard<McpTool>>> {
    let Ok(changed) = &changed.0 else {
        return Vec::new();
    };
    let name = changed.mcp_name();
    tools
        .iter()
        .filter_map(|t| t.0.as_ref().ok())
        .filter(|t| {
            t.namespace() == changed.namespace()
                && t.name_any() != changed.name_any()
                && t.mcp_name() == name
        })
        .map(|t| ObjectRef::new(&t.name_any()).within(&t.namespace().unwrap_or_default()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tool;

    fn named(name: &str, mcp_name: &str, namespace: &str) -> McpTool {
        let mut t = tool();
        t.metadata.name = Some(name.to_owned());
        t.metadata.namespace = Some(namespace.to_owned());
        t.spec.name = Some(mcp_name.to_owned());
        t
    }

    #[test]
    fn a_change_touches_the_other_tools_with_its_mcp_name_in_its_namespace() {
        let all: Vec<_> = [
            named("a", "shared", "tools"),
            named("b", "shared", "tools"),
            named("c", "other", "tools"),
            named("d", "shared", "elsewhere"),
        ]
        .into_iter()
        .map(|t| Arc::new(DeserializeGuard(Ok(t))))
        .collect();
        let changed = DeserializeGuard(Ok(named("a", "shared", "tools")));
        let touched = same_name_siblings(&all, &changed);
        assert_eq!(touched, vec![ObjectRef::new("b").within("tools")]);
    }
}
