//! Input requests the client cannot be asked, answered at once on its behalf.
//!
//! A tool may ask for a kind of input the creating `tools/call` did not declare (elicitation
//! from a client that declared only the tasks extension), or, from an older operator, in a
//! shape the MCP wire types cannot carry. The client is never shown such a request
//! (docs/CONFORMANCE.md, *Input a client cannot be asked*), so nobody could answer it and the
//! task would wait until its TTL.
//! Instead every replica watching the task writes an error answer for it into
//! `spec.inputResponses` (the same merge a `tasks/update` makes, so replicas doing it twice
//! change nothing); the operator hands it to the tool, which fails or goes on
//! (docs/tool-contract.md, "Input").

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_task_operator_crds::McpTask;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::store::TaskStore;
use crate::wire::check_carriable;

/// The JSON-RPC code of an answer to a request of an undeclared kind: MCP's
/// MissingRequiredClientCapability.
pub const MISSING_CAPABILITY_CODE: i64 = -32021;
/// The JSON-RPC code of an answer to a request the wire types cannot carry: invalid params.
pub const NOT_CARRIABLE_CODE: i64 = -32602;

/// The outstanding input requests of `task` its client cannot be shown, each with the answer
/// the tool gets instead: `{"error": {"code", "message", "data"?}}`, a JSON-RPC error object.
/// An undeclared kind is answered -32021 with `data.requiredCapabilities` naming what was
/// missing; a request the wire types cannot carry, -32602 saying why.
pub fn unanswerable_answers(task: &McpTask) -> BTreeMap<String, Value> {
    let declared = task.spec.client_capabilities.as_ref();
    task.outstanding_input_requests()
        .into_iter()
        .filter_map(|(key, request)| {
            let answer = if !mcp_task_operator_crds::wire::input_request_allowed(declared, request)
            {
                missing_capability(request)
            } else if let Err(reason) = check_carriable(request) {
                json!({ "error": {
                    "code": NOT_CARRIABLE_CODE,
                    "message": format!("the input request cannot be sent to an MCP client: {reason}"),
                }})
            } else {
                return None;
            };
            Some((key.to_owned(), answer))
        })
        .collect()
}

/// The -32021 answer to `request`, naming the capability its kind needs.
fn missing_capability(request: &Value) -> Value {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let required = match method {
        "elicitation/create" => {
            let mode = match request.pointer("/params/mode").and_then(Value::as_str) {
                Some("url") => "url",
                _ => "form",
            };
            json!({ "elicitation": { mode: {} } })
        }
        "sampling/createMessage" => json!({ "sampling": {} }),
        "roots/list" => json!({ "roots": {} }),
        _ => json!({}),
    };
    json!({ "error": {
        "code": MISSING_CAPABILITY_CODE,
        "message": format!(
            "Missing required client capability: the client that created the task did not \
             declare what {method} needs, so the request was not sent"
        ),
        "data": { "requiredCapabilities": required },
    }})
}

/// Answers the unanswerable requests of every task the store sees change, until `shutdown`.
/// The store replays every task when its watch (re)starts, so a request asked while no replica
/// was running is answered once one is.
pub async fn answer_unanswerable(tasks: Arc<dyn TaskStore>, shutdown: CancellationToken) {
    let mut changes = tasks.subscribe();
    loop {
        let change = tokio::select! {
            () = shutdown.cancelled() => return,
            change = changes.recv() => change,
        };
        match change {
            Ok(task) => answer(tasks.as_ref(), &task).await,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "task changes were missed; their unanswerable input requests are answered \
                     at the task's next change or on the next watch restart"
                );
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Writes the answers of [`unanswerable_answers`] for `task`, if any.
async fn answer(tasks: &dyn TaskStore, task: &McpTask) {
    if task.is_terminal() {
        return;
    }
    let answers = unanswerable_answers(task);
    if answers.is_empty() {
        return;
    }
    let id = task.task_id();
    let keys: Vec<&String> = answers.keys().collect();
    tracing::info!(
        task_id = id,
        ?keys,
        "answering input requests the client cannot be asked"
    );
    if let Err(error) = tasks.merge_input_responses(id, answers.clone()).await {
        tracing::warn!(task_id = id, error = %crate::error::ErrorChain(&error), "failed to answer unanswerable input requests");
    }
}

#[cfg(test)]
mod tests {
    use mcp_task_operator_crds::McpTask;
    use serde_json::{Value, json};

    use super::*;

    fn asking(capabilities: Value, requests: Value) -> McpTask {
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
            "metadata": {"name": "t", "creationTimestamp": "2026-08-01T12:00:00Z"},
            "spec": {"tool": "x", "owner": "o", "clientCapabilities": capabilities},
            "status": {"status": "input_required", "inputRequests": requests},
        }))
        .expect("an McpTask")
    }

    fn form(message: &str) -> Value {
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
    }

    #[test]
    fn a_request_of_an_undeclared_kind_is_answered_with_the_missing_capability() {
        let task = asking(
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
            json!({"go": form("Go?"), "roots": {"method": "roots/list"}}),
        );
        let answers = unanswerable_answers(&task);
        assert_eq!(answers.len(), 2);
        assert_eq!(answers["go"]["error"]["code"], -32021);
        assert_eq!(
            answers["go"]["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(
            answers["roots"]["error"]["data"]["requiredCapabilities"],
            json!({"roots": {}})
        );
    }

    #[test]
    fn declared_kinds_and_answered_keys_are_left_to_the_client() {
        let declared = asking(
            json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
            json!({"go": form("Go?")}),
        );
        assert!(unanswerable_answers(&declared).is_empty());
        let mut answered = asking(json!({}), json!({"go": form("Go?")}));
        answered.spec.input_responses =
            Some([("go".to_owned(), json!({"action": "accept"}).into())].into());
        assert!(unanswerable_answers(&answered).is_empty());
    }

    #[test]
    fn a_request_the_wire_types_cannot_carry_is_answered_invalid_params() {
        let task = asking(
            json!({"elicitation": {"form": {}}}),
            json!({"go": {"method": "elicitation/create", "params": {"mode": "form",
                "message": "Go?", "requestedSchema": {"type": "object",
                "properties": {"when": {"type": "string", "format": "no-such-format"}}}}}}),
        );
        let answers = unanswerable_answers(&task);
        assert_eq!(answers["go"]["error"]["code"], -32602, "{answers:?}");
    }
}
