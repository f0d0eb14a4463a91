//! The tool container contract (v1) end to end: the real operator binary, real Jobs and pods of
//! locally built tool images (the sh example tools, inline busybox scripts and a Rust tool),
//! asserting each task's final status, message, result or error, and its Events.

mod common;

use common::{
    accept_confirm, error_detail, new_task, start_operator, start_operator_with_conformance_tools,
    task_error, wait_failed,
};
use kube::ResourceExt;
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_harness::operator::{
    ANSWERED_ONCE, RUST_TOOL_IMAGE, TaskRecorder, answer, apply_example_tools, create_task,
    create_tool, ensure_rust_tool_image, events_for, failure_reason, result_is_error, result_text,
    shell_tool, status_message, tool, wait_completed, wait_status, wait_task_event, wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

fn reasons(events: &[mcp_task_operator_harness::operator::SeenEvent]) -> Vec<&str> {
    events.iter().map(|e| e.reason.as_str()).collect()
}

#[tokio::test]
async fn a_result_message_completes_the_task_with_that_result() {
    with_temp_ns("op-result", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let args = json!({"seconds": 1, "label": "quick"});
        let task = create_task(&client, &ns, "slow_compute", args).await;
        let name = task.metadata.name.clone().expect("name");

        let done = wait_terminal(&client, &ns, &name).await;
        let status = done.status.clone().expect("status");
        assert_eq!(status.status, TaskStatus::Completed, "{status:?}");
        assert_eq!(result_text(&done), "Computed quick in 1 s");
        assert!(!result_is_error(&done));
        assert_eq!(
            status.result.as_ref().expect("result").to_value()["structuredContent"],
            json!({"label": "quick", "seconds": 1})
        );
        assert_eq!(status.job_name.as_deref(), Some(name.as_str()));
        assert!(status.created_at.is_some() && status.last_updated_at.is_some());
        assert!(
            status.expires_at.is_some(),
            "a one-hour TTL shows expiresAt"
        );

        let events = wait_task_event(&client, &ns, &name, "Completed").await;
        let reasons = reasons(&events);
        assert!(reasons.contains(&"JobCreated"), "{events:#?}");
        assert!(reasons.contains(&"Working"), "{events:#?}");
        assert!(events.iter().all(|e| e.type_ == "Normal"), "{events:#?}");
    })
    .await;
}

#[tokio::test]
async fn a_rust_tool_reports_status_lines_asks_for_input_and_returns_its_result() {
    ensure_rust_tool_image(env!("CARGO_BIN_EXE_rust-tool"));
    with_temp_ns("op-rust", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        create_tool(
            &client,
            &ns,
            &tool("rust-tool", RUST_TOOL_IMAGE, &[], json!({}), json!({})),
        )
        .await;
        let recorder = TaskRecorder::start(&client, &ns).await;
        let args = json!({"steps": 4, "delayMs": 1500, "ask": "go-1"});
        let task = create_task(&client, &ns, "rust-tool", args).await;
        let name = task.metadata.name.clone().expect("name");

        let waiting = wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        let requests = waiting
            .status
            .as_ref()
            .and_then(|s| s.input_requests.clone())
            .expect("input requests");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["go-1"]);
        assert_eq!(requests["go-1"]["method"], "elicitation/create");
        assert!(
            status_message(&waiting).starts_with("step 4 of 4 at "),
            "{waiting:?}"
        );

        let response = json!({"action": "accept", "content": {"confirm": true}});
        answer(&client, &ns, &name, json!({"go-1": response})).await;
        let done = wait_completed(&client, &ns, &name).await;
        assert_eq!(result_text(&done), "rust-tool did 4 steps");
        let result = done.status.as_ref().and_then(|s| s.result.clone());
        let structured = &result.expect("result").to_value()["structuredContent"];
        assert_eq!(
            structured["answer"], response,
            "the container saw the answer"
        );
        assert_eq!(structured["taskId"], name.as_str(), "MCP_TASK_ID");

        // Status lines 1.5 s apart pass the 1 s coalescing: more than one reaches the task.
        let messages: Vec<String> = recorder
            .of(&name)
            .into_iter()
            .filter_map(|t| t.message)
            .filter(|m| m.starts_with("step "))
            .collect();
        assert!(messages.len() >= 2, "{messages:?}");
        recorder.assert_statuses(&name, &ANSWERED_ONCE).await;
        let events = wait_task_event(&client, &ns, &name, "Completed").await;
        let reasons = reasons(&events);
        for reason in ["JobCreated", "Working", "InputRequired", "InputReceived"] {
            assert!(reasons.contains(&reason), "{reason}: {events:#?}");
        }
    })
    .await;
}

#[tokio::test]
async fn input_answered_through_the_spec_reaches_the_container_and_the_task_resumes() {
    with_temp_ns("op-input", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let recorder = TaskRecorder::start(&client, &ns).await;
        let name = create_task(&client, &ns, "confirm_delete", json!({"filename": "x.txt"}))
            .await
            .name_any();

        let waiting = wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        let status = waiting.status.clone().expect("status");
        let request = &status.input_requests.as_ref().expect("requests")["confirm-1"];
        assert_eq!(
            request["params"]["message"],
            "Delete x.txt? This cannot be undone."
        );
        accept_confirm(&client, &ns, &name).await;
        let done = wait_completed(&client, &ns, &name).await;
        assert_eq!(result_text(&done), "Deleted x.txt");
        recorder.assert_statuses(&name, &ANSWERED_ONCE).await;
        let events = wait_task_event(&client, &ns, &name, "Completed").await;
        assert!(reasons(&events).contains(&"InputReceived"), "{events:#?}");
    })
    .await;
}

#[tokio::test]
async fn plain_output_and_exit_zero_complete_with_the_output_as_text() {
    with_temp_ns("op-plain", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        apply_example_tools(&client, &ns, "examples/wrap-cli/mcptool.yaml").await;
        let name = create_task(&client, &ns, "text_stats", json!({"text": "hello world"}))
            .await
            .name_any();

        let done = wait_completed(&client, &ns, &name).await;
        assert!(!result_is_error(&done));
        let text = result_text(&done);
        assert!(
            text.contains("lines, words, bytes:        0         2        11"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "sha256: b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
            ),
            "{text}"
        );
        wait_task_event(&client, &ns, &name, "Completed").await;
    })
    .await;
}

#[tokio::test]
async fn a_non_zero_exit_completes_with_is_error_and_the_output_tail() {
    with_temp_ns("op-exit", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        // About 90 KB of output, more than the 48 KiB tail kept.
        let script = r#"i=0
while [ $i -lt 2000 ]; do echo "line $i padding padding padding padding"; i=$((i+1)); done
echo "the very last line"
exit 3"#;
        create_tool(&client, &ns, &shell_tool("noisy-exit", script, json!({}))).await;
        let failing = create_task(&client, &ns, "failing_job", json!({})).await;
        let noisy = create_task(&client, &ns, "noisy-exit", json!({})).await;
        let (failing, noisy) = (
            failing.metadata.name.clone().expect("name"),
            noisy.metadata.name.clone().expect("name"),
        );

        let done = wait_completed(&client, &ns, &failing).await;
        assert!(result_is_error(&done));
        assert!(
            result_text(&done).ends_with("failing_job: the job failed on purpose (exit status 1)"),
            "{}",
            result_text(&done)
        );
        assert_eq!(status_message(&done), "The tool exited with code 1");
        let events = wait_task_event(&client, &ns, &failing, "CompletedWithError").await;
        let event = events
            .iter()
            .find(|e| e.reason == "CompletedWithError")
            .expect("event");
        assert_eq!(event.type_, "Warning");

        let done = wait_terminal(&client, &ns, &noisy).await;
        assert!(result_is_error(&done), "{done:?}");
        assert_eq!(status_message(&done), "The tool exited with code 3");
        let text = result_text(&done);
        assert!(text.ends_with("line 1999 padding padding padding padding\nthe very last line"));
        assert!(
            text.starts_with("[… ") && !text.contains("line 0 padding"),
            "only the tail: {}",
            &text[..200]
        );
        assert!(text.len() <= 48 * 1024 + 100, "{}", text.len());
    })
    .await;
}

#[tokio::test]
async fn an_error_message_fails_the_task_with_that_error() {
    with_temp_ns("op-protoerr", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let name = new_task(&client, &ns, "protocol_error_job").await;

        let done = wait_failed(&client, &ns, &name).await;
        let error = task_error(&done);
        assert_eq!(error.code, -32603);
        assert_eq!(
            error.message,
            "protocol_error_job: internal error raised on purpose"
        );
        assert_eq!(
            status_message(&done),
            "The tool reported an error: protocol_error_job: internal error raised on purpose"
        );
        assert!(done.status.as_ref().is_some_and(|s| s.result.is_none()));
        let events = wait_task_event(&client, &ns, &name, "Failed").await;
        let failed = events.iter().find(|e| e.reason == "Failed").expect("event");
        assert_eq!(failed.type_, "Warning");
        assert!(failed.message.contains("internal error raised on purpose"));
    })
    .await;
}

#[tokio::test]
async fn a_result_over_the_size_bound_fails_with_result_too_large() {
    with_temp_ns("op-toolarge", |client, ns| async move {
        let _operator = start_operator(&client, &ns, &[]).await;
        // One 600 000-byte result line: under the 1 MiB line bound, over the 512 KiB result one.
        let script = r#"printf '{"mcp":"result","result":{"content":[{"type":"text","text":"'
head -c 600000 /dev/zero | tr '\0' a
printf '"}]}}\n'
sleep 2"#;
        create_tool(&client, &ns, &shell_tool("big-result", script, json!({}))).await;
        let name = new_task(&client, &ns, "big-result").await;

        let done = wait_failed(&client, &ns, &name).await;
        assert_eq!(failure_reason(&done), "ResultTooLarge");
        assert_eq!(task_error(&done).code, -32603);
        let detail = error_detail(&done);
        assert!(detail.contains("524288"), "{detail}");
        wait_task_event(&client, &ns, &name, "Failed").await;
    })
    .await;
}

#[tokio::test]
async fn garbage_long_and_malformed_lines_raise_capped_warnings_and_the_task_still_completes() {
    with_temp_ns("op-garbage", |client, ns| async move {
        let mut operator = start_operator(&client, &ns, &[]).await;
        let script = r#"echo '{"mcp":"status","message":'
echo '{"mcp":"bogus"}'
echo '{"mcp":"result","result":"not an object"}'
printf '\377\376 not utf-8\n'
head -c 2000000 /dev/zero | tr '\0' x; echo
i=0; while [ $i -lt 20 ]; do echo "{\"mcp\": broken $i"; i=$((i+1)); done
head -c 300000 /dev/urandom
echo
echo '{"mcp":"status","message":"still here"}'
echo '{"mcp":"result","result":{"content":[{"type":"text","text":"survived"}]}}'"#;
        create_tool(&client, &ns, &shell_tool("garbage", script, json!({}))).await;
        let task = create_task(&client, &ns, "garbage", json!({})).await;
        let name = task.metadata.name.clone().expect("name");

        let done = wait_completed(&client, &ns, &name).await;
        assert_eq!(result_text(&done), "survived");
        assert_eq!(status_message(&done), "still here");

        wait_task_event(&client, &ns, &name, "Completed").await;
        // Warnings are published in the background; give the last ones a moment.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let events = events_for(&client, &ns, "McpTask", &name).await;
        let warnings: Vec<_> = events.iter().filter(|e| e.type_ == "Warning").collect();
        let reasons: Vec<&str> = warnings.iter().map(|e| e.reason.as_str()).collect();
        for reason in ["MalformedMessage", "OutputNotUtf8", "OutputLineCut"] {
            assert!(reasons.contains(&reason), "{reason}: {events:#?}");
        }
        // At most 10 output warnings per task are reported (logged and published; the Events
        // API folds repeats of a reason into a series), however much garbage there is; the
        // rest are only counted.
        let total: i32 = warnings.iter().map(|e| e.count).sum();
        assert!(total <= 10, "{events:#?}");
        let logged = operator.log().matches("tool output warning").count();
        assert_eq!(logged, 10, "{}", operator.log());
        assert!(operator.is_running(), "the operator survived");
        assert_eq!(operator.get("/healthz").await.map(|(c, _)| c), Some(200));
        let (_, metrics) = operator.get("/metrics").await.expect("metrics");
        let counted: f64 = metrics
            .lines()
            .filter(|l| l.starts_with("mcp_operator_tool_output_warnings_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!(counted > 10.0, "every warning is counted: {metrics}");
    })
    .await;
}
