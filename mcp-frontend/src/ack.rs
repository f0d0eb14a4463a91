//! `_meta["io.modelcontextprotocol/serverInfo"]` on the `tasks/update` and `tasks/cancel`
//! acknowledgements. rmcp 3.11 builds these itself (its `ServerHandler::update_task` and
//! `cancel_task` return `()`), so the answer is completed here, after rmcp has serialized it.

use axum::body::{Body, HttpBody as _, to_bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;

use serde_json::Value;

use crate::state::server_info_meta;

/// The largest acknowledgement body read back (an ack is about 100 bytes); a larger or
/// unreadable body is passed on unchanged.
const MAX_ACK_BYTES: usize = 16 * 1024;

/// Whether answers to `method` are acknowledgements built by rmcp.
pub fn is_task_ack_method(method: Option<&str>) -> bool {
    matches!(method, Some("tasks/update" | "tasks/cancel"))
}

/// Adds `_meta` with this server's `serverInfo` to the `result` of a JSON-RPC response that
/// has none. Errors, non-JSON bodies and results that already carry `_meta` are unchanged.
pub async fn with_server_info(response: Response) -> Response {
    // Only a body known to be small is read back; anything else passes unchanged.
    let small = response
        .body()
        .size_hint()
        .upper()
        .is_some_and(|n| n <= MAX_ACK_BYTES as u64);
    if response.status() != StatusCode::OK || !small {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ACK_BYTES).await else {
        tracing::warn!("task acknowledgement body could not be read");
        return Response::from_parts(parts, Body::empty());
    };
    let Some(completed) = add_server_info(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(completed))
}

/// The serialized message with `result._meta` set, or `None` when it needs no change.
fn add_server_info(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    if result.contains_key("_meta") {
        return None;
    }
    let meta = serde_json::to_value(server_info_meta()).ok()?;
    result.insert("_meta".to_owned(), meta);
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_ack_without_meta_gets_server_info_and_errors_stay_unchanged() {
        let ack = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}});
        let done: Value =
            serde_json::from_slice(&add_server_info(&serde_json::to_vec(&ack).unwrap()).unwrap())
                .unwrap();
        assert_eq!(
            done["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-task-operator"
        );
        assert_eq!(done["result"]["resultType"], "complete");
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "x"}});
        assert!(add_server_info(&serde_json::to_vec(&error).unwrap()).is_none());
        assert!(add_server_info(b"not json").is_none());
    }
}
