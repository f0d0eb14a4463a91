//! The operator and the front end together, with real Jobs, on the protocol rules where the
//! two meet: input a client cannot be asked, the immediate-result wait of `immediateResultMs`,
//! and the bounds of `pollIntervalMs`.

mod common;

use std::time::Duration;

use common::start_operator;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_harness::frontend::Frontend;
use mcp_task_operator_harness::mcp_client::{Mcp, Reply, TASKS_EXTENSION, WAIT, framed};
use mcp_task_operator_harness::operator::{Operator, create_tool, shell_tool};
use mcp_task_operator_harness::{TEST_FIELD_MANAGER, ensure_crds, with_temp_ns};
use serde_json::{Value, json};

/// An operator leading in `ns` and a front end serving it.
async fn setup(client: &Client, ns: &str) -> (Operator, Frontend, Mcp) {
    let operator = start_operator(client, ns, &[]).await;
    let frontend = Frontend::start(ns, &[]).await;
    let mcp = Mcp::new(&frontend.url);
    (operator, frontend, mcp)
}

/// Sends `method` as a client that declared the tasks extension and nothing else.
async fn tasks_only(mcp: &Mcp, method: &str, params: Value) -> Reply {
    let (headers, mut body) = framed(method, params, true);
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "extensions": { TASKS_EXTENSION: {} } });
    mcp.send(&headers, &body).await
}

/// Asks one form elicitation, waits for its answer in the contract file, then completes with
/// the answer's error code: the tool "goes on without it".
const ASKS_AND_GOES_ON: &str = r#"echo '{"mcp":"input","requests":{"go-1":{"method":"elicitation/create","params":{"mode":"form","message":"Go on?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}}'
while ! grep -q '"go-1"' /var/run/mcp/input-responses; do sleep 0.2; done
code=$(sed -n 's/.*"code":\(-*[0-9]*\).*/\1/p' /var/run/mcp/input-responses)
echo "{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"went on without it: $code\"}]}}""#;

#[tokio::test]
async fn a_tasks_only_client_is_never_asked_for_elicitation_and_the_tool_is_told_at_once() {
    with_temp_ns("gaps-undeclared", |client, ns| async move {
        let (_operator, _frontend, mcp) = setup(&client, &ns).await;
        create_tool(
            &client,
            &ns,
            &shell_tool("asks", ASKS_AND_GOES_ON, json!({})),
        )
        .await;
        mcp.wait_for_tools(&["asks"]).await;

        let created =
            tasks_only(&mcp, "tools/call", json!({"name": "asks", "arguments": {}})).await;
        assert_eq!(created.result()["resultType"], "task", "{}", created.body);
        let id = created.result()["taskId"]
            .as_str()
            .expect("taskId")
            .to_owned();
        let deadline = tokio::time::Instant::now() + WAIT;
        let done = loop {
            let seen = tasks_only(&mcp, "tasks/get", json!({"taskId": id})).await;
            let task = seen.result().clone();
            // Never a request of an undeclared kind, and never input_required with nothing
            // to answer: the client could only wait for the TTL.
            assert_ne!(task["status"], "input_required", "{task}");
            assert!(task.get("inputRequests").is_none(), "{task}");
            if task["status"] == "completed" || task["status"] == "failed" {
                break task;
            }
            assert!(tokio::time::Instant::now() < deadline, "still {task}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(
            done["result"]["content"][0]["text"], "went on without it: -32021",
            "{done}"
        );
    })
    .await;
}

/// Completes at once.
const QUICK: &str =
    r#"echo '{"mcp":"result","result":{"content":[{"type":"text","text":"quick"}]}}'"#;
/// Runs until cancelled.
const SLOW: &str = r#"while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;

/// Server-side applies `tool` until it is stored with `immediateResultMs`: suites run at the
/// same time on the shared cluster apply their own copy of the CRDs, and a copy from before
/// the field existed prunes it.
async fn apply_with_field(client: &Client, tools: &Api<McpTool>, tool: &McpTool, ms: i64) {
    let name = tool.metadata.name.clone().expect("name");
    for _ in 0..10 {
        ensure_crds(client).await;
        tools
            .patch(
                &name,
                &PatchParams::apply(TEST_FIELD_MANAGER).force(),
                &Patch::Apply(tool),
            )
            .await
            .expect("apply tool");
        if tools
            .get(&name)
            .await
            .expect("tool")
            .spec
            .immediate_result_ms
            == ms
        {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("McpTool {name} keeps losing immediateResultMs: another CRD copy is applied");
}

#[tokio::test]
async fn immediate_result_answers_a_quick_task_plainly_and_a_slow_one_with_its_handle() {
    with_temp_ns("gaps-immediate", |client, ns| async move {
        let (_operator, _frontend, mcp) = setup(&client, &ns).await;
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        for (name, script, ms) in [("quick", QUICK, 30_000), ("slow", SLOW, 1_000)] {
            let tool = shell_tool(name, script, json!({"immediateResultMs": ms}));
            apply_with_field(&client, &tools, &tool, ms).await;
        }
        mcp.wait_for_tools(&["quick", "slow"]).await;

        let plain = mcp.call_tool("quick", json!({})).await;
        let result = plain.result();
        assert_eq!(result["resultType"], "complete", "{}", plain.body);
        assert_eq!(result["content"][0]["text"], "quick");
        assert!(result.get("taskId").is_none(), "{result}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-task-operator"
        );

        let handle = mcp.call_tool("slow", json!({})).await;
        let result = handle.result();
        assert_eq!(result["resultType"], "task", "{}", handle.body);
        assert_eq!(result["status"], "working");
        let id = result["taskId"].as_str().expect("taskId");
        assert_eq!(mcp.get_task(id).await.result()["status"], "working");
        mcp.cancel_task(id).await;
        mcp.wait_status(id, "cancelled").await;
    })
    .await;
}

#[tokio::test]
async fn poll_intervals_outside_the_bounds_are_refused_with_the_limit() {
    with_temp_ns("gaps-poll", |client, ns| async move {
        ensure_crds(&client).await;
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let cases = [
            (99, "spec.pollIntervalMs: Invalid value: 99: spec.pollIntervalMs in body should be greater than or equal to 100"),
            (600_001, "spec.pollIntervalMs: Invalid value: 600001: spec.pollIntervalMs in body should be less than or equal to 600000"),
        ];
        for (ms, expected) in cases {
            let tool = shell_tool("poll", "true", json!({"pollIntervalMs": ms}));
            let refused = tools.create(&PostParams::default(), &tool).await;
            let Err(kube::Error::Api(status)) = refused else {
                panic!("pollIntervalMs {ms} was not refused: {refused:?}");
            };
            assert_eq!(status.code, 422, "{status:?}");
            assert!(status.message.contains(expected), "{:?}", status.message);
        }
        let edge = shell_tool("poll", "true", json!({"pollIntervalMs": 100}));
        tools
            .create(&PostParams::default(), &edge)
            .await
            .expect("the floor itself is allowed");
        let immediate = shell_tool("wait", "true", json!({"immediateResultMs": 30_001}));
        let Err(kube::Error::Api(status)) =
            tools.create(&PostParams::default(), &immediate).await
        else {
            panic!("immediateResultMs 30001 was not refused");
        };
        assert!(
            status.message.contains("spec.immediateResultMs: Invalid value: 30001"),
            "{:?}",
            status.message
        );
    })
    .await;
}
