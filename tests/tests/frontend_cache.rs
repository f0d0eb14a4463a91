//! The front end's task cache on the real cluster: deletions reach listeners and waiters and
//! are never served again, and a replica whose watch lags never shows a client an older
//! status than another replica did.

mod common;

use std::time::Duration;

use common::frontend::two_replicas;
use kube::Api;
use kube::api::ListParams;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::fixture_tools::{FIXTURE_TOOLS, serve_fixtures};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::lag_proxy::{LagProxy, api_server_address};
use mcp_task_operator_harness::mcp_client::{Mcp, WAIT};
use mcp_task_operator_harness::{kubectl_ok, with_temp_ns};
use serde_json::json;

#[tokio::test]
async fn deleting_tasks_ends_listens_and_waits_and_no_replica_serves_them() {
    with_temp_ns("fe-cache-delete", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let ((_one, a), (_other, b)) = two_replicas(&ns).await;

        // A task created on one replica, listened to on the other.
        let listened = a
            .start_task("slow_compute", json!({ "seconds": 3600 }))
            .await;
        let mut listen = b.listen("deleted", &[&listened]).await;
        assert_eq!(
            listen.next().await["params"]["notifications"]["taskIds"],
            json!([listened])
        );
        listen.wait_status(&listened, "working").await;

        // A synchronous call (no tasks extension) waiting on the first replica.
        let waiter = {
            let a = a.clone();
            tokio::spawn(async move {
                let params = json!({ "name": "slow_compute", "arguments": { "seconds": 3600 } });
                a.request("tools/call", params, false).await
            })
        };
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let waited = loop {
            let names: Vec<String> = tasks
                .list(&ListParams::default())
                .await
                .expect("list tasks")
                .items
                .into_iter()
                .filter_map(|t| t.metadata.name)
                .filter(|name| *name != listened)
                .collect();
            if let Some(name) = names.into_iter().next() {
                break name;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };

        kubectl_ok(&["delete", "mcptask", "-n", &ns, &listened, &waited]);

        // The listen ends with its final result (after any notification already on its way):
        // the client re-listens and learns the rest.
        let done = tokio::time::timeout(WAIT, async {
            loop {
                let message = listen
                    .next_inner()
                    .await
                    .expect("a final result before the end");
                if message.get("id").is_some() {
                    break message;
                }
            }
        })
        .await
        .expect("the listen stream ends after the deletion");
        assert_eq!(done["id"], "deleted", "{done}");
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(listen.next_inner().await, None);
        let mut again = b.listen("again", &[&listened]).await;
        assert_eq!(
            again.next().await["params"]["notifications"]["taskIds"],
            json!([])
        );

        let answer = tokio::time::timeout(WAIT, waiter)
            .await
            .expect("the waiting call answers after the deletion")
            .expect("waiter did not panic");
        assert_eq!(answer.error_code(), Some(-32603), "{}", answer.body);
        assert_eq!(
            answer.error_message(),
            format!("task {waited} was deleted before it finished; the call has no result")
        );

        for (replica, mcp) in [("creating", &a), ("other", &b)] {
            for id in [&listened, &waited] {
                let reply = mcp.get_task(id).await;
                assert_eq!(
                    reply.error_code(),
                    Some(-32602),
                    "{replica}: {}",
                    reply.body
                );
                assert_eq!(reply.error_message(), "Task not found", "{replica}");
            }
        }
    })
    .await;
}

/// How far the lagging replica's link to the API server holds its answers back: below the
/// front end's 2 s API health probe timeout, so the replica still counts as connected.
const LAG: Duration = Duration::from_millis(700);

#[tokio::test]
async fn a_replica_whose_watch_lags_never_shows_an_older_status() {
    with_temp_ns("fe-cache-lag", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let proxy = LagProxy::start(&api_server_address(), LAG).await;
        let kubeconfig = proxy.kubeconfig(&std::env::temp_dir());
        let fresh = Frontend::start(&ns, &[]).await;
        let lagging = Frontend::start_with_kubeconfig(&ns, &[], Some(&kubeconfig)).await;
        let (a, b) = (Mcp::new(&fresh.url), Mcp::new(&lagging.url));
        a.wait_for_tools(&FIXTURE_TOOLS).await;
        b.wait_for_tools(&FIXTURE_TOOLS).await;

        // A client alternating between the replicas, as behind a load balancer, while its
        // task finishes. Once a replica said `completed`, every later answer must too.
        // The task runs long enough for the lagging watch to hold it as `working` first.
        let id = a.start_task("slow_compute", json!({ "seconds": 5 })).await;
        let deadline = tokio::time::Instant::now() + WAIT;
        let (mut seen, mut answers_after, mut backwards) = (Vec::new(), 0, 0);
        while answers_after < 6 {
            for (replica, mcp) in [("fresh", &a), ("lagging", &b)] {
                let reply = mcp.get_task(&id).await;
                let status = reply.result()["status"].as_str().unwrap_or("?").to_owned();
                if seen.iter().any(|(_, s)| s == "completed") {
                    answers_after += 1;
                    if status != "completed" {
                        backwards += 1;
                    }
                }
                seen.push((replica, status));
            }
            assert!(tokio::time::Instant::now() < deadline, "{seen:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!("answers (replica, status): {seen:?}; {backwards} went backwards");
        assert_eq!(backwards, 0, "a status went backwards: {seen:?}");
        drop(lagging);
    })
    .await;
}
