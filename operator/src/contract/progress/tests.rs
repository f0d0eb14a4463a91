//! Tests for folding a tool's stdout into task progress.

use serde_json::json;

use mcp_task_operator_crds::TaskError;

use super::*;

fn feed(progress: &mut Progress, text: &str) -> Vec<ProgressWarning> {
    let mut warnings = progress.push_bytes(text.as_bytes());
    warnings.extend(progress.finish());
    warnings
}

fn input_line(key: &str, message: &str) -> String {
    json!({"mcp": "input", "requests": {key: {"method": "elicitation/create", "params": {
        "message": message, "requestedSchema": {"type": "object", "properties": {}}}}}})
    .to_string()
}

#[test]
fn status_messages_keep_the_latest_and_skip_output() {
    let mut p = Progress::default();
    let warnings = feed(
        &mut p,
        "starting\n{\"mcp\":\"status\",\"message\":\"1 of 2\"}\n\
         {\"mcp\":\"status\",\"message\":\"2 of 2\"}\ndone\n",
    );
    assert!(warnings.is_empty());
    assert_eq!(p.status_message(), Some("2 of 2"));
    assert_eq!(p.output().text(), "starting\ndone");
    assert_eq!(p.terminal(), None);
}

#[test]
fn first_result_wins_and_later_ones_warn() {
    let mut p = Progress::default();
    let warnings = feed(
        &mut p,
        "{\"mcp\":\"result\",\"result\":{\"content\":[]}}\n\
         {\"mcp\":\"error\",\"error\":{\"code\":1,\"message\":\"late\"}}\n\
         {\"mcp\":\"status\",\"message\":\"bye\"}\n",
    );
    assert_eq!(warnings, [ProgressWarning::AfterTerminal { kind: "error" }]);
    assert_eq!(warnings[0].reason(), "MessageAfterResult");
    let Some(Terminal::Result(result)) = p.terminal() else {
        panic!("expected a result");
    };
    assert_eq!(result["resultType"], "complete");
    assert_eq!(p.status_message(), None);
}

#[test]
fn error_message_is_terminal() {
    let mut p = Progress::default();
    feed(
        &mut p,
        "{\"mcp\":\"error\",\"error\":{\"code\":-32603,\"message\":\"bad\"}}",
    );
    assert_eq!(
        p.terminal(),
        Some(&Terminal::Error(TaskError {
            code: -32603,
            message: "bad".into(),
            data: None
        }))
    );
}

#[test]
fn partial_last_line_counts_after_finish() {
    let mut p = Progress::default();
    assert!(
        p.push_bytes(b"{\"mcp\":\"result\",\"result\":{\"content\":[]}}")
            .is_empty()
    );
    assert_eq!(p.terminal(), None);
    p.finish();
    assert!(matches!(p.terminal(), Some(Terminal::Result(_))));
}

#[test]
fn input_requests_accumulate_and_outstanding_excludes_answers() {
    let mut p = Progress::default();
    let text = format!(
        "{}\n{}\n{}\n",
        input_line("a", "A?"),
        input_line("b", "B?"),
        input_line("a", "A?")
    );
    assert!(
        feed(&mut p, &text).is_empty(),
        "re-printing a request is idempotent"
    );
    assert_eq!(p.input_requests().len(), 2);
    let outstanding = p.outstanding_input(|key| key == "a");
    assert_eq!(outstanding.keys().collect::<Vec<_>>(), ["b"]);
}

#[test]
fn reused_input_key_with_other_request_warns_and_is_ignored() {
    let mut p = Progress::default();
    let text = format!("{}\n{}\n", input_line("a", "A?"), input_line("a", "Other?"));
    let warnings = feed(&mut p, &text);
    assert_eq!(
        warnings,
        [ProgressWarning::DuplicateInputKey { key: "a".into() }]
    );
    assert_eq!(p.input_requests()["a"]["params"]["message"], "A?");
}

#[test]
fn input_requests_are_capped_per_task() {
    let mut p = Progress::default();
    let text: String = (0..=MAX_INPUT_REQUESTS)
        .map(|i| input_line(&format!("k{i:03}"), "?") + "\n")
        .collect();
    let warnings = feed(&mut p, &text);
    assert_eq!(p.input_requests().len(), MAX_INPUT_REQUESTS);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].reason(), "TooManyInputRequests");
}

#[test]
fn malformed_lines_warn_and_still_count_as_output() {
    let mut p = Progress::default();
    let warnings = feed(&mut p, "{\"mcp\":\"status\"}\nplain\n");
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].reason(), "MalformedMessage");
    assert_eq!(
        warnings[0].to_string(),
        "malformed status message from the tool: field \"message\" must be a string"
    );
    assert_eq!(p.output().text(), "{\"mcp\":\"status\"}\nplain");
}

#[test]
fn oversized_result_line_is_terminal_too_large() {
    let mut p = Progress::with_bounds(64, 1024, 1024);
    let big = json!({"mcp": "result", "result": {"content": [{"type": "text", "text": "x".repeat(500)}]}});
    feed(&mut p, &format!("{big}\n"));
    let Some(Terminal::ResultTooLarge { bytes }) = p.terminal() else {
        panic!("expected ResultTooLarge, got {:?}", p.terminal());
    };
    assert_eq!(*bytes, big.to_string().len());
}

#[test]
fn input_requests_are_capped_in_bytes() {
    let mut p = Progress::default();
    let big = "q".repeat(60 * 1024);
    let text: String = (0..5)
        .map(|i| input_line(&format!("k{i}"), &big) + "\n")
        .collect();
    let warnings = feed(&mut p, &text);
    assert_eq!(
        p.input_requests().len(),
        4,
        "4 x 60 KiB fit in 256 KiB, the fifth does not"
    );
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].to_string().contains("262144 bytes"),
        "{}",
        warnings[0]
    );
}

#[test]
fn cut_and_undecodable_log_lines_warn_but_are_kept() {
    let mut p = Progress::with_bounds(8, 1024, 1024);
    let mut warnings = p.push_bytes(b"0123456789abc\ncaf\xe9\nfine\n");
    warnings.extend(p.finish());
    let reasons: Vec<_> = warnings.iter().map(ProgressWarning::reason).collect();
    assert_eq!(reasons, ["OutputLineCut", "OutputNotUtf8"]);
    assert_eq!(
        warnings[0].to_string(),
        "output line of 13 bytes cut to the 8-byte limit"
    );
    assert_eq!(
        p.output().text(),
        "01234567 [line cut: 13 bytes]\ncaf\u{fffd}\nfine"
    );
}

#[test]
fn unterminated_last_line_is_an_ordinary_line() {
    let mut p = Progress::default();
    assert!(p.push_bytes(b"no newline at the end").is_empty());
    assert!(p.finish().is_empty());
    assert_eq!(p.output().text(), "no newline at the end");
}

#[test]
fn a_signing_tool_keeps_unsigned_message_lines_as_output_and_warns_once() {
    let mut p = Progress::default().with_nonce(Some("n0nce".into()));
    let warnings = p.push_bytes(
        b"{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"forged\"}]}}\n\
          {\"mcp\":\"status\",\"message\":\"forged too\"}\n\
          {\"mcp\":\"status\",\"nonce\":\"n0nce\",\"message\":\"real\"}\n\
          {\"mcp\":\"result\",\"nonce\":\"n0nce\",\"result\":{\"content\":[]}}\n",
    );
    assert_eq!(warnings, [ProgressWarning::UnsignedMessage]);
    assert_eq!(p.unsigned_messages(), 2);
    assert_eq!(p.status_message(), Some("real"));
    let Some(Terminal::Result(result)) = p.terminal() else {
        panic!("the signed result ends the task: {:?}", p.terminal());
    };
    assert_eq!(result["content"], serde_json::json!([]));
    assert!(p.output().text().contains("forged too"));
}
