//! Authentication and authorization of the Helm-installed front end with the chart's default
//! auth values (issue 12, findings 2 and 3):
//!
//! - TokenReview accepts only tokens issued for the release's audience
//!   (`mcp-task-operator.<namespace>.<fullname>`): a token without `--audience` (for the API
//!   server) gets 401 (one release's audience against another's is `chart_audience.rs`);
//! - RBAC decides which tools a caller sees and calls (verb `call` on `mcptools`, by object
//!   name): for ServiceAccount tokens, bound directly or through their group, and for static
//!   tokens through the token file's groups column. A refused call reads exactly like a call
//!   of a tool that does not exist, and granting a tool takes effect without a restart.

mod common;

use common::{CONFORMANCE_TOOLS, owner_of, static_tokens_secret};
use kube::api::ListParams;
use kube::{Api, Client};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::callers::{
    Who, assert_unauthorized, audience, caller_token, grant_tools, random_token, service_account,
    token,
};
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::stack::{Release, apply_examples, install, mcp_url};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::json;

/// Replicas and scope only: every auth value is the chart's default.
const DEFAULT_AUTH: &[&str] = &[
    "rbac.scope=namespace",
    "operator.replicaCount=1",
    "frontend.replicaCount=1",
];

/// Asserts that `tools/call` of `refused` (a served tool the caller may not call) answers
/// exactly as `tools/call` of a name no tool has, and creates no task.
async fn assert_refused_like_unknown(client: &Client, ns: &str, caller: &Mcp, refused: &str) {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let before = tasks
        .list(&ListParams::default())
        .await
        .expect("list tasks");
    let arguments = json!({ "seconds": 0, "label": "x" });
    let forbidden = caller.call_tool(refused, arguments.clone()).await;
    let unknown = caller.call_tool("no-such-tool", arguments).await;
    assert_eq!(forbidden.status, unknown.status);
    assert_eq!(forbidden.error_code(), Some(-32602), "{}", forbidden.body);
    assert_eq!(forbidden.error_code(), unknown.error_code());
    assert_eq!(
        forbidden.error_message(),
        format!("Unknown tool: {refused}")
    );
    assert_eq!(unknown.error_message(), "Unknown tool: no-such-tool");
    assert_eq!(
        forbidden.body["error"].get("data"),
        unknown.body["error"].get("data")
    );
    let after = tasks
        .list(&ListParams::default())
        .await
        .expect("list tasks");
    assert_eq!(
        after.items.len(),
        before.items.len(),
        "a refused call created a task"
    );
}

/// The sorted `tools/list` of `caller`.
async fn listed(caller: &Mcp) -> Vec<String> {
    let mut names = caller.tool_names().await;
    names.sort();
    names
}

#[tokio::test]
async fn chart_default_auth_accepts_only_tokens_for_its_audience_and_rbac_picks_the_tools() {
    with_temp_ns("authz-sa", |client, ns| async move {
        ensure_crds(&client).await;
        let release = Release::new(&ns, "az");
        let port = install(&ns, "az", DEFAULT_AUTH);
        // Cluster-wide: the front end's review grant (ClusterRole and binding), the caller
        // ClusterRole, and the two admission policies with their bindings.
        let cluster = release.cluster_objects();
        assert_eq!(cluster.len(), 7, "{cluster:?}");
        apply_examples(&client, &ns, &[CONFORMANCE_TOOLS]).await;
        let url = mcp_url(port);

        // Audience binding: only tokens minted for the release's audience are accepted.
        let full = Mcp::new(&url).with_token(&caller_token(&client, &ns, "az", "caller").await);
        full.wait_for_tools(&["confirm_delete", "failing_job", "greet", "slow_compute"])
            .await;
        for (token, what) in [
            (token(&ns, "caller", None), "the API server's audience"),
            (
                token(&ns, "caller", Some("another-service")),
                "another audience",
            ),
            (random_token(), "garbage"),
        ] {
            let reply = Mcp::new(&url)
                .with_token(&token)
                .request("tools/list", json!({}), false)
                .await;
            assert_eq!(reply.status, 401, "{what}: {}", reply.body);
            assert_unauthorized(&reply, Some("invalid_token"));
        }
        let id = full
            .start_task("slow_compute", json!({ "seconds": 0, "label": "sa" }))
            .await;
        full.wait_status(&id, "completed").await;
        let username = format!("system:serviceaccount:{ns}:caller");
        assert_eq!(owner_of(&client, &ns, &id).await, username);

        // Caller A may call greet only (McpTool conformance-greet).
        service_account(&client, &ns, "agent-a").await;
        let who = Who::ServiceAccount("agent-a");
        grant_tools(&client, &ns, "agent-a", who, &["conformance-greet"]).await;
        let a = Mcp::new(&url).with_token(&token(&ns, "agent-a", Some(&audience(&ns, "az"))));
        a.wait_for_tools(&["greet"]).await;
        assert_eq!(listed(&a).await, ["greet"]);
        assert_refused_like_unknown(&client, &ns, &a, "slow_compute").await;
        // Granting slow_compute shows up within the refusal cache's lifetime.
        let both = ["conformance-greet", "conformance-slow-compute"];
        grant_tools(&client, &ns, "agent-a", who, &both).await;
        a.wait_for_tools(&["greet", "slow_compute"]).await;
        assert_eq!(listed(&a).await, ["greet", "slow_compute"]);
        let id = a
            .start_task("slow_compute", json!({ "seconds": 0, "label": "a" }))
            .await;
        a.wait_status(&id, "completed").await;

        // Caller B has no binding of its own: it sees nothing until its ServiceAccount group
        // is granted failing_job.
        service_account(&client, &ns, "agent-b").await;
        let b = Mcp::new(&url).with_token(&token(&ns, "agent-b", Some(&audience(&ns, "az"))));
        assert!(listed(&b).await.is_empty());
        assert_refused_like_unknown(&client, &ns, &b, "greet").await;
        let group = format!("system:serviceaccounts:{ns}");
        let tools = ["conformance-failing-job"];
        grant_tools(&client, &ns, "ns-accounts", Who::Group(&group), &tools).await;
        b.wait_for_tools(&["failing_job"]).await;
        assert_eq!(listed(&b).await, ["failing_job"]);
        let id = b.start_task("failing_job", json!({})).await;
        let done = b.wait_status(&id, "completed").await;
        assert_eq!(done["result"]["isError"], true, "{done}");
    })
    .await;
}

#[tokio::test]
async fn static_token_callers_get_the_tools_rbac_grants_their_groups() {
    with_temp_ns("authz-static", |client, ns| async move {
        ensure_crds(&client).await;
        let (carol, dave) = (random_token(), random_token());
        let file = format!("{carol},carol,u-carol,\"greeters,other\"\n{dave},dave,u-dave,\n");
        static_tokens_secret(&client, &ns, file).await;
        let _release = Release::new(&ns, "az");
        let mut sets = DEFAULT_AUTH.to_vec();
        sets.extend([
            "frontend.auth.mode=static",
            "frontend.auth.static.existingSecret=mcp-tokens",
        ]);
        let port = install(&ns, "az", &sets);
        apply_examples(&client, &ns, &[CONFORMANCE_TOOLS]).await;
        let url = mcp_url(port);

        let greeters = Who::Group("greeters");
        grant_tools(&client, &ns, "greeters", greeters, &["conformance-greet"]).await;
        let carol = Mcp::new(&url).with_token(&carol);
        let dave = Mcp::new(&url).with_token(&dave);
        carol.wait_for_tools(&["greet"]).await;
        assert_eq!(listed(&carol).await, ["greet"]);
        assert_refused_like_unknown(&client, &ns, &carol, "slow_compute").await;
        // Dave is in no group: nothing.
        assert!(listed(&dave).await.is_empty());
        assert_refused_like_unknown(&client, &ns, &dave, "greet").await;

        let both = ["conformance-greet", "conformance-slow-compute"];
        grant_tools(&client, &ns, "greeters", greeters, &both).await;
        carol.wait_for_tools(&["greet", "slow_compute"]).await;
        let id = carol
            .start_task("slow_compute", json!({ "seconds": 0, "label": "c" }))
            .await;
        carol.wait_status(&id, "completed").await;
        assert!(listed(&dave).await.is_empty());
    })
    .await;
}
