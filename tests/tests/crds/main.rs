//! The API against the real API server: the committed CRDs install, the examples that should be
//! accepted are, wrong objects are refused at apply time with a message that says what is wrong
//! (`tools.rs`, `tasks.rs`), and kubectl shows the printer columns and explains the schema.

mod tasks;
mod terminal;
mod tools;

use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use mcp_task_operator_crds::{McpTask, McpTool};
use mcp_task_operator_harness::{
    TEST_FIELD_MANAGER, ensure_crds, kubectl, kubectl_ok, with_temp_ns,
};
use serde_json::{Value, json};

/// Reads a YAML file of the repository as JSON.
fn repo_yaml(relative: &str) -> Value {
    let path = mcp_task_operator_harness::repo_dir().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

/// A valid McpTool named `name`.
fn tool_json(name: &str) -> Value {
    json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTool",
        "metadata": {"name": name},
        "spec": {
            "inputSchema": {"type": "object"},
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "tool", "image": "localhost/busybox:1.35"}],
            }},
        },
    })
}

/// A valid McpTask named `name` (status is written separately, through the status subresource).
fn task_json(name: &str) -> Value {
    json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "metadata": {"name": name},
        "spec": {"tool": "echo", "owner": "alice", "ttlMs": 60000, "arguments": {"text": "hi"}},
    })
}

/// Server-side applies `object` (a user's `kubectl apply --server-side`).
async fn apply<K>(api: &Api<K>, object: &Value) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = object["metadata"]["name"]
        .as_str()
        .expect("object has a name");
    api.patch(
        name,
        &PatchParams::apply(TEST_FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
}

/// One wrong edit of a valid object: what it is, the edit, and what the refusal must say.
type Edit = (&'static str, fn(&mut Value), &'static str);

/// Applies each of `edits` to its own `base` object (named `{prefix}-{i}`) and asserts that the
/// API server refuses it as the edit says.
async fn assert_edits_refused<K>(
    api: &Api<K>,
    base: fn(&str) -> Value,
    prefix: &str,
    edits: &[Edit],
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    for (i, (what, edit, expected)) in edits.iter().enumerate() {
        let mut object = base(&format!("{prefix}-{i}"));
        edit(&mut object);
        assert_refused(what, apply(api, &object).await, expected);
    }
}

/// Asserts that `result` is a 422 whose message contains `expected`.
fn assert_refused<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>, expected: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{what}: unexpected status {status:?}");
            assert!(
                status.message.contains(expected),
                "{what}: message {:?} does not contain {expected:?}",
                status.message
            );
        }
        other => panic!("{what}: expected a refusal containing {expected:?}, got {other:?}"),
    }
}

/// Sets (or adds) the key a JSON pointer names; its parent must exist.
fn set(object: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let parent = object
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"));
    match parent {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        Value::Array(items) => items[key.parse::<usize>().expect("array index")] = value,
        _ => panic!("{pointer} has a scalar parent"),
    }
}

/// Removes the key a JSON pointer names.
fn remove(object: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let parent = object
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"));
    parent
        .as_object_mut()
        .expect("parent is an object")
        .remove(key);
}

#[tokio::test]
async fn crds_install_with_names_short_names_and_category() {
    let client = mcp_task_operator_harness::client().await;
    ensure_crds(&client).await;
    for (resource, short) in [("mcptools", "mtool"), ("mcptasks", "mtask")] {
        let out = kubectl(&[
            "get",
            "crd",
            &format!("{resource}.mcptasks.io"),
            "-o",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let crd: Value = serde_json::from_slice(&out.stdout).expect("kubectl prints JSON");
        assert_eq!(crd["spec"]["names"]["shortNames"], json!([short]));
        assert_eq!(crd["spec"]["names"]["categories"], json!(["mcp"]));
        assert_eq!(crd["spec"]["scope"], "Namespaced");
    }
}

#[tokio::test]
async fn examples_are_accepted_and_the_invalid_one_is_refused() {
    with_temp_ns("crds-examples", |client: Client, ns: String| async move {
        ensure_crds(&client).await;
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        for example in ["minimal", "full"] {
            let object = repo_yaml(&format!("examples/tools/{example}.yaml"));
            let stored = apply(&tools, &object)
                .await
                .unwrap_or_else(|e| panic!("examples/tools/{example}.yaml refused: {e}"));
            assert_eq!(stored.spec.input_schema["type"], "object");
        }
        let full = tools
            .get("restock-report")
            .await
            .expect("full example stored");
        assert_eq!(full.mcp_name(), "restock_report");
        assert_eq!(full.spec.input_schema["required"], json!(["warehouse"]));
        let minimal = tools.get("echo").await.expect("minimal example stored");
        assert_eq!(
            minimal.spec.ttl_ms, 3_600_000,
            "the server applied the default"
        );

        let invalid = repo_yaml("examples/tools/invalid.yaml");
        let refused = apply(&tools, &invalid).await;
        let Err(kube::Error::Api(status)) = refused else {
            panic!("examples/tools/invalid.yaml was not refused: {refused:?}");
        };
        assert_eq!(status.code, 422, "{status:?}");
        for expected in [
            "spec.name: Invalid value: \"restock report\"",
            "spec.inputSchema.type: Unsupported value: \"string\"",
            "spec.taskSupport: Unsupported value: \"sometimes\"",
            "spec.ttlMs: Invalid value: -1",
        ] {
            assert!(
                status.message.contains(expected),
                "{:?} lacks {expected:?}",
                status.message
            );
        }
    })
    .await;
}

#[tokio::test]
async fn kubectl_shows_printer_columns_and_the_mcp_category() {
    with_temp_ns("crds-columns", |client: Client, ns: String| async move {
        ensure_crds(&client).await;
        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        apply(&tools, &tool_json("echo")).await.expect("tool accepted");
        apply(&tasks, &task_json("abc")).await.expect("task accepted");
        let status = json!({"status": {"status": "working", "statusMessage": "recounted 3 of 64 SKUs",
            "expiresAt": "2030-01-01T00:00:00Z"}});
        tasks
            .patch_status("abc", &PatchParams::default(), &Patch::Merge(status))
            .await
            .expect("status accepted");

        let tasks_table = kubectl_ok(&["get", "mcptasks", "-n", &ns]);
        assert_header(&tasks_table, &["NAME", "STATUS", "TOOL", "MESSAGE", "AGE", "EXPIRES"]);
        let row = tasks_table.lines().nth(1).expect("one task row");
        for cell in ["abc", "working", "echo", "recounted 3 of 64 SKUs", "2030-01-01T00:00:00Z"] {
            assert!(row.contains(cell), "row {row:?} lacks {cell:?}");
        }

        let tools_table = kubectl_ok(&["get", "mcptools", "-n", &ns]);
        assert_header(&tools_table, &["NAME", "MCP", "NAME", "IMAGE", "TASKS", "READY", "AGE"]);
        assert!(tools_table.lines().nth(1).expect("one tool row").contains("optional"));

        let both = kubectl_ok(&["get", "mcp", "-n", &ns, "-o", "name"]);
        assert!(both.contains("mcptool.mcptasks.io/echo"), "{both}");
        assert!(both.contains("mcptask.mcptasks.io/abc"), "{both}");
        let selected = kubectl_ok(&[
            "get", "mcptasks", "-n", &ns, "--field-selector", "spec.tool=echo", "-o", "name",
        ]);
        assert!(selected.contains("mcptask.mcptasks.io/abc"), "{selected}");
        let other = kubectl_ok(&[
            "get", "mcptasks", "-n", &ns, "--field-selector", "spec.tool=other", "-o", "name",
        ]);
        assert!(other.trim().is_empty(), "{other}");
        let short = kubectl_ok(&["get", "mtask", "-n", &ns, "-o", "name"]);
        assert!(short.contains("mcptask.mcptasks.io/abc"), "{short}");
    })
    .await;
}

#[tokio::test]
async fn kubectl_explain_documents_the_pod_template() {
    let client = mcp_task_operator_harness::client().await;
    ensure_crds(&client).await;
    let template = kubectl_ok(&["explain", "mcptool.spec.template"]);
    assert!(
        template.contains("Pod template of the Job that runs each call"),
        "{template}"
    );
    assert!(
        template.contains("spec\t<Object>") || template.contains("spec <Object>"),
        "{template}"
    );
    let containers = kubectl_ok(&["explain", "mcptool.spec.template.spec.containers.image"]);
    assert!(containers.contains("Container image name"), "{containers}");
    let status = kubectl_ok(&["explain", "mcptask.status.status"]);
    assert!(status.contains("terminal"), "{status}");
}

/// Asserts the first line of a kubectl table holds exactly `words`.
fn assert_header(table: &str, words: &[&str]) {
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, words, "table:\n{table}");
}
