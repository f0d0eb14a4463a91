//! Entry point: load the configuration, start tracing and the probe server, then run the
//! controllers for as long as this replica holds the leader Lease.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use mcp_task_operator::config::Config;
use mcp_task_operator::context::Context;
use mcp_task_operator::controller::{mcp_server, mcp_task, mcp_tool};
use mcp_task_operator::state::State;
use mcp_task_operator::{http, leader, telemetry};
use mcp_task_operator_crds::{McpTask, McpTool};
use tokio::sync::watch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    telemetry::init();
    let config = Arc::new(Config::from_env()?);
    let state = State::default();
    let shutdown = shutdown_signal()?;

    let listener = tokio::net::TcpListener::bind(config.http_addr).await?;
    let server = axum::serve(listener, http::app(state.clone()))
        .with_graceful_shutdown(wait(shutdown.clone()));
    tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "probe server failed");
        }
    });

    let client = kube::Client::try_default().await?;
    // An answer that the CRDs are missing or unreadable is a set-up error: say so and stop. An
    // API server that does not answer (restarting, unreachable) is waited for, not-ready.
    loop {
        match check_crds(&client, config.namespace.as_deref()).await {
            Ok(()) => break,
            Err(kube::Error::Api(status)) if status.code < 500 => {
                tracing::error!(
                    error = %status,
                    "the McpTool and McpTask CRDs are not installed or not readable; install \
                     them with the Helm chart or `kubectl apply --server-side -f crds/yaml/`"
                );
                std::process::exit(1);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot check the CRDs yet; retrying in 2 s");
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
                    () = wait(shutdown.clone()) => return Ok(()),
                }
            }
        }
    }
    state.set_ready(true);

    let leases: Api<Lease> = Api::namespaced(client.clone(), &config.lease_namespace);
    let (lease, me, duration) = (&config.lease_name, &config.identity, config.lease_duration);
    tokio::select! {
        () = leader::acquire(&leases, lease, me, duration) => {}
        () = wait(shutdown.clone()) => return Ok(()),
    }
    state.metrics().set_leader(true);
    tracing::info!(identity = %me, "became leader; starting controllers");

    let (trigger, triggers) = futures::channel::mpsc::unbounded();
    let ctx = Arc::new(Context::new(
        client.clone(),
        state.metrics(),
        config.clone(),
        trigger,
    ));
    let controllers = futures::future::join3(
        mcp_task::run(Arc::clone(&ctx), triggers, wait(shutdown.clone())),
        mcp_tool::run(Arc::clone(&ctx), wait(shutdown.clone())),
        mcp_server::run(ctx, wait(shutdown.clone())),
    );
    let lost = tokio::select! {
        _ = controllers => false,
        () = leader::keep(&leases, lease, me, duration) => true,
    };
    state.metrics().set_leader(false);
    if lost {
        tracing::error!("lost the leader Lease; exiting so that a standby takes over");
        std::process::exit(1);
    }
    leader::release(&leases, lease, me).await;
    Ok(())
}

/// Checks that both CRDs are served and readable with our RBAC.
/// NB: lists in the watched namespace only, so a namespace-scoped install (a Role, no
/// ClusterRole) passes the check.
async fn check_crds(client: &kube::Client, namespace: Option<&str>) -> Result<(), kube::Error> {
    let probe = ListParams::default().limit(1);
    match namespace {
        Some(ns) => {
            Api::<McpTask>::namespaced(client.clone(), ns)
                .list(&probe)
                .await?;
            Api::<McpTool>::namespaced(client.clone(), ns)
                .list(&probe)
                .await?;
        }
        None => {
            Api::<McpTask>::all(client.clone()).list(&probe).await?;
            Api::<McpTool>::all(client.clone()).list(&probe).await?;
        }
    }
    Ok(())
}

/// A channel that turns true on SIGTERM or Ctrl-C.
fn shutdown_signal() -> Result<watch::Receiver<bool>, BoxError> {
    let (tx, rx) = watch::channel(false);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down");
        let _ = tx.send(true);
    });
    Ok(rx)
}

/// Resolves once `rx` turns true (or its sender is gone).
async fn wait(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}
