//! Invalid `McpTask` objects are refused with the reason; a terminal task's status and every
//! task's spec are immutable; the wire fixtures are objects the API server accepts.

use mcp_task_operator_crds::wire::FIXTURE_CASES;

use super::*;

#[tokio::test]
async fn invalid_tasks_are_refused_with_the_reason() {
    let specs: [Edit; 4] = [
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
            assert_edits_refused(&tasks, task_json, "spec", &specs).await;
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
    // Every stored state but `new`, which has no status to write.
    let cases = &FIXTURE_CASES[1..];
    with_temp_ns("crds-fixtures", |client: Client, ns: String| async move {
        ensure_crds(&client).await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        for (i, case) in cases.iter().enumerate() {
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
