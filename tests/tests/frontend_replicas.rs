//! Two real front end processes against the same cluster: any replica serves any task, and a
//! replica killed with SIGKILL mid-poll loses nothing.

mod common;

use std::time::Duration;

use common::frontend::two_replicas;
use mcp_task_operator_harness::fixture_tools::{FIXTURE_TOOLS, serve_fixtures};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::{Mcp, WAIT};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

#[tokio::test]
async fn a_task_created_on_one_replica_is_served_by_the_other() {
    with_temp_ns("frontend-replicas", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let ((_one, a), (_other, b)) = two_replicas(&ns).await;

        // Read at once on the other replica: its cache may not have the task yet.
        let id = a
            .start_task("confirm_delete", json!({ "filename": "c.txt" }))
            .await;
        let first = b.get_task(&id).await;
        assert_eq!(first.result()["taskId"], id, "{}", first.body);

        let mut listen = b.listen("on-b", &[&id]).await;
        let ack = listen.next().await;
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
        listen.wait_status(&id, "input_required").await;
        let ack = b
            .update_task(
                &id,
                json!({ "confirm-1": { "action": "accept", "content": { "confirm": true } } }),
            )
            .await;
        assert_eq!(ack.result()["resultType"], "complete");
        let done = listen.wait_status(&id, "completed").await;
        assert_eq!(
            done["params"]["result"]["content"][0]["text"],
            "Deleted c.txt"
        );
        assert_eq!(
            a.wait_status(&id, "completed").await["result"],
            done["params"]["result"]
        );

        // Cancel through the other replica, seen on both.
        let long = a
            .start_task("slow_compute", json!({ "seconds": 3600 }))
            .await;
        let mut listen = b.listen("cancel-on-b", &[&long]).await;
        listen.next().await;
        assert_eq!(
            b.cancel_task(&long).await.result()["resultType"],
            "complete"
        );
        listen.wait_status(&long, "cancelled").await;
        a.wait_status(&long, "cancelled").await;
    })
    .await;
}

#[tokio::test]
async fn killing_a_replica_mid_poll_loses_nothing() {
    with_temp_ns("frontend-replicas", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let mut doomed = Frontend::start(&ns, &[]).await;
        let survivor = Frontend::start(&ns, &[]).await;
        let a = Mcp::new(&doomed.url);
        a.wait_for_tools(&FIXTURE_TOOLS).await;
        Mcp::new(&survivor.url).wait_for_tools(&FIXTURE_TOOLS).await;

        let id = a
            .start_task("slow_compute", json!({ "seconds": 3, "label": "survives" }))
            .await;
        let before = a.wait_status(&id, "working").await;

        // A client polls the first replica and moves to the second when a poll fails.
        let (polled, mut polled_rx) = tokio::sync::watch::channel(0_u32);
        let poller = {
            let (mcp, id, fallback) = (a.clone(), id.clone(), survivor.url.clone());
            tokio::spawn(async move {
                let params = json!({ "taskId": id });
                let mut polls = 0;
                while let Ok(reply) = mcp.try_request("tasks/get", params.clone(), true).await {
                    assert_eq!(reply.result()["taskId"], id.as_str());
                    polls += 1;
                    polled.send_replace(polls);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                (polls, mcp.with_url(&fallback))
            })
        };
        // Kill it mid-poll: after some polls went through, while the loop still runs.
        polled_rx
            .wait_for(|polls| *polls >= 3)
            .await
            .expect("poller alive");
        // SIGKILL to the PID this test spawned: no graceful shutdown, no last words.
        let pid = doomed.pid();
        doomed.kill().await;
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "front end {pid} still running"
        );
        let (polls, moved) = tokio::time::timeout(WAIT, poller)
            .await
            .expect("the poller notices the dead replica")
            .expect("poller did not panic");
        assert!(polls >= 3);

        // On the other replica the task is intact and runs to the end.
        let after = moved.get_task(&id).await;
        let after = after.result();
        for field in ["taskId", "createdAt", "ttlMs", "pollIntervalMs"] {
            assert_eq!(after[field], before[field], "{field}");
        }
        let done = moved.wait_status(&id, "completed").await;
        assert_eq!(
            done["result"]["content"][0]["text"],
            "Computed survives in 3 s"
        );
    })
    .await;
}
