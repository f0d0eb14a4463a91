//! What real MCP servers commonly need, given through an `McpServer`'s pod template and run by
//! the real operator through the bridge, each call a real Job: environment from Secrets (`env`
//! with `secretKeyRef`, `envFrom`), a writable work directory under a read-only root file
//! system, and a per-call time limit (`activeDeadlineSeconds`).

mod common;

use std::time::Duration;

use common::prepare_examples_blocking;
use kube::api::PostParams;
use kube::{Api, Client};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::mcp_servers::{
    RUST_MCP_SERVER_IMAGE, apply_ready, container_security, ensure_rust_mcp_server_image,
    pod_security, start_operator,
};
use mcp_task_operator_harness::operator::{create_task, failure_reason, result_text, wait_task};
use mcp_task_operator_harness::{ensure_crds, with_temp_ns};
use serde_json::{Value, json};
use tokio::task::block_in_place;

/// Longest one call may take here (pod start, server start, the call).
const CALL_WAIT: Duration = Duration::from_secs(180);

/// An McpServer of the server-everything image at the restricted level: `spec` adds to its spec
/// (the tools it offers), `container` to its one container.
fn everything_server(name: &str, spec: Value, container: Value) -> Value {
    let mut server = json!({
        "name": "server",
        "image": "localhost/server-everything:2026.8.31",
        "imagePullPolicy": "IfNotPresent",
        "command": ["node", "/app/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
        "securityContext": container_security(),
    });
    add_fields(&mut server, container);
    let mut server_spec = json!({"template": {"spec": {
        "automountServiceAccountToken": false,
        "securityContext": pod_security(),
        "containers": [server],
    }}});
    add_fields(&mut server_spec, spec);
    json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
        "metadata": {"name": name},
        "spec": server_spec,
    })
}

/// Adds the fields of the object `fields` to the object `to`.
fn add_fields(to: &mut Value, fields: Value) {
    let (Value::Object(to), Value::Object(fields)) = (to, fields) else {
        panic!("two JSON objects");
    };
    to.extend(fields);
}

async fn call(client: &Client, ns: &str, tool: &str, arguments: Value) -> McpTask {
    let task = create_task(client, ns, tool, arguments).await;
    let name = task.metadata.name.expect("a task name");
    wait_task(client, ns, &name, CALL_WAIT, McpTask::is_terminal).await
}

fn result(task: &McpTask) -> Value {
    task.status
        .as_ref()
        .and_then(|s| s.result.as_ref())
        .map(mcp_task_operator_crds::RawJson::to_value)
        .unwrap_or_else(|| panic!("no result: {:?}", task.status))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_reach_the_server_through_env_and_env_from() {
    with_temp_ns("mcp-server-env", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _operator = start_operator(&ns).await;
        let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), &ns);
        for (name, data) in [
            ("api-key", json!({"token": "s3cr3t-token-1234"})),
            ("more-settings", json!({"REGION": "eu-west-7", "FEATURE_FLAG": "on"})),
        ] {
            let secret = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name}, "stringData": data,
            }))
            .expect("a Secret");
            secrets.create(&PostParams::default(), &secret).await.expect("create the Secret");
        }
        let env = json!({
            "env": [{"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api-key", "key": "token"}}}],
            "envFrom": [{"secretRef": {"name": "more-settings"}}],
        });
        let tools = json!({"tools": [{"name": "get-env", "mcpName": "env_get"}]});
        apply_ready(&client, &ns, everything_server("everything-env", tools, env)).await;

        let done = call(&client, &ns, "env_get", json!({})).await;
        assert_eq!(done.task_status(), TaskStatus::Completed, "{:?}", done.status);
        let env: Value = serde_json::from_str(&result_text(&done)).expect("get-env prints JSON");
        assert_eq!(env["API_TOKEN"], "s3cr3t-token-1234", "{env}");
        assert_eq!(env["REGION"], "eu-west-7", "{env}");
        assert_eq!(env["FEATURE_FLAG"], "on", "{env}");
        // The call's own environment comes beside the template's.
        assert_eq!(env["MCP_BRIDGE_TOOL"], "get-env", "{env}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_writes_in_its_work_directory_under_a_read_only_root() {
    with_temp_ns("mcp-server-workdir", |client, ns| async move {
        ensure_crds(&client).await;
        block_in_place(|| ensure_rust_mcp_server_image(env!("CARGO_BIN_EXE_rust-mcp-server")));
        let _operator = start_operator(&ns).await;
        let server = |name: &str, prefix: &str, work_dir: bool| {
            let mut container = json!({
                "name": "server",
                "image": RUST_MCP_SERVER_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/usr/local/bin/rust-mcp-server"],
                "workingDir": "/work",
                "securityContext": container_security(),
            });
            let mut pod = json!({
                "automountServiceAccountToken": false,
                "securityContext": pod_security(),
            });
            if work_dir {
                container["volumeMounts"] = json!([{"name": "work", "mountPath": "/work"}]);
                pod["volumes"] = json!([{"name": "work", "emptyDir": {"sizeLimit": "16Mi"}}]);
            }
            pod["containers"] = json!([container]);
            json!({
                "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
                "metadata": {"name": name},
                "spec": {"namePrefix": prefix, "tools": [{"name": "write-file"}], "template": {"spec": pod}},
            })
        };
        apply_ready(&client, &ns, server("writer", "work_", true)).await;
        apply_ready(&client, &ns, server("read-only", "ro_", false)).await;

        let args = json!({"name": "notes.txt", "text": "kept for this call"});
        let done = call(&client, &ns, "work_write-file", args.clone()).await;
        assert_eq!(done.task_status(), TaskStatus::Completed, "{:?}", done.status);
        let written = result(&done);
        assert_eq!(written["structuredContent"], json!({"path": "/work/notes.txt", "text": "kept for this call"}), "{written}");

        // Without the emptyDir the same directory is the image's, read-only: a tool error.
        let done = call(&client, &ns, "ro_write-file", args).await;
        let refused = result(&done);
        assert_eq!(refused["isError"], true, "{refused}");
        let text = refused["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("cannot write /work/notes.txt") && text.contains("Read-only file system"), "{text}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_servers_deadline_fails_deadline_exceeded() {
    with_temp_ns("mcp-server-deadline", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _operator = start_operator(&ns).await;
        let spec = json!({
            "tools": [{"name": "trigger-long-running-operation", "mcpName": "slow"}],
            "activeDeadlineSeconds": 20,
        });
        apply_ready(
            &client,
            &ns,
            everything_server("everything-slow", spec, json!({})),
        )
        .await;
        let tools: Api<mcp_task_operator_crds::McpTool> = Api::namespaced(client.clone(), &ns);
        let tool = tools
            .get("everything-slow-trigger-long-running-operation")
            .await
            .expect("the offered McpTool");
        assert_eq!(tool.spec.active_deadline_seconds, Some(20));

        let done = call(&client, &ns, "slow", json!({"duration": 600, "steps": 600})).await;
        assert_eq!(done.task_status(), TaskStatus::Failed, "{:?}", done.status);
        assert_eq!(
            failure_reason(&done),
            "DeadlineExceeded",
            "{:?}",
            done.status
        );
    })
    .await;
}
