//! Entry point of the MCP front end: config, tracing, the kube-backed stores, and the HTTP
//! server with graceful shutdown.

use std::sync::Arc;

use mcp_task_operator_mcp_frontend::apihealth::{self, ApiHealth};
use mcp_task_operator_mcp_frontend::auth::Auth;
use mcp_task_operator_mcp_frontend::authz::{AccessReviewer, Authz};
use mcp_task_operator_mcp_frontend::config::{AuthMode, AuthorizationMode};
use mcp_task_operator_mcp_frontend::review_cache::ReviewCache;
use mcp_task_operator_mcp_frontend::static_tokens::StaticTokens;
use mcp_task_operator_mcp_frontend::store::kube::KubeTaskStore;
use mcp_task_operator_mcp_frontend::store::kube_tools::KubeToolCatalog;
use mcp_task_operator_mcp_frontend::token_review::TokenReviewer;
use mcp_task_operator_mcp_frontend::unanswerable;
use mcp_task_operator_mcp_frontend::{AppState, Config, app};
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

/// `service.name` of the exported spans unless `OTEL_SERVICE_NAME` is set.
const SERVICE_NAME: &str = "mcp-task-frontend";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let telemetry = mcp_task_operator_telemetry::init(SERVICE_NAME, log_filter(), true)?;
    let config = Config::from_env()?;
    let client = kube::Client::try_default().await?;
    let health = Arc::new(ApiHealth::default());
    let (tasks, task_watch) = KubeTaskStore::watched(
        client.clone(),
        &config.namespace,
        health.clone(),
        config.api_timeout,
    );
    let (tools, tool_watch) = KubeToolCatalog::new(client.clone(), &config.namespace);
    tokio::spawn(task_watch);
    tokio::spawn(tool_watch);
    tokio::spawn(apihealth::probe(
        health.clone(),
        kube::Api::namespaced(client.clone(), &config.namespace),
    ));

    let bind_addr = config.bind_addr;
    let state = AppState::new(config, tasks, tools).with_api_health(health);
    tokio::spawn(unanswerable::answer_unanswerable(
        state.tasks.clone(),
        state.shutdown.clone(),
    ));
    let config = state.config.clone();
    let auth = match config.auth_mode {
        AuthMode::None => {
            tracing::warn!("authentication is off: every caller shares the anonymous identity");
            Auth::None
        }
        AuthMode::StaticTokens => {
            let path = config.static_tokens_file.clone().unwrap_or_default();
            Auth::Bearer(Arc::new(StaticTokens::load(&path)?))
        }
        AuthMode::TokenReview => Auth::Bearer(Arc::new(TokenReviewer::new(
            client.clone(),
            config.token_audiences.clone(),
            ReviewCache::default().counted("token", state.reviews.clone()),
        ))),
    };
    let authz = match config.authorization_mode {
        AuthorizationMode::None => {
            tracing::warn!("authorization is off: every caller may list and call every tool");
            Authz::None
        }
        AuthorizationMode::Rbac => Authz::Rbac(Arc::new(AccessReviewer::new(
            client.clone(),
            &config.namespace,
            ReviewCache::default().counted("access", state.reviews.clone()),
        ))),
    };
    let state = state.with_auth(auth).with_authz(authz);
    let shutdown = state.shutdown.clone();
    let listener = TcpListener::bind(bind_addr).await?;
    tracing::info!(%bind_addr, "serving MCP on /mcp");
    // Nagle's algorithm only delays small JSON-RPC answers.
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "failed to set TCP_NODELAY");
        }
    });
    // The peer address is the request's source for the per-source caps (`crate::held`).
    let app = axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<
        std::net::SocketAddr,
    >(app(state));
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            tracing::info!("shutting down");
            // Ends listen streams (with their final result) and rmcp's open responses.
            shutdown.cancel();
        })
        .await;
    // After the last request: its spans are among those sent.
    telemetry.shutdown().await;
    Ok(served?)
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// `RUST_LOG` (default `info`), with rmcp's per-request lifecycle lines ("Service initialized
/// as server", "serve finished": three per request in stateless mode) held to `warn` unless
/// `RUST_LOG` names rmcp itself. At `info` they cost about a third of a cached `tasks/get`
/// (docs/BENCHMARKS.md).
fn log_filter() -> EnvFilter {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let names_rmcp = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("rmcp"));
    match "rmcp::service=warn".parse() {
        Ok(quiet) if !names_rmcp => filter.add_directive(quiet),
        _ => filter,
    }
}
