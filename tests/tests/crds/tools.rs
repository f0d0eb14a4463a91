//! Invalid `McpTool` objects are refused at apply time with the reason.

use super::*;

#[tokio::test]
async fn invalid_tools_are_refused_with_the_reason() {
    let cases: [Edit; 11] = [
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
            assert_edits_refused(&tools, tool_json, "tool", &cases).await;
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
