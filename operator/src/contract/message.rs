//! Parsing one stdout line into a contract message, a log line or a malformed-message report.
//!
//! A line that is a JSON object with the key `"mcp"` is a message; every other line is a log
//! line. Lines that clearly meant to be messages (their first key is `"mcp"`) but are cut,
//! invalid JSON or of the wrong shape become [`Line::Malformed`], which the controller logs and
//! surfaces as a Warning Event. Nothing here panics, whatever the bytes.

use std::collections::BTreeMap;

use mcp_task_operator_crds::TaskError;
use mcp_task_operator_crds::budget::bound_error_data;
use serde_json::{Map, Value};

use super::input::{InputRequestError, validate_input_key, validate_input_request};
use super::lines::RawLine;
use super::yaml_safe::{replace_refused, replace_refused_in};
use super::{MAX_INPUT_MESSAGE_BYTES, MAX_RESULT_BYTES, MAX_STATUS_MESSAGE_CHARS};

/// A well-formed contract message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `{"mcp":"status","message":...}`: new progress text (already shortened to the bound).
    Status {
        /// The progress text.
        message: String,
    },
    /// `{"mcp":"input","requests":{...}}`: questions for the client, each validated.
    Input {
        /// Input requests by key.
        requests: BTreeMap<String, Value>,
    },
    /// `{"mcp":"result","result":...}`: the `CallToolResult`, with `resultType: "complete"`.
    Result {
        /// The normalized `CallToolResult` object.
        result: Map<String, Value>,
    },
    /// A result message larger than [`MAX_RESULT_BYTES`]; the task fails saying so.
    ResultTooLarge {
        /// Size of the result (or of the cut line carrying it) in bytes.
        bytes: usize,
    },
    /// `{"mcp":"error","error":{...}}`: a JSON-RPC error; the task fails with it.
    Error {
        /// The tool's error.
        error: TaskError,
    },
}

/// What one stdout line turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A contract message.
    Message(Message),
    /// An ordinary log line (lossily decoded; a cut line ends with a marker).
    Log(String),
    /// A line that meant to be a message but is not a valid one.
    Malformed(Malformed),
    /// A `{"mcp": ...}` line without the task's message nonce, from a tool that signs its
    /// messages: an ordinary log line (its text), counted and reported once.
    Unsigned(String),
}

/// A malformed contract message: why, and the line's text for logs and plain output.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    /// The message kind (`"mcp"` value), when it could be read.
    pub kind: Option<String>,
    /// What is wrong with it.
    pub reason: MalformedReason,
    /// The line as text (lossily decoded; a cut line ends with a marker).
    pub text: String,
}

/// Why a message line was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MalformedReason {
    /// The line starts like a message but is not valid JSON.
    #[error("not valid JSON: {detail}")]
    InvalidJson {
        /// The JSON parser's description.
        detail: String,
    },
    /// The line is longer than the line bound.
    #[error("line of {bytes} bytes exceeds the {max}-byte limit")]
    TooLong {
        /// Full length of the line.
        bytes: usize,
        /// The line bound.
        max: usize,
    },
    /// The `"mcp"` value is not a known message kind.
    #[error("unknown message kind {kind}; expected status, input, result or error")]
    UnknownKind {
        /// The `"mcp"` value as JSON.
        kind: String,
    },
    /// A required field is missing or has the wrong type.
    #[error("field {field:?} must be {expected}")]
    InvalidField {
        /// The field's name (dotted for nested fields).
        field: String,
        /// What it must be.
        expected: &'static str,
    },
    /// An input request or its key is invalid.
    #[error("input request {key:?} is invalid")]
    InvalidInput {
        /// The request's key.
        key: String,
        /// What is wrong with it.
        #[source]
        source: InputRequestError,
    },
    /// The input message is larger than [`MAX_INPUT_MESSAGE_BYTES`].
    #[error("input requests of {bytes} bytes exceed the {max}-byte limit")]
    InputTooLarge {
        /// Serialized size of the requests.
        bytes: usize,
        /// The bound.
        max: usize,
    },
}

/// Classifies one raw line of a tool that does not sign its messages. `max_line_bytes` is only
/// used to report a cut line's bound.
pub fn parse_line(line: &RawLine, max_line_bytes: usize) -> Line {
    parse_signed_line(line, max_line_bytes, None)
}

/// Classifies one raw line. With a `nonce` (the tool sets `messageNonce`), a message counts only
/// if it carries `"nonce": "<nonce>"`; a cut or broken one only if its bytes hold the nonce
/// (third-party content cannot know it). Other `{"mcp": ...}` lines are [`Line::Unsigned`], and
/// the nonce never appears in a line's text (which may reach the task's status).
pub fn parse_signed_line(line: &RawLine, max_line_bytes: usize, nonce: Option<&str>) -> Line {
    // Everything read here may end up in the task's status, written by server-side apply.
    let mut text = replace_refused_in(line_text(line));
    let trimmed = line.bytes.trim_ascii();
    let holds_nonce = nonce.is_some_and(|n| contains(trimmed, n.as_bytes()));
    if let Some(n) = nonce.filter(|_| holds_nonce) {
        text = text.replace(n, "<nonce>");
    }
    let message_like = starts_with_mcp_key(trimmed);
    let unsigned = nonce.is_some() && !holds_nonce;
    if line.is_truncated() {
        if !message_like {
            return Line::Log(text);
        }
        if unsigned {
            return Line::Unsigned(text);
        }
        let kind = sniff_kind(trimmed);
        if kind.as_deref() == Some("result") {
            return Line::Message(Message::ResultTooLarge { bytes: line.len });
        }
        let reason = MalformedReason::TooLong {
            bytes: line.len,
            max: max_line_bytes,
        };
        return Line::Malformed(Malformed { kind, reason, text });
    }
    if trimmed.first() != Some(&b'{') {
        return Line::Log(text);
    }
    match serde_json::from_slice::<Value>(trimmed) {
        Ok(Value::Object(mut obj)) if obj.contains_key("mcp") => {
            let signature = obj.remove("nonce");
            if let Some(n) = nonce
                && signature.as_ref().and_then(Value::as_str) != Some(n)
            {
                return Line::Unsigned(text);
            }
            obj.values_mut().for_each(replace_refused);
            let kind = obj.get("mcp").and_then(Value::as_str).map(str::to_owned);
            match parse_message(obj) {
                Ok(message) => Line::Message(message),
                Err(reason) => Line::Malformed(Malformed { kind, reason, text }),
            }
        }
        Ok(_) => Line::Log(text),
        Err(_) if message_like && unsigned => Line::Unsigned(text),
        Err(e) if message_like => Line::Malformed(Malformed {
            kind: sniff_kind(trimmed),
            reason: MalformedReason::InvalidJson {
                detail: e.to_string(),
            },
            text,
        }),
        Err(_) => Line::Log(text),
    }
}

fn line_text(line: &RawLine) -> String {
    let text = String::from_utf8_lossy(&line.bytes);
    if line.is_truncated() {
        format!("{text} [line cut: {} bytes]", line.len)
    } else {
        text.into_owned()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// True if the bytes open a JSON object whose first key is `"mcp"`.
fn starts_with_mcp_key(bytes: &[u8]) -> bool {
    bytes
        .strip_prefix(b"{")
        .is_some_and(|rest| rest.trim_ascii_start().starts_with(b"\"mcp\""))
}

/// Reads the `"mcp"` string value from the start of a (possibly cut or broken) message line.
fn sniff_kind(bytes: &[u8]) -> Option<String> {
    let rest = bytes.strip_prefix(b"{")?.trim_ascii_start();
    let rest = rest.strip_prefix(b"\"mcp\"")?.trim_ascii_start();
    let rest = rest.strip_prefix(b":")?.trim_ascii_start();
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().take(32).position(|&b| b == b'"')?;
    std::str::from_utf8(&rest[..end]).ok().map(str::to_owned)
}

fn parse_message(mut obj: Map<String, Value>) -> Result<Message, MalformedReason> {
    let kind = obj.remove("mcp").unwrap_or(Value::Null);
    match kind.as_str() {
        Some("status") => parse_status(&obj),
        Some("input") => parse_input(obj),
        Some("result") => parse_result(obj),
        Some("error") => parse_error(obj),
        _ => Err(MalformedReason::UnknownKind {
            kind: kind.to_string(),
        }),
    }
}

fn field(name: &str, expected: &'static str) -> MalformedReason {
    MalformedReason::InvalidField {
        field: name.to_owned(),
        expected,
    }
}

fn parse_status(obj: &Map<String, Value>) -> Result<Message, MalformedReason> {
    let message = obj
        .get("message")
        .and_then(Value::as_str)
        .ok_or_else(|| field("message", "a string"))?;
    Ok(Message::Status {
        message: shorten(message, MAX_STATUS_MESSAGE_CHARS),
    })
}

fn parse_input(mut obj: Map<String, Value>) -> Result<Message, MalformedReason> {
    let Some(Value::Object(requests)) = obj.remove("requests") else {
        return Err(field("requests", "a non-empty object of input requests"));
    };
    if requests.is_empty() {
        return Err(field("requests", "a non-empty object of input requests"));
    }
    let bytes = serialized_len(&requests);
    if bytes > MAX_INPUT_MESSAGE_BYTES {
        return Err(MalformedReason::InputTooLarge {
            bytes,
            max: MAX_INPUT_MESSAGE_BYTES,
        });
    }
    for (key, request) in &requests {
        match validate_input_key(key).and_then(|()| validate_input_request(request)) {
            Ok(()) => {}
            // Well formed, so the tool waits for an answer no client could give: a contract
            // error that fails the task, rather than a line to ignore.
            Err(InputRequestError::NotCarriable { reason }) => {
                return Ok(not_carriable(key, &reason));
            }
            Err(source) => {
                return Err(MalformedReason::InvalidInput {
                    key: shorten(key, 64),
                    source,
                });
            }
        }
    }
    Ok(Message::Input {
        requests: requests.into_iter().collect(),
    })
}

/// The error that fails a task whose input request `key` the MCP wire types cannot carry
/// (`data.reason: InputRequestNotCarriable`, docs/tool-contract.md).
fn not_carriable(key: &str, reason: &str) -> Message {
    Message::Error {
        error: TaskError {
            code: -32603,
            message:
                "Internal error: the tool asked for input that cannot be sent to an MCP client"
                    .to_owned(),
            data: Some(serde_json::json!({
                "reason": "InputRequestNotCarriable",
                "key": shorten(key, 64),
                "detail": shorten(reason, MAX_STATUS_MESSAGE_CHARS),
            })),
        },
    }
}

fn parse_result(mut obj: Map<String, Value>) -> Result<Message, MalformedReason> {
    let Some(Value::Object(mut result)) = obj.remove("result") else {
        return Err(field("result", "a CallToolResult object"));
    };
    let content_ok = result
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks
                .iter()
                .all(|b| b.get("type").is_some_and(Value::is_string))
        });
    if !content_ok {
        return Err(field(
            "result.content",
            "an array of content blocks with a \"type\"",
        ));
    }
    if result.get("isError").is_some_and(|v| !v.is_boolean()) {
        return Err(field("result.isError", "a boolean"));
    }
    match result.get("resultType") {
        None => {
            // `docs/DESIGN.md#result-type`: the inlined result always carries resultType "complete".
            result.insert("resultType".into(), Value::from("complete"));
        }
        Some(Value::String(t)) if t == "complete" => {}
        Some(_) => return Err(field("result.resultType", "\"complete\" when present")),
    }
    let bytes = serialized_len(&result);
    if bytes > MAX_RESULT_BYTES {
        return Ok(Message::ResultTooLarge { bytes });
    }
    Ok(Message::Result { result })
}

fn parse_error(mut obj: Map<String, Value>) -> Result<Message, MalformedReason> {
    let error = obj.remove("error").unwrap_or(Value::Null);
    if error.get("code").and_then(Value::as_i64).is_none() {
        return Err(field("error.code", "an integer"));
    }
    if !error.get("message").is_some_and(Value::is_string) {
        return Err(field("error.message", "a string"));
    }
    let mut error: TaskError =
        serde_json::from_value(error).map_err(|_| field("error", "a JSON-RPC error object"))?;
    error.message = shorten(&error.message, MAX_STATUS_MESSAGE_CHARS);
    error.data = error.data.map(bound_error_data);
    Ok(Message::Error { error })
}

fn serialized_len(map: &Map<String, Value>) -> usize {
    // Serializing a Map cannot fail: its keys are strings.
    serde_json::to_vec(map).map_or(usize::MAX, |v| v.len())
}

/// Cuts `text` to at most `max` characters, marking the cut with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let keep = max.saturating_sub(1);
            let mut out: String = text.chars().take(keep).collect();
            out.push('…');
            out
        }
    }
}

#[cfg(test)]
mod tests;
