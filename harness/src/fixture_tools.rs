//! The conformance suite's fixture tools (`docs/DESIGN.md#conformance-fixtures`) without the operator: their
//! `McpTool`s (`examples/conformance/`) applied and marked Ready, and the script the stand-in
//! status writer plays for them, as `examples/conformance/conformance-tools.sh` behaves under
//! the real operator.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, McpTool, RawJson};
use serde_json::{Value, json};

use crate::status_writer::{STATUS_FIELD_MANAGER, Script, StatusWriter, Step};

/// Marks every `McpTool` in `ns` Ready for its current generation, as the operator does for a
/// valid tool (see `McpTool::is_ready`).
pub async fn mark_tools_ready(client: &Client, ns: &str) {
    let api: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let tools = api.list(&Default::default()).await.expect("list McpTools");
    for tool in tools {
        let patch = json!({
            "apiVersion": "mcptasks.io/v1alpha1",
            "kind": "McpTool",
            "status": {
                "observedGeneration": tool.metadata.generation,
                "mcpName": tool.mcp_name(),
                "conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "reason": "Valid",
                    "message": "marked ready by the test stand-in for the operator",
                    "lastTransitionTime": Timestamp::now().to_string(),
                    "observedGeneration": tool.metadata.generation,
                }],
            },
        });
        api.patch_status(
            &tool.name_any(),
            &PatchParams::apply(STATUS_FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .unwrap_or_else(|e| panic!("cannot mark McpTool {} ready: {e}", tool.name_any()));
    }
}

/// The tasks scenarios' fixture tools, relative to the repository root.
pub const FIXTURE_MANIFEST: &str = "examples/conformance/mcptools.yaml";

/// The core scenarios' fixture tools ([`CORE_FIXTURE_TOOLS`], plus the RBAC objects of
/// `test_trigger_tool_change`), relative to the repository root.
pub const CORE_FIXTURE_MANIFEST: &str = "examples/conformance/core-mcptools.yaml";

/// The absolute path of `path`, given relative to the repository root.
pub fn repo_file(path: &str) -> std::path::PathBuf {
    crate::repo_dir().join(path)
}

/// Server-side applies every `McpTool` in the YAML file `path` (relative to the repository
/// root) into `ns`. Documents of other kinds (the RBAC objects a tool's pods need) are left
/// out: without the operator no pod runs.
pub async fn apply_tools(client: &Client, ns: &str, path: &str) {
    let path = repo_file(path);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let api: Api<McpTool> = Api::namespaced(client.clone(), ns);
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = <Value as serde::Deserialize>::deserialize(document).expect("valid YAML");
        if value.is_null() || value["kind"] != "McpTool" {
            continue;
        }
        apply_tool(&api, value).await;
    }
}

/// Server-side applies one `McpTool` given as JSON (apiVersion and kind may be left out).
pub async fn apply_tool(api: &Api<McpTool>, mut tool: Value) {
    tool["apiVersion"] = json!("mcptasks.io/v1alpha1");
    tool["kind"] = json!("McpTool");
    let name = tool["metadata"]["name"]
        .as_str()
        .expect("McpTool has a name")
        .to_owned();
    api.patch(
        &name,
        &PatchParams::apply(crate::TEST_FIELD_MANAGER).force(),
        &Patch::Apply(&tool),
    )
    .await
    .unwrap_or_else(|e| panic!("cannot apply McpTool {name}: {e}"));
}

/// One form elicitation asking for a single property.
pub fn elicitation(message: &str, property: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { property: { "type": kind } },
                "required": [property],
            },
        },
    })
}

fn argument(task: &McpTask, name: &str) -> Option<Value> {
    task.spec.arguments.as_ref()?.member(name)
}

fn answer(task: &McpTask, key: &str) -> Option<Value> {
    task.spec
        .input_responses
        .as_ref()?
        .get(key)
        .map(RawJson::to_value)
}

/// The conformance suite's fixture tools, as `examples/conformance/conformance-tools.sh`
/// behaves under the operator; any other tool stays `working` until cancelled.
pub fn fixture_script() -> Script {
    std::sync::Arc::new(|task, elapsed| {
        let cancel = task.is_cancel_requested();
        let text = |name: &str| {
            argument(task, name)
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        match task.spec.tool.as_str() {
            "greet" => Step::completed(&format!("Hello, {}!", text("name")), false),
            "slow_compute" => {
                let seconds = argument(task, "seconds")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0);
                if cancel {
                    Step::cancelled()
                } else if elapsed.as_secs_f64() < seconds {
                    Step::working(&format!("{}: computing", text("label")))
                } else {
                    let mut step = Step::completed(
                        &format!("Computed {} in {seconds} s", text("label")),
                        false,
                    );
                    step.result.as_mut().expect("result")["structuredContent"] =
                        json!({ "label": text("label"), "seconds": seconds });
                    step
                }
            }
            "failing_job" if cancel => Step::cancelled(),
            "failing_job" if elapsed < Duration::from_secs(1) => {
                Step::working("working on a job that is going to fail")
            }
            "failing_job" => Step::completed("failing_job: the job failed on purpose", true),
            "protocol_error_job" if cancel => Step::cancelled(),
            "protocol_error_job" if elapsed < Duration::from_millis(500) => {
                Step::working("about to fail")
            }
            "protocol_error_job" => Step::failed(
                -32603,
                "protocol_error_job: internal error raised on purpose",
            ),
            "confirm_delete" => {
                let file = text("filename");
                match answer(task, "confirm-1") {
                    _ if cancel => Step::cancelled(),
                    None => Step::input(BTreeMap::from([(
                        "confirm-1".to_owned(),
                        elicitation(&format!("Delete {file}?"), "confirm", "boolean"),
                    )])),
                    Some(a) if a["action"] == "accept" && a["content"]["confirm"] == true => {
                        Step::completed(&format!("Deleted {file}"), false)
                    }
                    Some(a) => Step::completed(
                        &format!(
                            "Kept {file}: deletion not confirmed (action: {})",
                            a["action"]
                        ),
                        false,
                    ),
                }
            }
            "multi_input" => match (answer(task, "name-1"), answer(task, "confirm-1")) {
                _ if cancel => Step::cancelled(),
                (Some(name), Some(confirm)) => Step::completed(
                    &format!(
                        "Hello, {}! Go on: {}.",
                        name["content"]["name"].as_str().unwrap_or("stranger"),
                        confirm["content"]["confirm"] == true
                    ),
                    false,
                ),
                _ => Step::input(BTreeMap::from([
                    (
                        "name-1".to_owned(),
                        elicitation("What is your name?", "name", "string"),
                    ),
                    (
                        "confirm-1".to_owned(),
                        elicitation("Shall I go on?", "confirm", "boolean"),
                    ),
                ])),
            },
            "test_tool_with_task" => {
                let name = user_name(task, "anonymous");
                if cancel {
                    Step::cancelled()
                } else if elapsed < Duration::from_secs(1) {
                    Step::working(&format!("greeting {name}"))
                } else {
                    Step::completed(&format!("Hello, {name}! The task finished for you."), false)
                }
            }
            name if CORE_FIXTURE_TOOLS.contains(&name) => core_fixture_step(task, cancel),
            _ if cancel => Step::cancelled(),
            _ => Step::working("running"),
        }
    })
}

/// The name the caller gave in the `user_name` input response the task started with, else
/// `default`.
fn user_name(task: &McpTask, default: &str) -> String {
    task.spec
        .start_input_responses
        .as_ref()
        .and_then(|r| r.get("user_name"))
        .and_then(|r| r.to_value()["content"]["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| default.to_owned())
}

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file holding one silent 8 kHz sample.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==";

/// What the core fixture tools' containers print as their result
/// (`examples/conformance/conformance-tools.sh`): each one finishes at once with the
/// `CallToolResult` the suite's scenario names.
fn core_fixture_step(task: &McpTask, cancel: bool) -> Step {
    if cancel {
        return Step::cancelled();
    }
    let completed = |content: Value, is_error: bool| Step {
        result: Some(json!({ "content": content, "isError": is_error })),
        ..Step::completed("", is_error)
    };
    let image = json!({ "type": "image", "data": PNG, "mimeType": "image/png" });
    match task.spec.tool.as_str() {
        "test_image_content" => completed(json!([image]), false),
        "test_audio_content" => completed(
            json!([{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }]),
            false,
        ),
        "test_embedded_resource" => completed(
            json!([{ "type": "resource", "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            }}]),
            false,
        ),
        "test_multiple_content_types" => completed(
            json!([
                { "type": "text", "text": "Multiple content types test:" },
                image,
                { "type": "resource", "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}",
                }},
            ]),
            false,
        ),
        "test_error_handling" => {
            Step::completed("This tool intentionally returns an error for testing", true)
        }
        "test_input_required_result_elicitation" => {
            let name = user_name(task, "stranger");
            Step::completed(&format!("Hello, {name}!"), false)
        }
        "test_custom_headers" => Step::completed(
            &format!(
                "Region: {}",
                argument(task, "region").unwrap_or(Value::Null)
            ),
            false,
        ),
        "test_logging_tool" => Step::completed("Logged to stdout only.", false),
        "test_trigger_tool_change" => Step::completed("The tool list changed.", false),
        _ => Step::completed("This is a simple text response for testing.", false),
    }
}

/// The MCP names of the fixture tools the suite's core (non-tasks) 2026-07-28 scenarios call,
/// as far as a container-tool server can serve them (docs/CONFORMANCE.md says which scenarios
/// need what we do not serve).
pub const CORE_FIXTURE_TOOLS: [&str; 12] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_logging_tool",
    "test_streaming_elicitation",
    "test_input_required_result_elicitation",
    "test_custom_headers",
    "json_schema_2020_12_tool",
    "test_trigger_tool_change",
];

/// Applies the core fixture tools ([`CORE_FIXTURE_MANIFEST`], the same `McpTool`s the
/// end-to-end test runs as real Jobs) to `ns` and marks every tool there Ready;
/// [`fixture_script`] plays them.
pub async fn apply_core_fixture_tools(client: &Client, ns: &str) {
    apply_tools(client, ns, CORE_FIXTURE_MANIFEST).await;
    mark_tools_ready(client, ns).await;
}

/// Prepares `ns` for a front end test: the CRDs, the conformance fixture tools
/// (`examples/conformance/mcptools.yaml`) marked Ready, and the stand-in playing
/// [`fixture_script`]. Keep the returned writer alive for the test.
pub async fn serve_fixtures(client: &Client, ns: &str) -> StatusWriter {
    crate::ensure_crds(client).await;
    apply_tools(client, ns, FIXTURE_MANIFEST).await;
    mark_tools_ready(client, ns).await;
    StatusWriter::start(client.clone(), ns, fixture_script())
}

/// Every fixture tool's MCP name.
pub const FIXTURE_TOOLS: [&str; 7] = [
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
];

/// Plays the side effect of `test_trigger_tool_change`, whose container (under the operator)
/// patches its own `McpTool`: for every new call, that description is rewritten (and the tool
/// marked Ready again), so `tools/list` changes. Stops when dropped.
pub struct ToolChangeTrigger(tokio::task::JoinHandle<()>);

impl Drop for ToolChangeTrigger {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts [`ToolChangeTrigger`] for `ns`.
pub fn trigger_tool_changes(client: &Client, ns: &str) -> ToolChangeTrigger {
    let client = client.clone();
    let ns = ns.to_owned();
    ToolChangeTrigger(tokio::spawn(async move {
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let mut seen = std::collections::BTreeSet::new();
        loop {
            let calls = tasks.list(&Default::default()).await.map(|l| l.items);
            for task in calls.unwrap_or_default() {
                if task.spec.tool != "test_trigger_tool_change" || !seen.insert(task.name_any()) {
                    continue;
                }
                let description = format!("Changes the tool list; called {} times", seen.len());
                let patch = json!({ "spec": { "description": description } });
                let name = "conformance-test-trigger-tool-change";
                if let Err(e) = tools
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    eprintln!("cannot change McpTool {name}: {e}");
                }
                mark_tools_ready(&client, &ns).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }))
}
