//! The API against the real API server: the committed CRDs install, the examples that should be
//! accepted are, wrong objects are refused at apply time with a message that says what is wrong,
//! and kubectl shows the printer columns and explains the schema.

use std::path::Path;

use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use mcp_task_operator_crds::{McpTask, McpTool};
use mcp_task_operator_tests::{TEST_FIELD_MANAGER, ensure_crds, kubectl, kubectl_ok, with_temp_ns};
use serde_json::{Value, json};

/// Reads a YAML file of the repository as JSON.
fn repo_yaml(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
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
    let client = mcp_task_operator_tests::client().await;
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
async fn invalid_tools_are_refused_with_the_reason() {
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 11] = [
        (
            "bad taskSupport",
            |t| set(t, "/spec/taskSupport", json!("always")),
            "spec.taskSupport: Unsupported value: \"always\"",
        ),
        (
            "negative ttlMs",
            |t| set(t, "/spec/ttlMs", json!(-5)),
            "spec.ttlMs: Invalid value: -5",
        ),
        (
            "zero pollIntervalMs",
            |t| set(t, "/spec/pollIntervalMs", json!(0)),
            "spec.pollIntervalMs: Invalid value: 0",
        ),
        (
            "syncTimeoutSeconds too long",
            |t| set(t, "/spec/syncTimeoutSeconds", json!(86400)),
            "spec.syncTimeoutSeconds: Invalid value: 86400",
        ),
        (
            "missing image",
            |t| remove(t, "/spec/template/spec/containers/0/image"),
            "every container in template.spec.containers needs an image",
        ),
        (
            "two containers, none named tool",
            |t| {
                let c = json!({"name": "a", "image": "localhost/busybox:1.35"});
                let d = json!({"name": "b", "image": "localhost/busybox:1.35"});
                set(t, "/spec/template/spec/containers", json!([c, d]));
            },
            "a template with more than one container must have one named 'tool'",
        ),
        (
            "template without a pod spec",
            |t| {
                set(
                    t,
                    "/spec/template",
                    json!({"metadata": {"labels": {"a": "b"}}}),
                )
            },
            "template.spec is required",
        ),
        (
            "missing inputSchema",
            |t| remove(t, "/spec/inputSchema"),
            "spec.inputSchema: Required value",
        ),
        (
            "inputSchema not an object schema",
            |t| set(t, "/spec/inputSchema", json!({"type": "array"})),
            "spec.inputSchema.type: Unsupported value: \"array\"",
        ),
        (
            "MCP name with a space",
            |t| set(t, "/spec/name", json!("restock report")),
            "spec.name: Invalid value: \"restock report\"",
        ),
        (
            "url elicitation without url",
            |t| {
                let question = json!({"method": "elicitation/create",
                    "params": {"mode": "url", "message": "Sign in"}});
                set(t, "/spec/startInputs", json!({"login": question}));
            },
            "a form elicitation needs requestedSchema and a url elicitation needs url",
        ),
    ];
    with_temp_ns(
        "crds-invalid-tools",
        |client: Client, ns: String| async move {
            ensure_crds(&client).await;
            let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
            for (i, (what, edit, expected)) in cases.into_iter().enumerate() {
                let mut tool = tool_json(&format!("tool-{i}"));
                edit(&mut tool);
                assert_refused(what, apply(&tools, &tool).await, expected);
            }
            // The base object itself is fine, so each refusal is down to its one edit.
            apply(&tools, &tool_json("base"))
                .await
                .expect("base tool accepted");
            let mut method = tool_json("sampling");
            let question = json!({"method": "sampling/createMessage", "params": {"message": "x"}});
            set(&mut method, "/spec/startInputs", json!({"q": question}));
            assert_refused(
                "start input method",
                apply(&tools, &method).await,
                "Unsupported value: \"sampling/createMessage\"",
            );
        },
    )
    .await;
}

#[tokio::test]
async fn invalid_tasks_are_refused_with_the_reason() {
    type Edit = fn(&mut Value);
    let specs: [(&str, Edit, &str); 4] = [
        (
            "negative ttlMs",
            |t| set(t, "/spec/ttlMs", json!(-1)),
            "spec.ttlMs: Invalid value: -1",
        ),
        (
            "missing owner",
            |t| remove(t, "/spec/owner"),
            "spec.owner: Required value",
        ),
        (
            "bad tool name",
            |t| set(t, "/spec/tool", json!("no/slashes")),
            "spec.tool: Invalid value: \"no/slashes\"",
        ),
        (
            "name longer than a Job name",
            |t| set(t, "/metadata/name", json!("a".repeat(64))),
            "metadata.name must be at most 63 characters",
        ),
    ];
    let statuses = [
        (
            "bad status enum",
            json!({"status": "done"}),
            "status.status: Unsupported value: \"done\"",
        ),
        (
            "completed without result",
            json!({"status": "completed"}),
            "status completed needs result",
        ),
        (
            "failed without error",
            json!({"status": "failed"}),
            "status failed needs error",
        ),
        (
            "input_required without requests",
            json!({"status": "input_required", "inputRequests": {}}),
            "status input_required needs at least one inputRequests entry",
        ),
        (
            "result while working",
            json!({"status": "working", "result": {"content": []}}),
            "result is only allowed with status completed",
        ),
        (
            "error while completed",
            json!({"status": "completed", "result": {"content": []},
                   "error": {"code": -32603, "message": "boom"}}),
            "error is only allowed with status failed",
        ),
        (
            "error without message",
            json!({"status": "failed", "error": {"code": -32603}}),
            "status.error.message: Required value",
        ),
    ];
    with_temp_ns(
        "crds-invalid-tasks",
        |client: Client, ns: String| async move {
            ensure_crds(&client).await;
            let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
            for (i, (what, edit, expected)) in specs.into_iter().enumerate() {
                let mut task = task_json(&format!("spec-{i}"));
                edit(&mut task);
                assert_refused(what, apply(&tasks, &task).await, expected);
            }
            apply(&tasks, &task_json("target"))
                .await
                .expect("base task accepted");
            for (what, status, expected) in statuses {
                let patch = Patch::Merge(json!({"status": status}));
                let result = tasks
                    .patch_status("target", &PatchParams::default(), &patch)
                    .await;
                assert_refused(what, result, expected);
            }
        },
    )
    .await;
}

#[tokio::test]
async fn terminal_status_and_spec_are_immutable_but_input_responses_change() {
    with_temp_ns(
        "crds-transitions",
        |client: Client, ns: String| async move {
            ensure_crds(&client).await;
            let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
            apply(&tasks, &task_json("t")).await.expect("task accepted");
            let status = |s: Value| Patch::Merge(json!({"status": s}));
            let pp = PatchParams::default();
            let question = json!({"method": "elicitation/create", "params": {"message": "ok?"}});
            tasks
                .patch_status(
                    "t",
                    &pp,
                    &status(json!({"status": "input_required",
                "inputRequests": {"q1": question}})),
                )
                .await
                .expect("working -> input_required");
            let answer =
                Patch::Merge(json!({"spec": {"inputResponses": {"q1": {"action": "accept"}}}}));
            tasks
                .patch("t", &pp, &answer)
                .await
                .expect("inputResponses may change");
            tasks
                .patch_status(
                    "t",
                    &pp,
                    &status(json!({"status": "working", "inputRequests": null})),
                )
                .await
                .expect("input_required -> working");
            tasks
                .patch_status("t", &pp, &status(json!({"status": "cancelled"})))
                .await
                .expect("working -> cancelled");
            let back = tasks
                .patch_status("t", &pp, &status(json!({"status": "working"})))
                .await;
            assert_refused(
                "terminal -> working",
                back,
                "a terminal status (completed, failed, cancelled) never changes",
            );
            for (what, spec, expected) in [
                ("tool", json!({"tool": "other"}), "spec.tool is immutable"),
                (
                    "owner",
                    json!({"owner": "mallory"}),
                    "spec.owner is immutable",
                ),
                ("ttlMs", json!({"ttlMs": 1}), "spec.ttlMs is immutable"),
                (
                    "ttlMs removed",
                    json!({"ttlMs": null}),
                    "spec.ttlMs is immutable",
                ),
                (
                    "pollIntervalMs",
                    json!({"pollIntervalMs": 5}),
                    "spec.pollIntervalMs is immutable",
                ),
                (
                    "arguments removed",
                    json!({"arguments": null}),
                    "spec.arguments is immutable",
                ),
            ] {
                let result = tasks
                    .patch("t", &pp, &Patch::Merge(json!({"spec": spec})))
                    .await;
                assert_refused(what, result, expected);
            }
        },
    )
    .await;
}

#[tokio::test]
async fn wire_fixtures_are_objects_the_api_server_accepts() {
    let cases = [
        "working",
        "input_required",
        "input_answered",
        "completed",
        "tool_error",
        "failed",
        "cancelled",
    ];
    with_temp_ns("crds-fixtures", |client: Client, ns: String| async move {
        ensure_crds(&client).await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        for (i, case) in cases.into_iter().enumerate() {
            let mut object = repo_yaml(&format!("crds/tests/fixtures/wire/{case}.yaml"));
            let name = format!("fixture-{i}");
            set(&mut object, "/metadata/name", json!(name));
            remove(&mut object, "/metadata/namespace");
            remove(&mut object, "/metadata/creationTimestamp");
            let status = object["status"].take();
            let expected = status["status"].clone();
            remove(&mut object, "/status");
            apply(&tasks, &object)
                .await
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            let patch = Patch::Merge(json!({"status": status}));
            let stored = tasks
                .patch_status(&name, &PatchParams::default(), &patch)
                .await
                .unwrap_or_else(|e| panic!("{case}: status refused: {e}"));
            let stored = stored.status.map(|s| s.status.as_str());
            assert_eq!(stored, expected.as_str(), "{case}");
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
    let client = mcp_task_operator_tests::client().await;
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
