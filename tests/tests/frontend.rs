//! The real front end binary against the real API server, one process per test, with the
//! test-side status writer standing in for the operator: every task status, cancel, input,
//! expiry, foreign owners, capability and header errors, and listen notifications.

mod common;

use common::start_confirm_owned_by;
use kube::Api;
use mcp_task_operator_crds::{CANCEL_REQUESTED_ANNOTATION, McpTask, McpTool, task_id};
use mcp_task_operator_harness::fixture_tools::{
    FIXTURE_TOOLS, apply_tool, mark_tools_ready, serve_fixtures,
};
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::{
    Mcp, TASKS_EXTENSION, WAIT, assert_foreign_task_looks_unknown,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::{Value, json};

/// A front end for `ns` with the fixture tools served, and a client for it.
async fn start(ns: &str) -> (Frontend, Mcp) {
    let frontend = Frontend::start(ns, &[]).await;
    let mcp = Mcp::new(&frontend.url);
    mcp.wait_for_tools(&FIXTURE_TOOLS).await;
    (frontend, mcp)
}

/// Runs `body` in a fresh namespace with the fixture tools served (the test's status writer
/// standing in for the operator) and a front end for it, given the client, the namespace and
/// an MCP client of that front end.
async fn with_fixtures(body: impl AsyncFnOnce(kube::Client, String, Mcp)) {
    with_temp_ns("frontend", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let (_frontend, mcp) = start(&ns).await;
        body(client, ns, mcp).await;
    })
    .await;
}

#[tokio::test]
async fn task_moves_from_working_to_completed_with_the_result_inlined() {
    with_fixtures(async |_, _, mcp| {
        let reply = mcp
            .call_tool("slow_compute", json!({ "seconds": 1, "label": "one" }))
            .await;
        let handle = reply.result();
        assert_eq!(handle["resultType"], "task");
        assert_eq!(handle["status"], "working");
        assert_eq!(handle["ttlMs"], 600_000);
        assert_eq!(handle["pollIntervalMs"], 500);
        for absent in ["result", "error", "inputRequests", "task"] {
            assert!(handle.get(absent).is_none(), "{absent} in {handle}");
        }
        let id = handle["taskId"].as_str().expect("taskId");
        // Readable at once: the durability rule for CreateTaskResult.
        let first = mcp.get_task(id).await;
        assert_eq!(first.result()["resultType"], "complete");
        assert_eq!(first.result()["taskId"], id);

        let done = mcp.wait_status(id, "completed").await;
        assert_eq!(done["resultType"], "complete");
        assert_eq!(done["result"]["resultType"], "complete");
        assert_eq!(done["result"]["isError"], false);
        assert_eq!(done["result"]["content"][0]["text"], "Computed one in 1 s");
        assert_eq!(done["result"]["structuredContent"]["label"], "one");
        assert!(done.get("error").is_none());
        assert_eq!(
            done["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-task-operator"
        );
    })
    .await;
}

#[tokio::test]
async fn protocol_error_fails_the_task_and_tool_error_completes_it() {
    with_fixtures(async |_, _, mcp| {
        let failing = mcp.start_task("protocol_error_job", json!({})).await;
        let tool_error = mcp.start_task("failing_job", json!({})).await;

        let failed = mcp.wait_status(&failing, "failed").await;
        assert_eq!(failed["error"]["code"], -32603);
        assert!(failed["error"]["message"].as_str().is_some());
        assert!(failed.get("result").is_none());
        assert!(failed["statusMessage"].as_str().is_some());

        let completed = mcp.wait_status(&tool_error, "completed").await;
        assert_eq!(completed["result"]["isError"], true);
        assert!(completed.get("error").is_none());
    })
    .await;
}

#[tokio::test]
async fn cancel_sets_the_annotation_once_and_acks_every_time() {
    with_fixtures(async |client, ns, mcp| {
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);

        let id = mcp
            .start_task("slow_compute", json!({ "seconds": 3600 }))
            .await;
        mcp.wait_status(&id, "working").await;
        let ack = mcp.cancel_task(&id).await;
        assert_eq!(ack.status, 200);
        assert_eq!(ack.result()["resultType"], "complete");
        let annotation = |task: &McpTask| {
            task.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CANCEL_REQUESTED_ANNOTATION).cloned())
        };
        let first = annotation(&tasks.get(&id).await.expect("task")).expect("annotation set");
        assert!(
            first.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
            "not an RFC 3339 time: {first}"
        );

        let again = mcp.cancel_task(&id).await;
        assert_eq!(again.result()["resultType"], "complete");
        let cancelled = mcp.wait_status(&id, "cancelled").await;
        assert!(cancelled.get("result").is_none());
        // Idempotent: a second cancel and a cancel of the terminal task change nothing.
        let after = mcp.cancel_task(&id).await;
        assert_eq!(after.result()["resultType"], "complete");
        let task = tasks.get(&id).await.expect("task");
        assert_eq!(annotation(&task), Some(first));
        assert_eq!(mcp.get_task(&id).await.result()["status"], "cancelled");
    })
    .await;
}

#[tokio::test]
async fn input_required_round_trip_with_tasks_update() {
    with_fixtures(async |client, ns, mcp| {
        let id = mcp
            .start_task("confirm_delete", json!({ "filename": "a.txt" }))
            .await;
        let asking = mcp.wait_status(&id, "input_required").await;
        let request = &asking["inputRequests"]["confirm-1"];
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["mode"], "form");

        // Keys that are not outstanding are ignored; the ack is the same.
        let ack = mcp
            .update_task(
                &id,
                json!({
                    "not-asked": { "action": "accept", "content": {} },
                    "confirm-1": { "action": "accept", "content": { "confirm": true } },
                }),
            )
            .await;
        assert_eq!(ack.status, 200);
        assert_eq!(ack.result()["resultType"], "complete");
        let done = mcp.wait_status(&id, "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], "Deleted a.txt");
        assert!(done.get("inputRequests").is_none());
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let stored = tasks.get(&id).await.expect("task");
        let responses = stored.spec.input_responses.expect("responses stored");
        assert!(responses.contains_key("confirm-1"));
        assert!(!responses.contains_key("not-asked"));

        // Partial answers: the answered key disappears, the task waits for the other.
        let multi = mcp.start_task("multi_input", json!({})).await;
        let both = mcp.wait_status(&multi, "input_required").await;
        assert_eq!(both["inputRequests"].as_object().map(|r| r.len()), Some(2));
        mcp.update_task(
            &multi,
            json!({ "name-1": { "action": "accept", "content": { "name": "Ada" } } }),
        )
        .await
        .result();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let now = mcp.get_task(&multi).await.result().clone();
            let keys: Vec<&String> = now["inputRequests"]
                .as_object()
                .map(|r| r.keys().collect())
                .unwrap_or_default();
            if keys == ["confirm-1"] {
                assert_eq!(now["status"], "input_required");
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "still {now}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        mcp.update_task(
            &multi,
            json!({ "confirm-1": { "action": "accept", "content": { "confirm": true } } }),
        )
        .await
        .result();
        let done = mcp.wait_status(&multi, "completed").await;
        assert_eq!(
            done["result"]["content"][0]["text"],
            "Hello, Ada! Go on: true."
        );
    })
    .await;
}

#[tokio::test]
async fn expired_task_answers_task_has_expired_to_its_owner() {
    with_temp_ns("frontend", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        apply_tool(
            &tools,
            json!({
                "metadata": { "name": "short-lived" },
                "spec": {
                    "inputSchema": { "type": "object" },
                    "taskSupport": "required",
                    "ttlMs": 2000,
                    "template": { "spec": { "containers": [{ "name": "tool", "image": "localhost/none:v1" }] } },
                },
            }),
        )
        .await;
        mark_tools_ready(&client, &ns).await;
        let (_frontend, mcp) = start(&ns).await;
        mcp.wait_for_tools(&["short-lived"]).await;

        let id = mcp.start_task("short-lived", json!({})).await;
        assert_eq!(mcp.get_task(&id).await.result()["ttlMs"], 2000);
        // Past its TTL a task that has not ended is still served (docs/DESIGN.md#expired-task).
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        let running = mcp.get_task(&id).await;
        assert_eq!(running.result()["status"], "working", "{}", running.body);
        mcp.cancel_task(&id).await;
        // Ended, it expires. The stand-in never deletes tasks, so the front end alone decides.
        let deadline = tokio::time::Instant::now() + WAIT;
        let expired = loop {
            let reply = mcp.get_task(&id).await;
            if reply.error_code().is_some() {
                break reply;
            }
            assert!(tokio::time::Instant::now() < deadline, "never expired: {}", reply.body);
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        assert_eq!(expired.error_code(), Some(-32602));
        // docs/DESIGN.md#expired-task: exactly "Task has expired", to the owner only.
        assert!(
            expired.error_message().ends_with("Task has expired"),
            "{}",
            expired.body
        );
        for reply in [
            mcp.cancel_task(&id).await,
            mcp.update_task(&id, json!({})).await,
        ] {
            assert_eq!(reply.error_code(), Some(-32602), "{:?}", reply.body);
        }
    })
    .await;
}

#[tokio::test]
async fn a_foreign_owner_gets_the_same_error_as_for_an_unknown_task() {
    with_temp_ns("frontend", |client, ns| async move {
        let _writer = serve_fixtures(&client, &ns).await;
        let tokens = std::env::temp_dir().join(format!("mto-tokens-{ns}.csv"));
        std::fs::write(&tokens, "alice-token,alice\nbob-token,bob\n").expect("token file");
        let path = tokens.to_str().expect("utf-8 path");
        let frontend = Frontend::start(
            &ns,
            &[("AUTH_MODE", "static"), ("STATIC_TOKENS_FILE", path)],
        )
        .await;
        let alice = Mcp::new(&frontend.url).with_token("alice-token");
        let bob = Mcp::new(&frontend.url).with_token("bob-token");
        alice.wait_for_tools(&["slow_compute"]).await;

        let anonymous = Mcp::new(&frontend.url)
            .request("tools/list", json!({}), false)
            .await;
        assert_eq!(anonymous.status, 401, "no token must be refused");

        let id = start_confirm_owned_by(&client, &ns, &alice, "x", "alice").await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);

        assert_foreign_task_looks_unknown(&bob, &alice, &tasks, &id).await;
        let _ = std::fs::remove_file(&tokens);
    })
    .await;
}

#[tokio::test]
async fn non_declaring_clients_get_32021_for_task_only_tools_and_task_methods() {
    with_fixtures(async |_, _, mcp| {
        let id = mcp
            .start_task("slow_compute", json!({ "seconds": 3600 }))
            .await;

        let call = json!({ "name": "failing_job", "arguments": {} });
        let mut replies = vec![mcp.request("tools/call", call, false).await];
        for method in ["tasks/get", "tasks/cancel"] {
            replies.push(mcp.request(method, json!({ "taskId": id }), false).await);
        }
        let update = json!({ "taskId": id, "inputResponses": {} });
        replies.push(mcp.request("tasks/update", update, false).await);
        for reply in replies {
            assert_eq!(reply.status, 400, "{}", reply.body);
            assert_eq!(reply.error_code(), Some(-32021), "{}", reply.body);
            assert_eq!(
                reply.body["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
                json!({})
            );
        }
        // A task-optional tool runs synchronously for them instead.
        let sync = json!({ "name": "slow_compute", "arguments": { "seconds": 0 } });
        let reply = mcp.request("tools/call", sync, false).await;
        assert_eq!(reply.result()["resultType"], "complete");
        assert_eq!(reply.result()["content"][0]["text"], "Computed  in 0 s");
        // Nothing was cancelled by the refused requests.
        assert_eq!(mcp.get_task(&id).await.result()["status"], "working");
    })
    .await;
}

#[tokio::test]
async fn mcp_name_mismatch_is_32020_with_http_400() {
    with_fixtures(async |_, _, mcp| {
        let id = mcp
            .start_task("slow_compute", json!({ "seconds": 3600 }))
            .await;
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS_EXTENSION: {} } },
        });
        let other = task_id::generate();
        for (method, name, params) in [
            (
                "tasks/get",
                other.clone(),
                json!({ "taskId": id, "_meta": meta }),
            ),
            (
                "tasks/cancel",
                other.clone(),
                json!({ "taskId": id, "_meta": meta }),
            ),
            (
                "tools/call",
                "greet".to_owned(),
                json!({ "name": "slow_compute", "arguments": { "seconds": 1 }, "_meta": meta }),
            ),
        ] {
            let body = json!({ "jsonrpc": "2.0", "id": 9, "method": method, "params": params });
            let headers = [("mcp-method", method.to_owned()), ("mcp-name", name)];
            let reply = mcp.send(&headers, &body).await;
            assert_eq!(reply.status, 400, "{method}: {}", reply.body);
            assert_eq!(reply.error_code(), Some(-32020), "{method}: {}", reply.body);
            assert_eq!(reply.body["id"], 9);
        }
        // The refused cancel did not happen.
        assert_eq!(mcp.get_task(&id).await.result()["status"], "working");
    })
    .await;
}

#[tokio::test]
async fn listen_streams_the_full_task_state_tagged_with_the_subscription_id() {
    with_fixtures(async |_, _, mcp| {
        let id = mcp
            .start_task("confirm_delete", json!({ "filename": "b.txt" }))
            .await;

        let mut listen = mcp.listen("listen-1", &[&id]).await;
        let ack = listen.next().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "listen-1"
        );

        let asking = listen.wait_status(&id, "input_required").await;
        assert_same_state(&asking, &mcp.get_task(&id).await.result().clone());
        assert!(asking["params"]["inputRequests"]["confirm-1"].is_object());

        mcp.update_task(&id, json!({ "confirm-1": { "action": "decline" } }))
            .await
            .result();
        let done = listen.wait_status(&id, "completed").await;
        assert_eq!(
            done["params"]["result"]["content"][0]["text"],
            "Kept b.txt: deletion not confirmed (action: \"decline\")"
        );
        assert_same_state(&done, &mcp.get_task(&id).await.result().clone());
    })
    .await;
}

/// A `notifications/tasks` message carries exactly what `tasks/get` answers (minus the result
/// envelope), plus the subscription id.
fn assert_same_state(notification: &Value, got: &Value) {
    let mut params = notification["params"].clone();
    let meta = params
        .as_object_mut()
        .and_then(|p| p.remove("_meta"))
        .expect("_meta on the notification");
    assert!(meta["io.modelcontextprotocol/subscriptionId"].is_string());
    let mut got = got.clone();
    if let Some(got) = got.as_object_mut() {
        got.remove("_meta");
        got.remove("resultType");
    }
    assert_eq!(params, got);
}
