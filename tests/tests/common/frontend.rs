//! Front end processes of the tests that run the front end binary without an operator.

use kube::Client;
use mcp_task_operator_harness::ensure_crds;
use mcp_task_operator_harness::fixture_tools::{
    FIXTURE_MANIFEST, FIXTURE_TOOLS, apply_tools, mark_tools_ready,
};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;

/// The fixture tools, Ready, in `ns`, and a front end for it with `env` (plus no auth), once it
/// offers `slow_compute`.
pub async fn unauthenticated_frontend(
    client: &Client,
    ns: &str,
    env: &[(&str, &str)],
) -> (Frontend, Mcp) {
    ensure_crds(client).await;
    apply_tools(client, ns, FIXTURE_MANIFEST).await;
    mark_tools_ready(client, ns).await;
    let mut all = vec![("AUTH_MODE", "none"), ("ALLOW_UNAUTHENTICATED", "true")];
    all.extend_from_slice(env);
    let frontend = Frontend::start(ns, &all).await;
    let mcp = Mcp::new(&frontend.url);
    mcp.wait_for_tools(&["slow_compute"]).await;
    (frontend, mcp)
}

/// Two front end replicas for `ns`, each with its client, once both offer the fixture tools.
pub async fn two_replicas(ns: &str) -> ((Frontend, Mcp), (Frontend, Mcp)) {
    let (one, other) = (
        Frontend::start(ns, &[]).await,
        Frontend::start(ns, &[]).await,
    );
    let (a, b) = (Mcp::new(&one.url), Mcp::new(&other.url));
    a.wait_for_tools(&FIXTURE_TOOLS).await;
    b.wait_for_tools(&FIXTURE_TOOLS).await;
    ((one, a), (other, b))
}

/// `mcp_frontend_task_lookups_total{source}` (0 before the first such lookup).
pub async fn lookups(frontend: &Frontend, source: &str) -> u64 {
    let series = format!("mcp_frontend_task_lookups_total{{source=\"{source}\"}}");
    frontend.counter(&series).await
}
