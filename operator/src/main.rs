//! Entry point: load the configuration, start tracing and the probe server, then run the
//! controllers for as long as this replica holds the leader Lease.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use mcp_task_operator::config::Config;
use mcp_task_operator::context::Context;
use mcp_task_operator::controller::warm_pool::key::ClaimKey;
use mcp_task_operator::controller::{mcp_server, mcp_task, mcp_tool, warm_pool};
use mcp_task_operator::fence::Fence;
use mcp_task_operator::liveness::Liveness;
use mcp_task_operator::log_clients::LogClients;
use mcp_task_operator::state::State;
use mcp_task_operator::{deadline, fence, http, leader};
use mcp_task_operator_crds::{McpTask, McpTool};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `service.name` of the exported spans unless `OTEL_SERVICE_NAME` is set.
const SERVICE_NAME: &str = mcp_task_operator::NAME;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let telemetry = mcp_task_operator_telemetry::init(SERVICE_NAME, filter, false)?;
    let result = run().await;
    // NB: the exits on a lost Lease or missing CRDs skip this: a replica that lost the Lease
    // stops at once rather than wait on a collector.
    telemetry.shutdown().await;
    result
}

/// Everything but tracing: probes, the CRD check, leader election, the controllers.
async fn run() -> Result<(), BoxError> {
    let config = Arc::new(Config::from_env()?);
    // A key file that cannot be used is a set-up error: said now, before leading.
    let claim_key = match &config.warm_key_file {
        Some(path) => ClaimKey::from_file(path)?,
        None => ClaimKey::random(),
    };
    let timing = leader::Timing::from_config(&config);
    let state = State::new(Liveness::new(
        config.reconcile_stall,
        election_limit(&config),
    ));
    let liveness = state.liveness();
    let shutdown = shutdown_signal()?;

    let listener = tokio::net::TcpListener::bind(config.http_addr).await?;
    let server = axum::serve(listener, http::app(state.clone()))
        .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "probe server failed");
        }
    });

    let kube_config = kube::Config::infer().await?;
    let client = deadline::client(kube_config.clone(), config.api_timeout, state.metrics())?;
    // The controllers write only while the Lease is fresh (fence.rs); the Lease and the checks
    // before leading go through the unfenced client.
    let fence = Arc::new(Fence::new(timing.renew_deadline));
    let fenced = fence::client(
        kube_config.clone(),
        config.api_timeout,
        state.metrics(),
        Arc::clone(&fence),
    )?;
    let log_clients = LogClients::http2(
        kube_config,
        config.scale.log_streams_per_connection,
        config.api_timeout,
        state.metrics(),
    );
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
                liveness.election_step();
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
                    () = shutdown.clone().cancelled_owned() => return Ok(()),
                }
            }
        }
    }
    state.set_ready(true);

    let leases: Api<Lease> = Api::namespaced(client.clone(), &config.lease_namespace);
    let (lease, me) = (&config.lease_name, &config.identity);
    let acquired = tokio::select! {
        acquired = leader::acquire(&leases, lease, me, timing, &liveness, &fence) => acquired,
        () = shutdown.clone().cancelled_owned() => return Ok(()),
    };
    state.metrics().set_leader(true);
    tracing::info!(identity = %me, "became leader; starting controllers");

    let (trigger, triggers) = futures::channel::mpsc::unbounded();
    let ctx = Arc::new(
        Context::new(fenced, state.metrics(), config.clone(), trigger)
            .with_liveness(Arc::clone(&liveness))
            .with_log_clients(log_clients)
            .with_claim_key(claim_key),
    );
    let controllers = futures::future::join4(
        mcp_task::run(
            Arc::clone(&ctx),
            triggers,
            shutdown.clone().cancelled_owned(),
        ),
        mcp_tool::run(Arc::clone(&ctx), shutdown.clone().cancelled_owned()),
        mcp_server::run(Arc::clone(&ctx), shutdown.clone().cancelled_owned()),
        warm_pool::run(ctx, shutdown.clone().cancelled_owned()),
    );
    let lost = tokio::select! {
        _ = controllers => None,
        lost = leader::keep(&leases, lease, me, timing, &liveness, &fence, acquired) => Some(lost),
    };
    state.metrics().set_leader(false);
    if let Some(lost) = lost {
        // Exiting stops everything this replica does at once: the controllers, the log
        // followers and the API calls in flight. The pod restarts as a standby.
        tracing::error!(
            ?lost,
            led_for_s = acquired.elapsed().as_secs_f64(),
            "lost the leader Lease; stopped acting, exiting so that a standby takes over"
        );
        std::process::exit(1);
    }
    leader::release(&leases, lease, me, &fence).await;
    Ok(())
}

/// Longest the election loop may go without a step before `/healthz` fails: a step comes at
/// least every retry period plus an attempt (bounded by the renew deadline), or every 2 s plus
/// two API calls while the CRDs are checked; a lease duration more is slack.
fn election_limit(config: &Config) -> std::time::Duration {
    let lease = config.lease_retry_period + config.lease_renew_deadline;
    let crds = std::time::Duration::from_secs(2) + 2 * config.api_timeout;
    lease.max(crds) + config.lease_duration
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

/// A token cancelled on SIGTERM or Ctrl-C (the front end shuts down the same way).
fn shutdown_signal() -> Result<CancellationToken, BoxError> {
    let token = CancellationToken::new();
    let cancel = token.clone();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down");
        cancel.cancel();
    });
    Ok(token)
}
