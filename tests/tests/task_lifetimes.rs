//! A task's lifetime as a client sees it through the front end, with the operator and real
//! Jobs (docs/DESIGN.md, "A task's lifetime"): a task that has not ended is never answered as
//! expired, also when the operator that keeps its expiry ahead is away for longer than the
//! extension window; the task goes on and its result is read once the operator is back.

mod common;

use std::time::Duration;

use common::{start_leader_with, start_operator};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{
    WAIT, create_tool, poll_task, shell_tool, status_message,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

/// Says it started, works for 40 s, then completes.
const WORKS_FOR_A_WHILE: &str = r#"echo '{"mcp":"status","message":"started"}'; sleep 40; echo '{"mcp":"result","result":{"content":[{"type":"text","text":"done"}]}}'"#;

/// The shortest TTL a tool may ask for gives the shortest extension window (10 s): the
/// operator moves a running task's expiry to at most 10 s ahead.
const TTL_MS: i64 = 10_000;

#[tokio::test]
async fn a_running_task_is_not_expired_while_the_operator_is_away_past_its_expiry() {
    with_temp_ns("lifetime-away", |client, ns| async move {
        let operator = start_operator(&client, &ns, &[]).await;
        let frontend = Frontend::start(&ns, &[]).await;
        let mcp = Mcp::new(&frontend.url);
        let spec = json!({"ttlMs": TTL_MS});
        create_tool(&client, &ns, &shell_tool("works", WORKS_FOR_A_WHILE, spec)).await;
        mcp.wait_for_tools(&["works"]).await;
        let id = mcp.start_task("works", json!({})).await;
        poll_task(&client, &ns, &id, WAIT, |t| status_message(t) == "started").await;

        // The operator goes away; the expiry it last moved passes, and then some.
        drop(operator);
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let task = tasks.get(&id).await.expect("the task");
        let expires = task.expires_at().expect("an expiry");
        let past = expires
            .checked_add(Duration::from_secs(5))
            .expect("a time")
            .duration_since(Timestamp::now());
        tokio::time::sleep(Duration::try_from(past).unwrap_or_default()).await;
        let seen = mcp.get_task(&id).await;
        assert!(
            seen.error_code().is_none(),
            "a running task, {:.1} s past its expiry {expires} with the operator away, answered {}",
            (Timestamp::now() - expires)
                .total(k8s_openapi::jiff::Unit::Second)
                .unwrap_or(0.0),
            seen.body
        );
        assert_eq!(seen.result()["status"], "working", "{}", seen.body);
        assert_eq!(seen.result()["statusMessage"], "started", "{}", seen.body);

        // Back, the operator follows the task to its end; the client reads the result.
        let _operator = start_leader_with(&ns, &[]).await;
        let done = mcp.wait_status(&id, "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    })
    .await;
}
