//! The first look at a POST body to `/mcp`: its JSON-RPC method (for routing) and whether it
//! is one JSON-RPC message at all, before rmcp reads it.
//!
//! rmcp answers a body it cannot read with HTTP 415 and a plain-text serde error, as if the
//! content type were wrong; the specification asks for (`docs/DESIGN.md#http-status`) HTTP 400 with `-32700` (not
//! JSON) or `-32600` (JSON, but not a JSON-RPC message). Pure, so `fuzz/` drives it directly.

use std::borrow::Cow;

use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, RequestId};
use serde::Deserialize;
use serde_json::Value;

use crate::error::JsonRpcErrorResponse;

/// The JSON-RPC method of a body, reading nothing else; `None` when the body is not a JSON
/// object with a string `method`.
pub fn peek_method(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
    }
    serde_json::from_slice::<Peek<'_>>(body)
        .ok()
        .and_then(|p| p.method)
        .map(Cow::into_owned)
}

/// Reads `body` as one JSON-RPC message, exactly as rmcp will. A body that is not JSON
/// (truncated, invalid UTF-8, nested deeper than the parser's limit of 128, trailing bytes) is
/// `-32700` "Parse error: <why>"; JSON that is not a JSON-RPC message (a batch, a missing
/// `method`, params of the wrong shape) is `-32600` "Invalid Request: <why>", answered to the
/// request's `id` when one can be read; a batch (MCP 2026-07-28 has none) says so. Both
/// travel with HTTP 400.
pub fn check_message(body: &[u8]) -> Result<ClientJsonRpcMessage, Box<JsonRpcErrorResponse>> {
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        Ok(message) => return Ok(message),
        Err(error) => error,
    };
    // NB: parsed a second time only on failure; IgnoredAny has the same recursion limit.
    let (error, id) = match serde_json::from_slice::<Value>(body) {
        Err(error) => (
            ErrorData::new(
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {error}"),
                None,
            ),
            None,
        ),
        Ok(Value::Array(_)) => {
            let message =
                "Invalid Request: JSON-RPC batches are not supported; send one message per POST";
            (
                ErrorData::new(ErrorCode::INVALID_REQUEST, message, None),
                None,
            )
        }
        Ok(value) => {
            let id = value
                .get("id")
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            let message = format!(
                "Invalid Request: not a JSON-RPC 2.0 request or notification this server reads: {error}"
            );
            (
                ErrorData::new(ErrorCode::INVALID_REQUEST, message, None),
                id,
            )
        }
    };
    Err(Box::new(JsonRpcErrorResponse::new(id, error, false)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &[u8]) -> (u16, i32, String) {
        let refused = check_message(body).expect_err("refused");
        (
            refused.status.as_u16(),
            refused.body.error.code.0,
            refused.body.error.message.to_string(),
        )
    }

    #[test]
    fn bodies_that_are_not_json_are_parse_errors_saying_why() {
        let cases: [(&[u8], &str); 5] = [
            (
                b"",
                "Parse error: EOF while parsing a value at line 1 column 0",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gr"#,
                "Parse error: EOF while parsing a string at line 1 column 66",
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\"}",
                "Parse error: invalid unicode code point at line 1 column 41",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"} {}"#,
                "Parse error: trailing characters at line 1 column 48",
            ),
            (
                &[b'['; 200],
                "Parse error: recursion limit exceeded at line 1 column 128",
            ),
        ];
        for (body, message) in cases {
            assert_eq!(refused(body), (400, -32700, message.to_owned()));
        }
    }

    #[test]
    fn json_that_is_no_json_rpc_message_is_an_invalid_request() {
        let batch = refused(br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#);
        assert_eq!(
            batch,
            (
                400,
                -32600,
                "Invalid Request: JSON-RPC batches are not supported; send one message per POST"
                    .to_owned()
            )
        );
        for body in [r#"{"jsonrpc":"2.0","id":1}"#, r#""tools/list""#] {
            let (status, code, message) = refused(body.as_bytes());
            assert_eq!((status, code), (400, -32600), "{body}");
            assert!(
                message.starts_with("Invalid Request: "),
                "{body}: {message}"
            );
        }
        let refused = check_message(br#"{"jsonrpc":"2.0","id":7,"method":1}"#).expect_err("bad");
        assert_eq!(refused.body.id, Some(RequestId::Number(7)));
    }

    #[test]
    fn valid_messages_pass_and_peek_finds_their_method() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        assert!(check_message(body).is_ok());
        assert_eq!(peek_method(body).as_deref(), Some("tools/list"));
        assert_eq!(peek_method(b"\xff"), None);
    }
}
