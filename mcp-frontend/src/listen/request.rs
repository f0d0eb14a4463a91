//! Validation of a `subscriptions/listen` request: the header, `_meta`, version and
//! capability rules rmcp applies to every other method, in the order of
//! `docs/DESIGN.md#http-status`.

use axum::http::request::Parts;
use bytes::Bytes;
use rmcp::model::{
    ClientCapabilities, ErrorCode, ErrorData, ProtocolVersion, RequestId, RequestMetaObject,
};
use serde_json::Value;

use super::METHOD;
use crate::error::{Error, JsonRpcErrorResponse};

/// A validated listen request.
pub struct Listen {
    /// The listen request's JSON-RPC ID, which is also the subscription ID.
    pub id: RequestId,
    /// The task IDs asked for.
    pub task_ids: Vec<String>,
    /// Whether the filter named `taskIds` at all (then the ack echoes the accepted ones).
    pub wants_tasks: bool,
    /// `toolsListChanged: true`.
    pub tools_list_changed: bool,
}

/// [`validate_within`] allowing the most task IDs there is,
/// [`crate::bounds::LISTEN_TASK_IDS_CEILING`] (`fuzz/` drives this).
pub fn validate(parts: &Parts, body: &Bytes) -> Result<Listen, JsonRpcErrorResponse> {
    validate_within(parts, body, crate::bounds::LISTEN_TASK_IDS_CEILING)
}

/// Header, `_meta`, version and capability checks, in the order of
/// `docs/DESIGN.md#http-status`, and at most `max_task_ids` task IDs (checked here, so before
/// any of them is looked up).
pub fn validate_within(
    parts: &Parts,
    body: &Bytes,
    max_task_ids: usize,
) -> Result<Listen, JsonRpcErrorResponse> {
    let request: Value = serde_json::from_slice(body).map_err(|_| {
        JsonRpcErrorResponse::new(
            None,
            ErrorData::new(ErrorCode::PARSE_ERROR, "Parse error", None),
            false,
        )
    })?;
    let id: RequestId = request
        .get("id")
        .and_then(|id| serde_json::from_value(id.clone()).ok())
        .ok_or_else(|| {
            JsonRpcErrorResponse::new(
                None,
                ErrorData::invalid_request("subscriptions/listen needs an id", None),
                false,
            )
        })?;
    let fail = |error: ErrorData, meta_malformed: bool| {
        JsonRpcErrorResponse::new(Some(id.clone()), error, meta_malformed)
    };
    let params = request.get("params").and_then(Value::as_object);
    let meta: RequestMetaObject = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| serde_json::from_value(m.clone()).ok())
        .unwrap_or_default();
    let header_version = header(parts, "mcp-protocol-version");
    let body_version = meta.protocol_version();
    match (&header_version, &body_version) {
        (Some(h), Some(b)) if h != b.as_str() => {
            return Err(fail(
                header_mismatch(format!(
                    "MCP-Protocol-Version header {h} does not match _meta protocolVersion {b}"
                )),
                false,
            ));
        }
        (None, _) => {
            return Err(fail(
                header_mismatch("missing MCP-Protocol-Version header".to_owned()),
                false,
            ));
        }
        _ => {}
    }
    let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
    if !missing.is_empty() {
        let message = format!(
            "request _meta is missing or has malformed required fields: {}",
            missing.join(", ")
        );
        return Err(fail(ErrorData::invalid_params(message, None), true));
    }
    let Some(version) = body_version else {
        return Err(fail(
            ErrorData::invalid_params("request _meta has no protocolVersion", None),
            true,
        ));
    };
    if !crate::handler::SUPPORTED_VERSIONS.contains(&version) {
        return Err(fail(
            ErrorData::unsupported_protocol_version(version, crate::handler::SUPPORTED_VERSIONS),
            false,
        ));
    }
    if header(parts, "mcp-method").as_deref() != Some(METHOD) {
        return Err(fail(
            header_mismatch(format!("Mcp-Method header must be {METHOD}")),
            false,
        ));
    }
    let Some(filter) = params
        .and_then(|p| p.get("notifications"))
        .and_then(Value::as_object)
    else {
        return Err(fail(
            ErrorData::invalid_params("params.notifications must be an object", None),
            false,
        ));
    };
    if let Some(count) = filter
        .get("taskIds")
        .and_then(Value::as_array)
        .map(Vec::len)
        .filter(|count| *count > max_task_ids)
    {
        let error = Error::TooManyListenTasks {
            count,
            limit: max_task_ids,
        };
        return Err(fail(error.to_error_data(), false));
    }
    let task_ids = match filter.get("taskIds") {
        None => Vec::new(),
        Some(ids) => serde_json::from_value::<Vec<String>>(ids.clone()).map_err(|_| {
            fail(
                ErrorData::invalid_params(
                    "notifications.taskIds must be an array of strings",
                    None,
                ),
                false,
            )
        })?,
    };
    let tools_list_changed = match filter.get("toolsListChanged") {
        None => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => {
            return Err(fail(
                ErrorData::invalid_params("notifications.toolsListChanged must be a boolean", None),
                false,
            ));
        }
    };
    let declares = meta
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks());
    if !task_ids.is_empty() && !declares {
        // rmcp's own wording: the tools/call message ("tool ... runs only as a task") would
        // name the method as if it were a tool.
        let error = ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        );
        return Err(fail(error, false));
    }
    Ok(Listen {
        id,
        wants_tasks: filter.contains_key("taskIds"),
        task_ids,
        tools_list_changed,
    })
}

/// The header's single value, trimmed; `None` when absent, repeated or not text (all of
/// which fail the comparison that follows, as rmcp treats them).
fn header(parts: &Parts, name: &str) -> Option<String> {
    let mut values = parts.headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok().map(|v| v.trim().to_owned())
}

fn header_mismatch(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::HEADER_MISMATCH, message, None)
}
