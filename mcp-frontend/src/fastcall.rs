//! The `tools/call` fast path: a call in the plain form a tasks client sends is served by the
//! same code as through rmcp ([`crate::handler::serve_call`]), without rmcp's per-request
//! service (a service and a one-shot transport spawned per request, the answer passed back
//! through channels) and its second parse of the body.
//!
//! It runs in front of the router, after the layer stack's checks ([`crate::fastget::front`]).
//! Only a request rmcp would hand to the handler unchanged is taken: `Mcp-Method: tools/call`,
//! `MCP-Protocol-Version` and `_meta` of 2026-07-28 with exactly the three required keys (no
//! `traceparent`, no progress token), the tasks extension declared, `Mcp-Name` equal to the
//! tool's name, a tool in the catalog whose input schema maps no argument to a header
//! (`x-mcp-header`), params with nothing but `name`, `arguments` and `_meta`. Everything else
//! goes to the router untouched, before anything is spent. A taken call is answered as rmcp
//! answers it: a call that waits for its task (a synchronous tool, or `immediateResultMs`)
//! runs in its own task, cancelled when the caller goes away before the answer; a call
//! answered with its handle runs in the request's own task. The result or error is serialized
//! as rmcp's JSON-RPC message, with rmcp's HTTP status for the error codes it maps
//! (`src/tests/fastcall.rs` compares the two paths byte for byte).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ErrorCode, JsonObject, ProtocolVersion, RequestId,
    RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use mcp_task_operator_crds::TaskSupport;

use crate::auth::Identity;
use crate::fastget::request::{Envelope, Meta, plain_request_headers, single};
use crate::request::CallContext;
use crate::state::AppState;

/// The method the fast path serves.
pub const METHOD: &str = "tools/call";

/// A recognised `tools/call`.
#[derive(Debug)]
pub struct Call {
    /// The JSON-RPC request ID.
    pub id: RequestId,
    /// The params as rmcp reads them.
    pub params: CallToolRequestParams,
    /// The capabilities the request declared.
    pub capabilities: ClientCapabilities,
    /// Whether the tool makes the call wait for its task (a synchronous tool, or one with
    /// `immediateResultMs`), so that a caller going away must cancel the task.
    pub waits: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta", borrow)]
    meta: Meta<'a>,
}

/// The call in `body` with `headers`, when both have the plain form and the catalog of `state`
/// serves the tool without header-mapped arguments; `None` otherwise.
pub fn parse(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Option<Call> {
    if !plain_request_headers(headers, METHOD) {
        return None;
    }
    let envelope: Envelope<'_, Params<'_>> = serde_json::from_slice(body).ok()?;
    let Params {
        name,
        arguments,
        meta,
    } = envelope.params;
    let plain = envelope.jsonrpc == "2.0"
        && envelope.method == METHOD
        && meta.declares_tasks()
        // A Base64-wrapped header value (`=?base64?...?=`) is rmcp's to decode.
        && single(headers, "mcp-name")? == name.as_bytes()
        && !name.starts_with("=?");
    let entry = state.tools.snapshot().get(&name)?;
    let waits = entry.task_support == TaskSupport::Forbidden || !entry.immediate_result.is_zero();
    (plain && !entry.maps_headers).then(|| {
        let mut params = CallToolRequestParams::new(name);
        params.arguments = arguments;
        Call {
            id: envelope.id,
            params,
            capabilities: meta.client_capabilities,
            waits,
        }
    })
}

/// Serves `call` by `identity` as rmcp's stateless service does, and records it as the router
/// does (`arrived` is when the request reached the front end) and in `state.fast_calls`.
pub async fn answer(
    state: &Arc<AppState>,
    identity: Arc<Identity>,
    call: Call,
    arrived: Instant,
) -> Response {
    let Call {
        id,
        params,
        capabilities,
        waits,
    } = call;
    let context = CallContext {
        identity,
        protocol_version: Some(ProtocolVersion::V_2026_07_28),
        client_capabilities: Some(capabilities),
        ct: CancellationToken::new(),
    };
    if let Some(served) = &state.fast_calls {
        served.fetch_add(1, Ordering::Relaxed);
    }
    let meta = RequestMetaObject::new();
    let outcome = if waits {
        // As rmcp: the handler runs in its own task, and a caller that goes away before the
        // answer (this future dropped) cancels it, which cancels the task the call waits for.
        let cancel_on_drop = context.ct.clone().drop_guard();
        let served = Arc::clone(state);
        let outcome = tokio::spawn(async move {
            crate::handler::serve_call(&served, params, Ok(context), &meta).await
        })
        .await;
        cancel_on_drop.disarm();
        outcome
    } else {
        // A call answered with its handle waits for nothing but the create, so it runs here:
        // a spawn and its wake-ups cost more than the rest of the call (about 60 µs against
        // 10 µs on this project's machines). A caller that goes away during the create
        // leaves a task nobody polls, as through rmcp, whose handler finishes the create.
        Ok(crate::handler::serve_call(state, params, Ok(context), &meta).await)
    };
    let message = match outcome {
        Ok(Ok(response)) => ServerJsonRpcMessage::response(ServerResult::from(response), id),
        Ok(Err(error)) => ServerJsonRpcMessage::error(error, Some(id)),
        Err(panicked) => {
            tracing::error!(error = %panicked, "tools/call handler failed");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let status = http_status(&message);
    let mut response = match serde_json::to_vec(&message) {
        Ok(body) => (status, Body::from(body)).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if crate::routes::unavailable_reason(state).is_some() {
        // As the router: the client's retry should open a new connection.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    state
        .metrics
        .observe(Some(METHOD), response.status().as_u16(), arrived.elapsed());
    response
}

/// The HTTP status rmcp 3.11 gives a JSON-RPC answer on the per-request (2026-07-28) path:
/// 400 for an unsupported version, a missing client capability and a header mismatch, 404 for
/// an unknown method, 200 otherwise (the request's `_meta` is well formed here).
fn http_status(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}
