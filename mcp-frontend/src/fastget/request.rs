//! The light parse of a `tasks/get` poll: one pass over the body into borrowed fields, and
//! the headers rmcp would check. It recognises only the plain form every client sends; any
//! other request (another method, an extra or missing member, a header rmcp would refuse or
//! could act on) is `None`, and takes the full path.

use std::borrow::Cow;

use axum::http::{HeaderMap, header};
use rmcp::model::{ClientCapabilities, Implementation, RequestId};
use serde::Deserialize;

/// The protocol version the fast path serves; every other version takes the full path.
const VERSION: &str = "2026-07-28";

/// A recognised `tasks/get` poll.
#[derive(Debug, PartialEq)]
pub struct Poll {
    /// The JSON-RPC request ID, as rmcp reads it.
    pub id: RequestId,
    /// `params.taskId`.
    pub task_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(rename = "taskId", borrow)]
    task_id: Cow<'a, str>,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

/// `_meta` with exactly the three keys of a 2026-07-28 request; anything else (a trace
/// context, a progress token, a log level) takes the full path.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: Cow<'a, str>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    #[allow(dead_code, reason = "read only to check it")]
    client_info: Implementation,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: ClientCapabilities,
}

/// The poll in `body` with `headers`, when both have the plain form; `None` otherwise.
pub fn parse(headers: &HeaderMap, body: &[u8]) -> Option<Poll> {
    // Cheap refusals first: most requests that are not polls stop at the method header.
    if single(headers, "mcp-method")? != b"tasks/get"
        || single(headers, "mcp-protocol-version")? != VERSION.as_bytes()
    {
        return None;
    }
    if !plain_headers(headers) {
        return None;
    }
    let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
    let meta = &envelope.params.meta;
    // clientInfo is read as rmcp's `Implementation` (so a malformed one takes the full path)
    // and not used further.
    let ok = envelope.jsonrpc == "2.0"
        && envelope.method == "tasks/get"
        && meta.protocol_version == VERSION
        && meta.client_capabilities.supports_tasks()
        && single(headers, "mcp-name")? == envelope.params.task_id.as_bytes();
    ok.then(|| Poll {
        id: envelope.id,
        task_id: envelope.params.task_id.into_owned(),
    })
}

/// The one value of header `name`; `None` when it is absent or repeated.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h [u8]> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    values.next().is_none().then_some(first.as_bytes())
}

/// The headers rmcp checks, in their plain form: `Content-Type: application/json` (any
/// parameters), an `Accept` naming both `application/json` and `text/event-stream` without
/// parameters, and no
/// `MCP-*` header besides `Mcp-Method`, `Mcp-Name` and `MCP-Protocol-Version` (no session,
/// no `Mcp-Param-*`).
fn plain_headers(headers: &HeaderMap) -> bool {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    let (mut accepts_json, mut accepts_sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        // Parameters (weights, quoted strings) are for rmcp's reading of Accept to weigh.
        let Some(value) = value.to_str().ok().filter(|v| !v.contains([';', '"'])) else {
            return false;
        };
        for item in value.split(',') {
            let essence = item.trim();
            accepts_json |= essence.eq_ignore_ascii_case("application/json");
            accepts_sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    let other_mcp = headers.keys().any(|name| {
        let name = name.as_str();
        name.starts_with("mcp-")
            && !matches!(name, "mcp-method" | "mcp-name" | "mcp-protocol-version")
    });
    json && accepts_json && accepts_sse && !other_mcp
}

/// The JSON of `id` as rmcp writes it in a response.
pub fn id_json(id: &RequestId) -> Vec<u8> {
    serde_json::to_vec(id).unwrap_or_else(|_| b"null".to_vec())
}
