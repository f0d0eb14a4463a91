//! Per-caller quotas and request bounds of the real front end binary against the real API
//! server (no operator: tasks stay active until deleted): the active-task quota counts from
//! the watch cache, finished tasks count against what a caller may store (tasks and bytes), and a listen naming many unknown task IDs is refused before any lookup
//! while unknown IDs cost one API read each, not one per request. Each test also prints what
//! a refusal costs (no timing is asserted).

mod common;

use std::time::Instant;

use common::frontend::{lookups, unauthenticated_frontend};
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use mcp_task_operator_crds::{McpTask, task_id};
use mcp_task_operator_harness::mcp_client::{Mcp, PROTOCOL_VERSION, Reply, TASKS_EXTENSION, WAIT};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::{Value, json};

/// Refused requests sent in a row to measure what one costs.
const REFUSALS: u32 = 300;

/// Calls `slow_compute` for a minute, a task that stays active while the test runs.
async fn call_slow(mcp: &Mcp) -> Reply {
    mcp.call_tool("slow_compute", json!({ "seconds": 60 }))
        .await
}

fn report(what: &str, started: Instant) {
    let each = started.elapsed() / REFUSALS;
    eprintln!("cost of one refused {what}: {each:?} (mean of {REFUSALS}, sequential)");
}

#[tokio::test]
async fn calls_past_the_active_task_quota_create_nothing_until_a_task_goes() {
    with_temp_ns("fe-limits", |client, ns| async move {
        let env = [
            ("MAX_ACTIVE_TASKS_PER_CALLER", "3"),
            ("CALL_RATE_PER_SECOND", "0"),
        ];
        let (_frontend, mcp) = unauthenticated_frontend(&client, &ns, &env).await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(
                mcp.start_task("slow_compute", json!({ "seconds": 60 }))
                    .await,
            );
        }
        let refused = call_slow(&mcp).await;
        assert_eq!(refused.error_code(), Some(-31002), "{}", refused.body);
        assert_eq!(
            refused.error_message(),
            "quota exceeded: this caller has 3 active tasks and the limit is 3; wait for one \
             to finish or cancel one"
        );
        assert_eq!(
            refused.body["error"]["data"],
            json!({ "limit": 3, "active": 3 })
        );
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let stored = tasks.list(&ListParams::default()).await.expect("list");
        assert_eq!(stored.items.len(), 3, "nothing created on refusal");

        let started = Instant::now();
        for _ in 0..REFUSALS {
            let reply = call_slow(&mcp).await;
            assert_eq!(reply.error_code(), Some(-31002), "{}", reply.body);
        }
        report("tools/call (quota)", started);
        let stored = tasks.list(&ListParams::default()).await.expect("list");
        assert_eq!(stored.items.len(), 3);

        // A task that goes (the watch shows its deletion) frees a place.
        tasks
            .delete(&ids[0], &DeleteParams::default())
            .await
            .expect("delete a task");
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let reply = call_slow(&mcp).await;
            if reply.body.get("result").is_some() {
                break;
            }
            assert_eq!(reply.error_code(), Some(-31002), "{}", reply.body);
            assert!(tokio::time::Instant::now() < deadline, "place never freed");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn calls_faster_than_the_call_rate_are_refused_with_retry_after() {
    with_temp_ns("fe-limits", |client, ns| async move {
        // One call per 1000 s: no refill while the test runs, however slow the machine.
        let env = [("CALL_RATE_PER_SECOND", "0.001"), ("CALL_BURST", "1")];
        let (_frontend, mcp) = unauthenticated_frontend(&client, &ns, &env).await;
        mcp.start_task("slow_compute", json!({ "seconds": 60 }))
            .await;
        let started = Instant::now();
        for _ in 0..REFUSALS {
            let reply = call_slow(&mcp).await;
            assert_eq!(reply.error_code(), Some(-31001), "{}", reply.body);
            assert!(reply.body["error"]["data"]["retryAfterMs"].as_u64() > Some(0));
        }
        report("tools/call (rate)", started);
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let stored = tasks.list(&ListParams::default()).await.expect("list");
        assert_eq!(stored.items.len(), 1, "nothing created on refusal");
    })
    .await;
}

fn listen_body(task_ids: &[String]) -> Value {
    json!({
        "jsonrpc": "2.0", "id": "many", "method": "subscriptions/listen",
        "params": {
            "notifications": { "taskIds": task_ids },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS_EXTENSION: {} } },
            },
        },
    })
}

#[tokio::test]
async fn listen_bounds_task_ids_before_lookups_and_reads_each_unknown_id_once() {
    with_temp_ns("fe-limits", |client, ns| async move {
        let (frontend, mcp) = unauthenticated_frontend(&client, &ns, &[]).await;
        let headers = [("mcp-method", "subscriptions/listen".to_owned())];
        // As many as fit in the 1 MiB body limit (39-character IDs, 42 bytes each as JSON).
        let many: Vec<String> = (0..20_000).map(|_| task_id::generate()).collect();
        let reply = mcp.send(&headers, &listen_body(&many)).await;
        assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
        assert_eq!(
            reply.error_message(),
            "notifications.taskIds names 20000 tasks; at most 100 per listen"
        );
        let started = Instant::now();
        for _ in 0..REFUSALS {
            let reply = mcp.send(&headers, &listen_body(&many[..101])).await;
            assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
        }
        report("subscriptions/listen (101 IDs)", started);
        assert_eq!(
            lookups(&frontend, "api").await,
            0,
            "no lookup before the bound"
        );

        // 100 unknown IDs: one API read each, then none while the misses are remembered.
        let unknown: Vec<&str> = many[..100].iter().map(String::as_str).collect();
        for round in 0..3 {
            let mut listen = mcp.listen(&format!("round-{round}"), &unknown).await;
            let ack = listen.next().await;
            assert_eq!(ack["params"]["notifications"]["taskIds"], json!([]));
        }
        for id in &unknown[..10] {
            let reply = mcp.get_task(id).await;
            assert_eq!(reply.error_message(), "Task not found");
        }
        assert_eq!(lookups(&frontend, "api").await, 100);
        assert!(lookups(&frontend, "negative_cache").await >= 210);

        // A task that appears under a remembered ID (created straight through the API, as
        // another replica would) is found from the watch cache, not hidden by the miss.
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let spec = json!({ "tool": "slow_compute", "owner": "system:anonymous",
            "arguments": { "seconds": 60 }, "ttlMs": 600_000 });
        let task = McpTask::new(unknown[0], serde_json::from_value(spec).expect("spec"));
        tasks
            .create(&Default::default(), &task)
            .await
            .expect("create a task");
        let deadline = tokio::time::Instant::now() + WAIT;
        while mcp.get_task(unknown[0]).await.body.get("result").is_none() {
            assert!(tokio::time::Instant::now() < deadline, "task never found");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(
            lookups(&frontend, "api").await,
            100,
            "found through the watch"
        );
    })
    .await;
}

/// Arguments of about 60 KiB in the shape that cost most as a parsed tree: `[0,0,…]`.
fn zeros() -> Value {
    json!({ "seconds": 60, "zeros": vec![0; 30_000] })
}

#[tokio::test]
async fn finished_tasks_count_against_what_a_caller_may_store_also_after_a_restart() {
    with_temp_ns("fe-stored", |client, ns| async move {
        // A call is refused once the stored bytes reach the limit: the fourth task of 60 KiB
        // of arguments passes (180 KB stored), the fifth does not (240 KB). Tasks of a few
        // bytes are bounded by the count (6).
        let env = [
            ("MAX_STORED_BYTES_PER_CALLER", "200000"),
            ("MAX_STORED_TASKS_PER_CALLER", "6"),
            ("CALL_RATE_PER_SECOND", "0"),
        ];
        let (frontend, mcp) = unauthenticated_frontend(&client, &ns, &env).await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        // Each task ends at once (as the operator would write it): none stays active, so only
        // what is stored can refuse the fifth.
        let mut ids = Vec::new();
        for _ in 0..5 {
            let reply = mcp.call_tool("slow_compute", zeros()).await;
            if reply.error_code() == Some(-31002) {
                break;
            }
            let id = reply.body["result"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("a task handle: {}", reply.body))
                .to_owned();
            cancel_in_store(&tasks, &id).await;
            ids.push(id);
        }
        assert_eq!(ids.len(), 4, "the fifth 60 KiB task is refused");
        let refused = mcp.call_tool("slow_compute", zeros()).await;
        assert_eq!(refused.error_code(), Some(-31002), "{}", refused.body);
        assert!(
            refused
                .error_message()
                .contains("MAX_STORED_BYTES_PER_CALLER"),
            "{}",
            refused.body
        );
        assert_eq!(refused.body["error"]["data"]["limit"], 200_000);
        let stored = tasks.list(&ListParams::default()).await.expect("list");
        assert_eq!(stored.items.len(), 4, "nothing created on refusal");
        // Every stored task is still the caller's to read.
        for id in &ids {
            let reply = mcp.get_task(id).await;
            assert_eq!(
                reply.body["result"]["status"], "cancelled",
                "{}",
                reply.body
            );
        }

        // A restarted replica reads the same tasks back and refuses the same way.
        drop(frontend);
        let (_frontend, mcp) = unauthenticated_frontend(&client, &ns, &env).await;
        let refused = mcp.call_tool("slow_compute", zeros()).await;
        assert_eq!(refused.error_code(), Some(-31002), "{}", refused.body);

        // Small tasks: the count limit (6 stored, finished ones included).
        tasks
            .delete(&ids[0], &DeleteParams::default())
            .await
            .expect("delete a task");
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut small = 0;
        loop {
            let reply = mcp
                .call_tool("slow_compute", json!({ "seconds": 60 }))
                .await;
            match reply.error_code() {
                None => {
                    let id = reply.body["result"]["taskId"].as_str().unwrap_or_default();
                    cancel_in_store(&tasks, id).await;
                    small += 1;
                }
                Some(-31002)
                    if reply
                        .error_message()
                        .contains("MAX_STORED_TASKS_PER_CALLER") =>
                {
                    break;
                }
                Some(_) => {
                    // The watch has not shown the deletion yet: the byte limit still holds.
                    assert!(tokio::time::Instant::now() < deadline, "{}", reply.body);
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            }
        }
        assert_eq!(small, 3, "6 stored: 3 large and 3 small");
    })
    .await;
}

/// Writes `cancelled` into task `id`'s status, as the operator does when it ends.
async fn cancel_in_store(tasks: &Api<McpTask>, id: &str) {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let status = json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "status": {"status": "cancelled", "createdAt": now, "lastUpdatedAt": now,
                   "statusMessage": "ended by the test"},
    });
    tasks
        .patch_status(
            id,
            &kube::api::PatchParams::apply("frontend-limits-test").force(),
            &kube::api::Patch::Apply(&status),
        )
        .await
        .unwrap_or_else(|e| panic!("end task {id}: {e}"));
}
