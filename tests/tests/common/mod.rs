//! Set-up, task assertions and chart rendering shared by the cluster test binaries.
#![allow(
    dead_code,
    reason = "each test binary compiles this module and uses a part of it"
)]

pub mod frontend;
pub mod helm;

use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskError, TaskStatus};
use mcp_task_operator_harness::ensure_crds;
use mcp_task_operator_harness::kueue::queues;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{
    Operator, SeenEvent, WAIT, answer, apply_example_tools, create_task, ensure_example_images,
    failure_reason, poll_task, status_message, wait_task_event, wait_terminal,
};
use serde_json::{Value, json};
use tokio::task::block_in_place;

/// The example tools of the conformance suite (`slow_compute`, `confirm_delete`, …).
pub const CONFORMANCE_TOOLS: &str = "examples/conformance/mcptools.yaml";

/// Applies the CRDs and imports the example tool images (once per test binary); no operator
/// runs yet.
pub async fn prepare_examples(client: &Client) {
    ensure_crds(client).await;
    ensure_example_images();
}

/// [`prepare_examples`] for a multi-threaded test: the image import runs in `block_in_place`.
pub async fn prepare_examples_blocking(client: &Client) {
    ensure_crds(client).await;
    block_in_place(ensure_example_images);
}

/// Applies the CRDs, imports the example tool images and starts the namespace's operator with
/// the settings `env`; returns once it leads.
pub async fn start_operator(client: &Client, ns: &str, env: &[(&str, &str)]) -> Operator {
    prepare_examples(client).await;
    start_leader_with(ns, env).await
}

/// [`Operator::start_leader`] with the settings `env`: the one operator of `ns`, once it leads.
pub async fn start_leader_with(ns: &str, env: &[(&str, &str)]) -> Operator {
    let operator = Operator::start(ns, &format!("{ns}-lease"), "operator-0", env).await;
    operator.wait_leading().await;
    operator
}

/// [`start_operator`] with no settings, then the [`CONFORMANCE_TOOLS`] created.
pub async fn start_operator_with_conformance_tools(client: &Client, ns: &str) -> Operator {
    let operator = start_operator(client, ns, &[]).await;
    apply_example_tools(client, ns, CONFORMANCE_TOOLS).await;
    operator
}

/// Applies the CRDs, imports the example tool images and creates the [`CONFORMANCE_TOOLS`]; no
/// operator runs yet.
pub async fn prepare_conformance_tools(client: &Client, ns: &str) {
    prepare_examples(client).await;
    apply_example_tools(client, ns, CONFORMANCE_TOOLS).await;
}

/// Answers the question of a `confirm_delete` task (`confirm-1`) with yes.
pub async fn accept_confirm(client: &Client, ns: &str, task: &str) {
    let yes = json!({"confirm-1": {"action": "accept", "content": {"confirm": true}}});
    answer(client, ns, task, yes).await;
}

/// The `spec.owner` the API server stores for task `id`.
pub async fn owner_of(client: &Client, ns: &str, id: &str) -> String {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    tasks.get(id).await.expect("task").spec.owner
}

/// Starts a `confirm_delete` task through `mcp`, waits until it asks for input and asserts it
/// is stored as `owner`'s; returns its ID.
pub async fn start_confirm_owned_by(
    client: &Client,
    ns: &str,
    mcp: &Mcp,
    filename: &str,
    owner: &str,
) -> String {
    let id = mcp
        .start_task("confirm_delete", json!({ "filename": filename }))
        .await;
    mcp.wait_status(&id, "input_required").await;
    assert_eq!(owner_of(client, ns, &id).await, owner);
    id
}

/// Creates a task of `tool` without arguments; returns its name.
pub async fn new_task(client: &Client, ns: &str, tool: &str) -> String {
    create_task(client, ns, tool, json!({})).await.name_any()
}

/// Creates a task of `tool` without arguments and polls until its statusMessage is `message`;
/// returns its name.
pub async fn start_task_until(client: &Client, ns: &str, tool: &str, message: &str) -> String {
    let name = new_task(client, ns, tool).await;
    poll_task(client, ns, &name, WAIT, |t| status_message(t) == message).await;
    name
}

/// Applies the CRDs, creates the Kueue queues of `ns` (no quota limits) and starts its
/// operator; returns once it leads.
pub async fn start_operator_with_queues(client: &Client, ns: &str) -> Operator {
    ensure_crds(client).await;
    queues(client, ns, json!({})).await;
    Operator::start_leader(ns).await
}

/// Creates the Secret `mcp-tokens` whose `tokens.csv` is `file`: the static tokens the chart's
/// front end reads with `frontend.auth.static.existingSecret=mcp-tokens`.
pub async fn static_tokens_secret(client: &Client, ns: &str, file: String) {
    let mut secret = Secret::default();
    secret.metadata.name = Some("mcp-tokens".to_owned());
    secret.string_data = Some([("tokens.csv".to_owned(), file)].into());
    Api::<Secret>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the token Secret");
}

/// The task's name.
pub fn name_of(task: &McpTask) -> String {
    task.metadata.name.clone().expect("name")
}

/// The JSON-RPC error of a failed task.
pub fn task_error(task: &McpTask) -> TaskError {
    task.status
        .as_ref()
        .and_then(|s| s.error.clone())
        .expect("error")
}

/// The `error.data.detail` of a failed task (empty if it has none).
pub fn error_detail(task: &McpTask) -> String {
    let error = task.status.as_ref().and_then(|s| s.error.clone());
    let data = error.and_then(|e| e.data).unwrap_or(Value::Null);
    data["detail"].as_str().unwrap_or_default().to_owned()
}

/// Waits until task `name` ends; asserts it failed with `reason` (code -32603, a
/// statusMessage, a Warning `Failed` Event) and prints how long it took since `started`.
pub async fn assert_fails(
    client: &Client,
    ns: &str,
    name: &str,
    reason: &str,
    started: std::time::Instant,
) -> McpTask {
    let done = wait_terminal(client, ns, name).await;
    eprintln!("{reason}: terminal {:?} after `started`", started.elapsed());
    assert_failed_as(client, ns, &done, reason).await;
    done
}

/// Asserts the task failed with `reason` (code -32603, a statusMessage) and waits for its
/// Warning `Failed` Event; returns the task's Events.
pub async fn assert_failed_as(
    client: &Client,
    ns: &str,
    task: &McpTask,
    reason: &str,
) -> Vec<SeenEvent> {
    assert_eq!(task.task_status(), TaskStatus::Failed, "{:?}", task.status);
    assert_eq!(failure_reason(task), reason, "{:?}", task.status);
    assert_eq!(task_error(task).code, -32603);
    assert!(!status_message(task).is_empty());
    let events = wait_task_event(client, ns, &name_of(task), "Failed").await;
    let failed = events.iter().find(|e| e.reason == "Failed").expect("event");
    assert_eq!(failed.type_, "Warning", "{events:#?}");
    events
}

/// Waits until the task is terminal and asserts it `failed` (its status printed otherwise).
pub async fn wait_failed(client: &Client, ns: &str, name: &str) -> McpTask {
    let done = wait_terminal(client, ns, name).await;
    assert_eq!(done.task_status(), TaskStatus::Failed, "{:?}", done.status);
    done
}

/// Asserts the task ended `cancelled` (its status printed otherwise).
pub fn assert_cancelled(task: &McpTask) {
    assert_eq!(
        task.task_status(),
        TaskStatus::Cancelled,
        "{:?}",
        task.status
    );
}

/// Waits until the task is terminal and asserts it `cancelled`.
pub async fn wait_cancelled(client: &Client, ns: &str, name: &str) -> McpTask {
    let done = wait_terminal(client, ns, name).await;
    assert_cancelled(&done);
    done
}
