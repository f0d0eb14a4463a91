//! The controllers: `McpTask` (task -> Job -> status) and `McpTool` validation, and what both
//! drivers share: the unparseable-object path and the error policy.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::ResourceExt;
use kube::core::DeserializeGuard;
use kube::core::Resource;
use kube::runtime::controller::Action;
use rand::Rng;
use serde_json::json;

use crate::context::Context;
use crate::error::{Error, Result};

pub mod mcp_server;
pub mod mcp_task;
pub mod mcp_tool;
pub mod warm_pool;

/// The API of the `K`s the operator watches: those of its namespace (`MCP_OPERATOR_NAMESPACE`),
/// or of all namespaces.
pub fn watched<K>(ctx: &Context) -> kube::Api<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
{
    match &ctx.config.namespace {
        Some(ns) => kube::Api::namespaced(ctx.client.clone(), ns),
        None => kube::Api::all(ctx.client.clone()),
    }
}

/// Runs a controller's stream of reconcile `results` to its end. A failed one is logged at
/// debug level only: the error policy logged it already.
pub async fn drain<T, E: std::fmt::Display>(
    results: impl futures::Stream<Item = Result<T, E>>,
    kind: &'static str,
) {
    results
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "{kind} controller event");
            }
        })
        .await;
}

/// Writes `status` as the status of `object` by server-side apply (fields left out are
/// released); the body's apiVersion and kind come from the type, never written out by hand.
/// `what` names the write in an error ("McpTool status"). Returns the object's
/// `resourceVersion` after the write.
pub async fn apply_status<K>(
    client: &kube::Client,
    object: &K,
    status: &impl serde::Serialize,
    what: &'static str,
) -> Result<Option<String>>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let name = object.name_any();
    let api: kube::Api<K> =
        kube::Api::namespaced(client.clone(), &object.namespace().unwrap_or_default());
    let patch = json!({"apiVersion": K::api_version(&()), "kind": K::kind(&()), "status": status});
    let params = kube::api::PatchParams::apply(crate::FIELD_MANAGER).force();
    let written = api
        .patch_status(&name, &params, &kube::api::Patch::Apply(&patch))
        .await
        .map_err(|e| Error::kube(crate::error::KubeOp::Patch, what, name, e))?;
    Ok(written.resource_version())
}

/// Runs `reconcile` on a parsed object and times the run in the metrics of `controller`. An
/// object the operator cannot even parse gets a Warning Event and waits for a change. The run
/// counts as in flight for the liveness probe until it ends.
pub async fn reconcile_guarded<'a, K, F, Fut>(
    guard: &'a DeserializeGuard<K>,
    ctx: &Context,
    controller: &'static str,
    reconcile: F,
) -> Result<Action>
where
    K: kube::Resource<DynamicType = ()>,
    DeserializeGuard<K>: kube::Resource<DynamicType = ()>,
    F: FnOnce(&'a K) -> Fut,
    Fut: Future<Output = Result<Action>>,
{
    let started = std::time::Instant::now();
    let _running = ctx.liveness.reconcile_started(controller);
    let result = match &guard.0 {
        Ok(obj) => reconcile(obj).await,
        Err(invalid) => {
            let kind = K::kind(&());
            tracing::warn!(error = %invalid.error, %kind, "cannot parse object");
            ctx.metrics.failed(controller, "invalid_object");
            let note = format!("The operator cannot read this {kind}: {}", invalid.error);
            ctx.publish(guard, "InvalidObject", note, true);
            Ok(Action::await_change())
        }
    };
    ctx.metrics.reconciled(controller, started.elapsed());
    result
}

/// The safety-net resync delay of `config`, plus up to a tenth more at random, so that objects
/// reconciled together do not come due together again.
pub fn jittered_resync(config: &crate::config::Config) -> Duration {
    let resync = config.resync.as_millis() as u64;
    Duration::from_millis(rand::rng().random_range(resync..=resync + resync / 10))
}

/// The error policy of the controller named `controller`: logs the error, counts it by
/// category and retries after a jittered 2–8 s backoff.
pub fn error_policy<K: Resource>(
    controller: &'static str,
) -> impl Fn(Arc<DeserializeGuard<K>>, &Error, Arc<Context>) -> Action {
    move |obj, err, ctx| {
        tracing::warn!(name = %obj.name_any(), error = %err, category = err.category(), "reconcile failed");
        ctx.metrics.failed(controller, err.category());
        Action::requeue(Duration::from_millis(
            rand::rng().random_range(2_000..8_000),
        ))
    }
}
