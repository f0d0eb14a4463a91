//! Every release of the chart has its own default token audience (issue 36 item 8): two
//! releases with default settings in two namespaces, and one ServiceAccount RBAC lets call the
//! tools of both. A token minted for release A's audience is accepted by A and refused (401
//! `invalid_token`) by B, and the other way round; the audience the chart publishes on the
//! front end Service (`mcptasks.io/token-audience`, what `kubectl mcp` mints for) is the one
//! the front end checks, `mcp-task-operator.<namespace>.<fullname>`.
//!
//! On the old chart every release defaulted to the audience `mcp-task-operator`, so B accepted
//! A's token.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::{Api, Client};
use mcp_task_operator_crds::TOKEN_AUDIENCE_ANNOTATION;
use mcp_task_operator_harness::callers::{
    Who, assert_unauthorized, audience, bind_caller_role, fullname, service_account, token,
};
use mcp_task_operator_harness::mcp_client::{Mcp, Reply};
use mcp_task_operator_harness::stack::{Release, install, mcp_url};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;

/// Replicas and scope only: every auth value is the chart's default.
const DEFAULT_AUTH: &[&str] = &[
    "rbac.scope=namespace",
    "operator.replicaCount=1",
    "frontend.replicaCount=1",
];

/// The first audience the front end of `release` in `ns` checks tokens for (its
/// `MCP_FRONTEND_TOKEN_AUDIENCES`): what a caller of that release mints tokens for.
async fn served_audience(client: &Client, ns: &str, release: &str) -> String {
    let name = format!("{}-mcp-frontend", fullname(release));
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(&name)
        .await
        .unwrap_or_else(|e| panic!("read Deployment {name}: {e}"));
    let pod = deployment.spec.and_then(|s| s.template.spec);
    let env = pod
        .and_then(|p| p.containers.into_iter().next())
        .and_then(|c| c.env)
        .unwrap_or_default();
    let audiences = env
        .into_iter()
        .find(|e| e.name == "MCP_FRONTEND_TOKEN_AUDIENCES")
        .and_then(|e| e.value)
        .expect("the front end has MCP_FRONTEND_TOKEN_AUDIENCES");
    audiences.split(',').next().unwrap_or_default().to_owned()
}

/// The `mcptasks.io/token-audience` annotation of the front end Service of `release` in `ns`.
async fn published_audience(client: &Client, ns: &str, release: &str) -> Option<String> {
    let name = format!("{}-mcp-frontend", fullname(release));
    let service = Api::<Service>::namespaced(client.clone(), ns)
        .get(&name)
        .await
        .unwrap_or_else(|e| panic!("read Service {name}: {e}"));
    service
        .metadata
        .annotations?
        .get(TOKEN_AUDIENCE_ANNOTATION)
        .cloned()
}

async fn tools_list(url: &str, token: &str) -> Reply {
    Mcp::new(url)
        .with_token(token)
        .request("tools/list", json!({}), false)
        .await
}

#[tokio::test]
async fn a_token_for_one_releases_default_audience_is_refused_by_another_release() {
    with_temp_ns("aud-a", |client, ns_a| async move {
        with_temp_ns("aud-b", |_, ns_b| async move {
            ensure_crds(&client).await;
            let _a = Release::new(&ns_a, "a");
            let _b = Release::new(&ns_b, "b");
            // Installs are slow: both at once.
            let (port_a, port_b) = std::thread::scope(|s| {
                let a = s.spawn(|| install(&ns_a, "a", DEFAULT_AUTH));
                let b = s.spawn(|| install(&ns_b, "b", DEFAULT_AUTH));
                (a.join().expect("install a"), b.join().expect("install b"))
            });
            let (url_a, url_b) = (mcp_url(port_a), mcp_url(port_b));

            // One caller, ServiceAccount agent of A's namespace, allowed every tool of both
            // releases: only the audience can tell the releases' tokens apart.
            service_account(&client, &ns_a, "agent").await;
            bind_caller_role(&client, &ns_a, "a", "agent", Who::ServiceAccount("agent")).await;
            let user = format!("system:serviceaccount:{ns_a}:agent");
            bind_caller_role(&client, &ns_b, "b", "agent-of-a", Who::User(&user)).await;

            let audience_a = served_audience(&client, &ns_a, "a").await;
            let audience_b = served_audience(&client, &ns_b, "b").await;
            let for_a = token(&ns_a, "agent", Some(&audience_a));
            let for_b = token(&ns_a, "agent", Some(&audience_b));
            for (url, token, what) in [(&url_a, &for_a, "A"), (&url_b, &for_b, "B")] {
                let reply = tools_list(url, token).await;
                assert_eq!(reply.status, 200, "{what}'s own token: {}", reply.body);
            }
            for (url, token, what) in [
                (&url_b, &for_a, "B took a token minted for A's audience"),
                (&url_a, &for_b, "A took a token minted for B's audience"),
            ] {
                let reply = tools_list(url, token).await;
                assert_eq!(reply.status, 401, "{what} ({audience_a}, {audience_b})");
                assert_unauthorized(&reply, Some("invalid_token"));
            }

            // The audiences are the documented form, published where kubectl mcp reads them;
            // the old shared default is nobody's.
            assert_eq!(audience_a, audience(&ns_a, "a"));
            assert_eq!(audience_b, audience(&ns_b, "b"));
            assert_eq!(
                published_audience(&client, &ns_a, "a").await.as_deref(),
                Some(audience_a.as_str())
            );
            assert_eq!(
                published_audience(&client, &ns_b, "b").await.as_deref(),
                Some(audience_b.as_str())
            );
            let shared = token(&ns_a, "agent", Some("mcp-task-operator"));
            for url in [&url_a, &url_b] {
                assert_unauthorized(&tools_list(url, &shared).await, Some("invalid_token"));
            }
        })
        .await;
    })
    .await;
}
