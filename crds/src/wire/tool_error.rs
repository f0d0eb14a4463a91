//! The JSON-RPC error a failed task shows on the wire. A tool's `{"mcp":"error"}` chooses its
//! own code; codes the JSON-RPC and MCP specifications reserve (and codes no JSON-RPC error can
//! carry) would make this server claim an error it did not have, such as a bare -32021 without
//! `data.requiredCapabilities`. They become a generic -32603 that keeps what the tool said.

use serde_json::{Map, Value, json};

use crate::TaskError;

/// The JSON-RPC "Internal error" code, which a reserved tool code becomes.
pub const INTERNAL_ERROR: i64 = -32603;
/// The message of a tool error whose code was replaced.
pub const TOOL_ERROR_MESSAGE: &str =
    "Internal error: the tool reported an error with a reserved code";
/// The codes of the JSON-RPC 2.0 specification that a tool may use as they are: parse error,
/// invalid request, method not found, invalid params, internal error.
const STANDARD_CODES: [i64; 5] = [-32700, -32600, -32601, -32602, -32603];

/// Whether a tool may report `code` as it is: a standard JSON-RPC code, or any code outside
/// the range -32768..=-32000 that JSON-RPC reserves (MCP defines its own errors, -32020,
/// -32021, -32022, ..., inside it) that fits a JSON-RPC error's 32-bit code.
pub fn is_tool_code_allowed(code: i64) -> bool {
    STANDARD_CODES.contains(&code)
        || (!(-32768..=-32000).contains(&code) && i32::try_from(code).is_ok())
}

/// `error` as the wire shows it: unchanged when its code is allowed
/// ([`is_tool_code_allowed`]); otherwise -32603 with [`TOOL_ERROR_MESSAGE`] and the tool's
/// `code`, `message` and `data` (when it sent one) in `data.toolCode`, `data.toolMessage` and
/// `data.toolData`.
pub fn wire_error(error: &TaskError) -> TaskError {
    if is_tool_code_allowed(error.code) {
        return error.clone();
    }
    let mut data = Map::new();
    data.insert("toolCode".to_owned(), json!(error.code));
    data.insert("toolMessage".to_owned(), json!(error.message));
    if let Some(tool_data) = &error.data {
        data.insert("toolData".to_owned(), tool_data.clone());
    }
    TaskError {
        code: INTERNAL_ERROR,
        message: TOOL_ERROR_MESSAGE.to_owned(),
        data: Some(Value::Object(data)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(code: i64) -> TaskError {
        TaskError {
            code,
            message: "boom".to_owned(),
            data: Some(json!({"detail": 1})),
        }
    }

    #[test]
    fn standard_and_application_codes_pass_unchanged() {
        for code in [
            -32700, -32600, -32601, -32602, -32603, -32769, -31999, -1, 0, 1, 42,
        ] {
            assert_eq!(wire_error(&error(code)), error(code), "{code}");
        }
        assert_eq!(
            wire_error(&error(i64::from(i32::MIN))),
            error(i64::from(i32::MIN))
        );
    }

    #[test]
    fn reserved_and_out_of_range_codes_become_internal_errors_keeping_the_tool_error() {
        for code in [
            -32768,
            -32099,
            -32022,
            -32021,
            -32020,
            -32002,
            -32000,
            i64::MAX,
            -(1 << 40),
        ] {
            let mapped = wire_error(&error(code));
            assert_eq!(mapped.code, -32603, "{code}");
            assert_eq!(mapped.message, TOOL_ERROR_MESSAGE);
            assert_eq!(
                mapped.data,
                Some(json!({"toolCode": code, "toolMessage": "boom", "toolData": {"detail": 1}}))
            );
        }
        let bare = TaskError {
            code: -32021,
            message: "needs tasks".to_owned(),
            data: None,
        };
        assert_eq!(
            wire_error(&bare).data,
            Some(json!({"toolCode": -32021, "toolMessage": "needs tasks"}))
        );
    }
}
