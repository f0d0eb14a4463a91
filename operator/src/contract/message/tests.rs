//! Table-driven tests for the stdout line parser, plus a fuzz-style no-panic check.

use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::json;

use super::*;
use crate::contract::{LineSplitter, MAX_LINE_BYTES};

fn raw(bytes: &[u8]) -> RawLine {
    RawLine {
        bytes: bytes.to_vec(),
        len: bytes.len(),
        unterminated: false,
    }
}

fn parse(bytes: &[u8]) -> Line {
    parse_line(&raw(bytes), MAX_LINE_BYTES)
}

fn malformed(bytes: &[u8]) -> Malformed {
    match parse(bytes) {
        Line::Malformed(m) => m,
        other => panic!("{} parsed as {other:?}", String::from_utf8_lossy(bytes)),
    }
}

#[test]
fn plain_lines_are_log_lines() {
    let cases: [&[u8]; 9] = [
        b"",
        b"hello world",
        b"  {not json",
        b"[1,2,3]",
        b"{\"level\":\"info\",\"msg\":\"mcp is great\"}",
        b"{\"msg\":\"x\",\"mcp\"",
        b"\"mcp\"",
        b"42",
        b"{\"nested\":{\"mcp\":\"result\"}}",
    ];
    for bytes in cases {
        let text = String::from_utf8_lossy(bytes).into_owned();
        assert_eq!(parse(bytes), Line::Log(text), "{bytes:?}");
    }
}

#[test]
fn invalid_utf8_becomes_a_lossy_log_line() {
    assert_eq!(
        parse(b"caf\xe9 \xff"),
        Line::Log("caf\u{fffd} \u{fffd}".into())
    );
}

#[test]
fn status_message_sets_text_and_is_shortened() {
    assert_eq!(
        parse(br#"{"mcp":"status","message":"recounted 3 of 64 SKUs"}"#),
        Line::Message(Message::Status {
            message: "recounted 3 of 64 SKUs".into()
        })
    );
    let long = json!({"mcp": "status", "message": "x".repeat(5000)}).to_string();
    let Line::Message(Message::Status { message }) = parse(long.as_bytes()) else {
        panic!("not a status message");
    };
    assert_eq!(message.chars().count(), MAX_STATUS_MESSAGE_CHARS);
    assert!(message.ends_with('…'));
}

#[test]
fn messages_tolerate_whitespace_and_extra_fields() {
    let line = b"  { \"mcp\" : \"status\", \"message\": \"hi\", \"extra\": 1 }\t";
    assert_eq!(
        parse(line),
        Line::Message(Message::Status {
            message: "hi".into()
        })
    );
}

#[test]
fn input_message_carries_validated_requests() {
    let request = json!({"method": "elicitation/create", "params": {"message": "Approve?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}});
    let line = json!({"mcp": "input", "requests": {"approve-1": request}}).to_string();
    let Line::Message(Message::Input { requests }) = parse(line.as_bytes()) else {
        panic!("not an input message");
    };
    assert_eq!(requests.len(), 1);
    assert_eq!(requests["approve-1"], request);
}

#[test]
fn result_message_gets_result_type_complete() {
    let line = br#"{"mcp":"result","result":{"content":[{"type":"text","text":"done"}]}}"#;
    let Line::Message(Message::Result { result }) = parse(line) else {
        panic!("not a result message");
    };
    assert_eq!(
        Value::Object(result),
        json!({"content": [{"type": "text", "text": "done"}], "resultType": "complete"})
    );
}

#[test]
fn error_message_carries_the_json_rpc_error() {
    let line = br#"{"mcp":"error","error":{"code":-32603,"message":"boom","data":{"k":1}}}"#;
    assert_eq!(
        parse(line),
        Line::Message(Message::Error {
            error: TaskError {
                code: -32603,
                message: "boom".into(),
                data: Some(json!({"k": 1})),
            }
        })
    );
}

#[test]
fn error_data_over_the_bound_is_cut_with_a_marker() {
    let blob = "x".repeat(100_000);
    let line = format!(
        r#"{{"mcp":"error","error":{{"code":-32000,"message":"boom","data":{{"dump":"{blob}"}}}}}}"#
    );
    let Line::Message(Message::Error { error }) = parse(line.as_bytes()) else {
        panic!("an error message");
    };
    let data = error.data.expect("data kept, cut");
    let text = data.as_str().expect("cut data is a string");
    assert!(text.starts_with(r#"{"dump":"xxx"#));
    assert!(
        text.ends_with("[… error.data cut: 100011 bytes, at most 16384 are kept]"),
        "{}",
        &text[text.len() - 80..]
    );
    assert!(data.to_string().len() <= mcp_task_operator_crds::budget::MAX_ERROR_DATA_BYTES);
}

#[test]
fn malformed_messages_name_what_is_wrong() {
    let cases: [(&[u8], Option<&str>, &str); 16] = [
        (
            br#"{"mcp":"progress"}"#,
            Some("progress"),
            "unknown message kind \"progress\"",
        ),
        (br#"{"mcp":7}"#, None, "unknown message kind 7"),
        (
            br#"{"mcp":"status"}"#,
            Some("status"),
            "\"message\" must be a string",
        ),
        (
            br#"{"mcp":"status","message":3}"#,
            Some("status"),
            "\"message\"",
        ),
        (
            br#"{"mcp":"input"}"#,
            Some("input"),
            "\"requests\" must be a non-empty object",
        ),
        (
            br#"{"mcp":"input","requests":{}}"#,
            Some("input"),
            "non-empty",
        ),
        (
            br#"{"mcp":"input","requests":{"k":{"method":"x/y","params":{}}}}"#,
            Some("input"),
            "input request \"k\" is invalid",
        ),
        (
            br#"{"mcp":"input","requests":{"":{"method":"roots/list"}}}"#,
            Some("input"),
            "input request \"\" is invalid",
        ),
        (
            br#"{"mcp":"result"}"#,
            Some("result"),
            "\"result\" must be a CallToolResult",
        ),
        (
            br#"{"mcp":"result","result":{}}"#,
            Some("result"),
            "\"result.content\"",
        ),
        (
            br#"{"mcp":"result","result":{"content":[{"text":"x"}]}}"#,
            Some("result"),
            "\"result.content\"",
        ),
        (
            br#"{"mcp":"result","result":{"content":[],"isError":"yes"}}"#,
            Some("result"),
            "\"result.isError\" must be a boolean",
        ),
        (
            br#"{"mcp":"result","result":{"content":[],"resultType":"task"}}"#,
            Some("result"),
            "\"result.resultType\"",
        ),
        (
            br#"{"mcp":"error","error":{"message":"x"}}"#,
            Some("error"),
            "\"error.code\"",
        ),
        (
            br#"{"mcp":"error","error":{"code":1.5,"message":"x"}}"#,
            Some("error"),
            "\"error.code\"",
        ),
        (
            br#"{"mcp":"result","result":{"content":[]"#,
            Some("result"),
            "not valid JSON",
        ),
    ];
    for (bytes, kind, expected) in cases {
        let m = malformed(bytes);
        assert_eq!(m.kind.as_deref(), kind, "{}", m.text);
        assert!(
            m.reason.to_string().contains(expected),
            "{}: {:?} lacks {expected:?}",
            m.text,
            m.reason.to_string()
        );
        assert_eq!(m.text, String::from_utf8_lossy(bytes));
    }
}

#[test]
fn oversized_result_fails_the_size_bound() {
    let big = "x".repeat(MAX_RESULT_BYTES);
    let line = json!({"mcp": "result", "result": {"content": [{"type": "text", "text": big}]}});
    let Line::Message(Message::ResultTooLarge { bytes }) = parse(line.to_string().as_bytes())
    else {
        panic!("expected ResultTooLarge");
    };
    assert!(bytes > MAX_RESULT_BYTES);
}

#[test]
fn cut_lines_are_classified_from_their_head() {
    let cut = |head: &[u8], len: usize| RawLine {
        bytes: head.to_vec(),
        len,
        unterminated: false,
    };
    let result = parse_line(&cut(br#"{"mcp": "result","result":{"con"#, 5000), 32);
    assert_eq!(
        result,
        Line::Message(Message::ResultTooLarge { bytes: 5000 })
    );

    let Line::Malformed(status) = parse_line(&cut(br#"{"mcp":"status","mess"#, 5000), 21) else {
        panic!("expected a malformed status");
    };
    assert_eq!(status.kind.as_deref(), Some("status"));
    assert_eq!(
        status.reason,
        MalformedReason::TooLong {
            bytes: 5000,
            max: 21
        }
    );
    assert!(status.text.ends_with("[line cut: 5000 bytes]"));

    let log = parse_line(&cut(b"just a very long log", 9000), 20);
    assert_eq!(
        log,
        Line::Log("just a very long log [line cut: 9000 bytes]".into())
    );
}

#[test]
fn shorten_respects_char_boundaries() {
    assert_eq!(shorten("héllo", 10), "héllo");
    assert_eq!(shorten("héllo", 3), "hé…");
    assert_eq!(shorten("ééé", 3), "ééé");
    assert_eq!(shorten("abc", 0), "…");
}

/// Arbitrary bytes, split at arbitrary points, never panic and never exceed the line bound.
#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x6d63_7074);
    let fragments: [&[u8]; 10] = [
        b"{\"mcp\":",
        b"\"result\"",
        b"\"status\",\"message\":",
        b"{\"content\":[",
        b"]}}",
        b"\n",
        b"\r\n",
        b"\xff\xc3",
        b"\"input\",\"requests\":{\"k\":{\"method\":\"roots/list\"}}}",
        b"{\"mcp\":\"error\",\"error\":{\"code\":-1,\"message\":\"m\"}}",
    ];
    for _ in 0..2000 {
        let mut stream = Vec::new();
        for _ in 0..rng.random_range(0..40) {
            if rng.random_bool(0.5) {
                stream.extend_from_slice(fragments[rng.random_range(0..fragments.len())]);
            } else {
                let n = rng.random_range(0..16);
                stream.extend((0..n).map(|_| rng.random::<u8>()));
            }
        }
        let max = rng.random_range(0..64);
        let mut splitter = LineSplitter::new(max);
        let mut rest = stream.as_slice();
        let mut lines = Vec::new();
        while !rest.is_empty() {
            let n = rng.random_range(1..=rest.len());
            lines.extend(splitter.push(&rest[..n]));
            rest = &rest[n..];
        }
        lines.extend(splitter.finish());
        for line in &lines {
            assert!(line.bytes.len() <= max);
            let _ = parse_line(line, max);
        }
    }
}

const NONCE: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn signed(bytes: &[u8]) -> Line {
    parse_signed_line(&raw(bytes), MAX_LINE_BYTES, Some(NONCE))
}

#[test]
fn with_a_nonce_only_signed_lines_are_messages() {
    let good = format!(r#"{{"mcp":"result","nonce":"{NONCE}","result":{{"content":[]}}}}"#);
    let Line::Message(Message::Result { result }) = signed(good.as_bytes()) else {
        panic!("a signed result is a message");
    };
    assert!(!result.contains_key("nonce"));
    // The nonce may come anywhere in the object.
    let last = format!(r#"{{"mcp":"status","message":"m","nonce":"{NONCE}"}}"#);
    assert!(matches!(
        signed(last.as_bytes()),
        Line::Message(Message::Status { .. })
    ));

    let forged = br#"{"mcp":"result","result":{"content":[{"type":"text","text":"forged"}]}}"#;
    let wrong = br#"{"mcp":"result","nonce":"0000","result":{"content":[]}}"#;
    let not_a_string = br#"{"mcp":"status","nonce":1,"message":"m"}"#;
    for line in [&forged[..], wrong, not_a_string] {
        let text = String::from_utf8_lossy(line).into_owned();
        assert_eq!(signed(line), Line::Unsigned(text), "an ordinary log line");
    }
    // Unsigned broken or cut message lines are not the tool's: no malformed-message warning.
    assert!(matches!(signed(br#"{"mcp":"result","#), Line::Unsigned(_)));
    let cut = RawLine {
        bytes: br#"{"mcp":"result","result":"#.to_vec(),
        len: 5 * MAX_LINE_BYTES,
        unterminated: false,
    };
    assert!(matches!(
        parse_signed_line(&cut, MAX_LINE_BYTES, Some(NONCE)),
        Line::Unsigned(_)
    ));
    assert!(matches!(
        parse_line(&cut, MAX_LINE_BYTES),
        Line::Message(Message::ResultTooLarge { .. })
    ));
    assert_eq!(signed(b"plain"), Line::Log("plain".into()));
}

#[test]
fn a_signed_but_broken_line_is_malformed_and_its_text_hides_the_nonce() {
    let broken = format!(r#"{{"mcp":"result","nonce":"{NONCE}","result":"#);
    let Line::Malformed(m) = signed(broken.as_bytes()) else {
        panic!("a signed broken line is a malformed message");
    };
    assert!(!m.text.contains(NONCE), "{}", m.text);
    assert!(m.text.contains("<nonce>"), "{}", m.text);
}

#[test]
fn without_a_nonce_the_contract_is_unchanged_and_a_nonce_field_is_ignored() {
    let forged = br#"{"mcp":"status","message":"m"}"#;
    assert!(matches!(
        parse(forged),
        Line::Message(Message::Status { .. })
    ));
    let extra = br#"{"mcp":"status","nonce":"x","message":"m"}"#;
    assert!(matches!(
        parse(extra),
        Line::Message(Message::Status { .. })
    ));
}
