//! One test per row of the contract's outcome table, plus input and cancel.

use serde_json::json;

use super::*;

const NOW: &str = "2026-08-01T12:01:00Z";

fn progress(stdout: &str) -> Progress {
    let mut p = Progress::default();
    p.push_bytes(stdout.as_bytes());
    p.finish();
    p
}

fn obs<'a>(workload: &'a Workload, progress: &'a Progress) -> Observation<'a> {
    Observation {
        workload,
        progress,
        answers: None,
        cancel_requested_at: None,
        cancel_grace: SignedDuration::from_secs(30),
        job_recorded: true,
        finished_at: None,
        now: NOW.parse().unwrap(),
    }
}

fn outcome(workload: Workload, stdout: &str) -> Outcome {
    decide(&obs(&workload, &progress(stdout))).outcome
}

fn completed(outcome: Outcome) -> (Option<String>, Value) {
    match outcome {
        Outcome::Completed { message, result } => (message, Value::Object(result)),
        other => panic!("expected completed, got {other:?}"),
    }
}

fn failed_reason(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Failed { error, .. } => error.data.as_ref().unwrap()["reason"]
            .as_str()
            .unwrap()
            .into(),
        other => panic!("expected failed, got {other:?}"),
    }
}

const EXIT_0: Workload = Workload::Exited { exit_code: 0 };
const RESULT_LINE: &str = r#"{"mcp":"result","result":{"content":[{"type":"text","text":"42"}],"structuredContent":{"n":42}}}"#;

#[test]
fn status_message_while_running_is_working_with_that_message() {
    let out = outcome(
        Workload::Running,
        "{\"mcp\":\"status\",\"message\":\"recounted 3 of 64 SKUs\"}\n",
    );
    assert_eq!(
        out,
        Outcome::Working {
            message: "recounted 3 of 64 SKUs".into()
        }
    );
    assert_eq!(
        outcome(Workload::Running, "log\n"),
        Outcome::Working {
            message: "Running".into()
        }
    );
}

#[test]
fn result_message_completes_with_that_result() {
    let (_, result) = completed(outcome(EXIT_0, &format!("working\n{RESULT_LINE}\n")));
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"n": 42},
               "resultType": "complete"})
    );
}

#[test]
fn result_message_wins_over_exit_code_and_pod_state() {
    for workload in [
        Workload::Running,
        Workload::Exited { exit_code: 1 },
        Workload::Failed {
            reason: FailureReason::OomKilled,
            detail: None,
        },
    ] {
        let (_, result) = completed(outcome(workload, RESULT_LINE));
        assert_eq!(result["content"][0]["text"], "42");
    }
}

#[test]
fn exit_0_without_result_completes_with_plain_output() {
    let (message, result) = completed(outcome(
        EXIT_0,
        "line 1\n{\"mcp\":\"status\",\"message\":\"done\"}\nline 2",
    ));
    assert_eq!(message.as_deref(), Some("done"));
    assert_eq!(
        result,
        json!({"resultType": "complete", "isError": false,
               "content": [{"type": "text", "text": "line 1\nline 2"}]})
    );
}

#[test]
fn non_zero_exit_completes_with_is_error_and_the_output_tail() {
    let (message, result) = completed(outcome(
        Workload::Exited { exit_code: 2 },
        "trying\nboom: disk full\n",
    ));
    assert_eq!(message.as_deref(), Some("The tool exited with code 2"));
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "trying\nboom: disk full");
    let (_, silent) = completed(outcome(Workload::Exited { exit_code: 9 }, ""));
    assert_eq!(silent["content"][0]["text"], "The tool exited with code 9");
}

#[test]
fn error_message_fails_with_that_error() {
    let out = outcome(
        Workload::Running,
        r#"{"mcp":"error","error":{"code":-32000,"message":"quota"}}"#,
    );
    assert_eq!(
        out,
        Outcome::Failed {
            message: "The tool reported an error: quota".into(),
            error: TaskError {
                code: -32000,
                message: "quota".into(),
                data: None
            },
        }
    );
}

#[test]
fn oversized_result_fails_saying_so() {
    let big = json!({"mcp": "result", "result": {"content": [{"type": "text", "text": "x".repeat(MAX_RESULT_BYTES)}]}});
    let out = outcome(EXIT_0, &big.to_string());
    assert_eq!(failed_reason(&out), "ResultTooLarge");
    let Outcome::Failed { message, error } = out else {
        unreachable!()
    };
    assert!(
        message.contains(&format!("at most {MAX_RESULT_BYTES} bytes")),
        "{message}"
    );
    assert_eq!(error.code, INTERNAL_ERROR);
}

#[test]
fn pod_level_failures_fail_with_their_reason() {
    let reasons = [
        (FailureReason::ImagePullFailed, "ImagePullFailed"),
        (FailureReason::OomKilled, "OOMKilled"),
        (FailureReason::DeadlineExceeded, "DeadlineExceeded"),
        (FailureReason::Evicted, "Evicted"),
        (FailureReason::PodDeleted, "PodDeleted"),
        (FailureReason::ContainerStartFailed, "ContainerStartFailed"),
    ];
    for (reason, name) in reasons {
        let out = outcome(
            Workload::Failed {
                reason,
                detail: Some("why".into()),
            },
            "partial output\n",
        );
        assert_eq!(failed_reason(&out), name);
        let Outcome::Failed { message, error } = out else {
            unreachable!()
        };
        assert_eq!(error.code, -32603);
        assert_eq!(error.message, reason.message());
        assert_eq!(error.data.unwrap()["detail"], "why");
        assert_eq!(message, format!("{} (why)", reason.message()));
    }
}

#[test]
fn image_pull_failure_also_stops_the_stuck_pod() {
    let p = progress("");
    let pulling = Workload::Failed {
        reason: FailureReason::ImagePullFailed,
        detail: None,
    };
    assert_eq!(
        decide(&obs(&pulling, &p)).side_effect,
        Some(SideEffect::DeleteJob)
    );
    let oom = Workload::Failed {
        reason: FailureReason::OomKilled,
        detail: None,
    };
    assert_eq!(decide(&obs(&oom, &p)).side_effect, None);
}

#[test]
fn deleted_job_fails_but_a_new_task_waits_for_its_job() {
    let p = progress("");
    let mut o = obs(&Workload::NoJob, &p);
    assert_eq!(failed_reason(&decide(&o).outcome), "JobDeleted");
    o.job_recorded = false;
    assert_eq!(
        decide(&o).outcome,
        Outcome::Working {
            message: "Creating the Job".into()
        }
    );
}

#[test]
fn starting_pod_is_working_with_what_it_waits_for() {
    let out = outcome(
        Workload::Starting {
            detail: "Waiting: ContainerCreating".into(),
        },
        "",
    );
    assert_eq!(
        out,
        Outcome::Working {
            message: "Waiting: ContainerCreating".into()
        }
    );
}

fn input(key: &str) -> String {
    json!({"mcp": "input", "requests": {key: {"method": "elicitation/create",
        "params": {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}}}})
    .to_string()
        + "\n"
}

#[test]
fn input_message_requires_input_until_every_key_is_answered() {
    let p = progress(&(input("a") + &input("b")));
    let mut o = obs(&Workload::Running, &p);
    let Outcome::InputRequired { message, requests } = decide(&o).outcome else {
        panic!("expected input_required")
    };
    assert_eq!(message, "Waiting for input");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["a", "b"]);

    let partial = BTreeMap::from([("a".to_owned(), json!({"action": "accept"}).into())]);
    o.answers = Some(&partial);
    let Outcome::InputRequired { requests, .. } = decide(&o).outcome else {
        panic!("expected input_required")
    };
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["b"]);

    let all = BTreeMap::from([
        ("a".to_owned(), json!({}).into()),
        ("b".to_owned(), json!({}).into()),
    ]);
    o.answers = Some(&all);
    assert_eq!(
        decide(&o).outcome,
        Outcome::Working {
            message: "Running".into()
        }
    );
}

#[test]
fn exit_while_waiting_for_input_maps_like_any_exit() {
    let (_, result) = completed(outcome(Workload::Exited { exit_code: 1 }, &input("a")));
    assert_eq!(result["isError"], true);
}

fn cancel_decision(workload: Workload, requested: &str, stdout: &str) -> Decision {
    let p = progress(stdout);
    let mut o = obs(&workload, &p);
    o.cancel_requested_at = Some(requested.parse().unwrap());
    decide(&o)
}

#[test]
fn cancel_before_the_pod_starts_cancels_at_once_and_deletes_the_job() {
    let starting = Workload::Starting {
        detail: "pending".into(),
    };
    let d = cancel_decision(starting, NOW, "");
    assert_eq!(d.outcome.status(), TaskStatus::Cancelled);
    assert_eq!(d.side_effect, Some(SideEffect::DeleteJob));
    let d = cancel_decision(Workload::NoJob, NOW, "");
    assert_eq!(
        (d.outcome.status(), d.side_effect),
        (TaskStatus::Cancelled, None)
    );
    let pulling = Workload::Failed {
        reason: FailureReason::ImagePullFailed,
        detail: None,
    };
    assert_eq!(
        cancel_decision(pulling, NOW, "").side_effect,
        Some(SideEffect::DeleteJob)
    );
}

#[test]
fn running_tool_gets_its_grace_period_then_its_job_is_deleted() {
    let d = cancel_decision(Workload::Running, "2026-08-01T12:00:50Z", "");
    assert_eq!(d.outcome.status(), TaskStatus::Working);
    assert_eq!(d.side_effect, None);
    assert_eq!(d.recheck_after, Some(SignedDuration::from_secs(20)));

    let d = cancel_decision(Workload::Running, "2026-08-01T12:00:30Z", "");
    assert_eq!(d.outcome.status(), TaskStatus::Cancelled);
    assert_eq!(d.side_effect, Some(SideEffect::DeleteJob));
}

#[test]
fn tool_that_stops_after_cancel_is_cancelled_unless_it_finished_first() {
    for code in [0, 1, 143] {
        let d = cancel_decision(Workload::Exited { exit_code: code }, NOW, "bye\n");
        assert_eq!(
            (d.outcome.status(), d.side_effect),
            (TaskStatus::Cancelled, None),
            "exit {code}"
        );
    }
    let d = cancel_decision(Workload::Exited { exit_code: 0 }, NOW, RESULT_LINE);
    assert_eq!(d.outcome.status(), TaskStatus::Completed);
}

fn exited_at(code: i32, finished: &str, requested: &str, stdout: &str) -> Decision {
    let workload = Workload::Exited { exit_code: code };
    let p = progress(stdout);
    let mut o = obs(&workload, &p);
    o.cancel_requested_at = Some(requested.parse().unwrap());
    o.finished_at = Some(finished.parse().unwrap());
    decide(&o)
}

#[test]
fn a_tool_that_exited_0_before_the_cancel_time_completes_with_its_output() {
    let d = exited_at(
        0,
        "2026-08-01T12:00:10Z",
        "2026-08-01T12:00:11Z",
        "all 64 SKUs\n",
    );
    assert_eq!(d.outcome.status(), TaskStatus::Completed);
    let Outcome::Completed { result, .. } = d.outcome else {
        unreachable!()
    };
    assert_eq!(result["content"][0]["text"], "all 64 SKUs");
    assert_eq!(result["isError"], false);
    // At or after the cancel time, or failing: the tool stopped on the cancel.
    let same = exited_at(0, "2026-08-01T12:00:10Z", "2026-08-01T12:00:10Z", "x\n");
    assert_eq!(same.outcome.status(), TaskStatus::Cancelled);
    // In the cancel's own second (finishedAt is rounded down to whole seconds) the exit may
    // have followed the cancel: a tool that stopped 0.5 s after it must end cancelled.
    let within = exited_at(0, "2026-08-01T12:00:10Z", "2026-08-01T12:00:10.45Z", "x\n");
    assert_eq!(within.outcome.status(), TaskStatus::Cancelled);
    let failing = exited_at(1, "2026-08-01T12:00:09Z", "2026-08-01T12:00:10Z", "x\n");
    assert_eq!(failing.outcome.status(), TaskStatus::Cancelled);
}

#[test]
fn a_cancelled_tool_keeps_its_own_last_status_message() {
    let words = "{\"mcp\":\"status\",\"message\":\"stopped after 2 of 64 SKUs\"}\n";
    let d = cancel_decision(Workload::Exited { exit_code: 0 }, NOW, words);
    assert_eq!(
        d.outcome,
        Outcome::Cancelled {
            message: "stopped after 2 of 64 SKUs".into()
        }
    );
    let silent = cancel_decision(Workload::Exited { exit_code: 0 }, NOW, "bye\n");
    assert_eq!(
        silent.outcome,
        Outcome::Cancelled {
            message: "Cancelled; the tool stopped".into()
        }
    );
}

#[test]
fn cancel_annotation_gives_the_request_time() {
    let mut task = crate::fixtures::task();
    assert_eq!(cancel_requested_at(&task), None);
    let annotations = task.metadata.annotations.get_or_insert_default();
    annotations.insert(
        CANCEL_REQUESTED_ANNOTATION.into(),
        "2026-08-01T12:00:05Z".into(),
    );
    assert_eq!(
        cancel_requested_at(&task),
        Some("2026-08-01T12:00:05Z".parse().unwrap())
    );
    let annotations = task.metadata.annotations.get_or_insert_default();
    annotations.insert(CANCEL_REQUESTED_ANNOTATION.into(), "now please".into());
    assert_eq!(cancel_requested_at(&task), Some(Timestamp::UNIX_EPOCH));
}
