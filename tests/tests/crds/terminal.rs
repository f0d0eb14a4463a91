//! What a client was told stays told: once a task is completed or failed, the API server
//! refuses any status write that changes its result or error (the McpTaskStatus transition
//! rules), whoever writes it; the operator's own repeat of the same status still passes. A
//! leader paused past its Lease that wakes with an old view is the writer this stops
//! (docs/RELIABILITY.md, "A frozen leader").

use super::*;

/// A server-side apply of `status` by the operator's field manager, as its status writes are.
async fn apply_status(tasks: &Api<McpTask>, name: &str, status: Value) -> kube::Result<McpTask> {
    let patch = json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "status": status,
    });
    tasks
        .patch_status(
            name,
            &PatchParams::apply("mcp-task-operator").force(),
            &Patch::Apply(&patch),
        )
        .await
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

#[tokio::test]
async fn a_terminal_tasks_result_and_error_never_change() {
    with_temp_ns("crds-terminal", |client: Client, ns: String| async move {
        ensure_crds(&client).await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        for name in ["done", "broken"] {
            apply(&tasks, &task_json(name))
                .await
                .expect("task accepted");
        }

        let completed = json!({"status": "completed", "result": text_result("42")});
        apply_status(&tasks, "done", completed.clone())
            .await
            .expect("working -> completed");
        apply_status(&tasks, "done", completed.clone())
            .await
            .expect("the same result again (a repeated reconcile) is no change");
        let mut later = completed.clone();
        later["statusMessage"] = json!("done at last");
        apply_status(&tasks, "done", later)
            .await
            .expect("fields besides the result may still change");
        for (what, status) in [
            (
                "another result text",
                json!({"status": "completed", "result": text_result("41")}),
            ),
            (
                "the result turned into a tool error",
                json!({"status": "completed", "result":
                    {"content": [{"type": "text", "text": "42"}], "isError": true}}),
            ),
            (
                "a field added to the result",
                json!({"status": "completed", "result":
                    {"content": [{"type": "text", "text": "42"}], "isError": false,
                     "structuredContent": {"answer": 41}}}),
            ),
        ] {
            assert_refused(
                what,
                apply_status(&tasks, "done", status).await,
                "a terminal task's result never changes",
            );
        }
        let done = tasks.get("done").await.expect("task");
        assert_eq!(
            serde_json::to_value(&done.status.expect("status").result).unwrap(),
            text_result("42"),
            "the result as first written"
        );

        let failed = json!({"status": "failed", "error":
            {"code": -32603, "message": "the tool's pod failed", "data": {"reason": "PodFailed"}}});
        apply_status(&tasks, "broken", failed.clone())
            .await
            .expect("working -> failed");
        apply_status(&tasks, "broken", failed)
            .await
            .expect("the same error again is no change");
        for (what, error) in [
            (
                "another message",
                json!({"code": -32603, "message": "all is well", "data": {"reason": "PodFailed"}}),
            ),
            (
                "another code",
                json!({"code": -32602, "message": "the tool's pod failed",
                       "data": {"reason": "PodFailed"}}),
            ),
        ] {
            assert_refused(
                what,
                apply_status(
                    &tasks,
                    "broken",
                    json!({"status": "failed", "error": error}),
                )
                .await,
                "a terminal task's error never changes",
            );
        }
    })
    .await;
}
