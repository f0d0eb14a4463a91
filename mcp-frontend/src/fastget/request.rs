//! The light parse of a `tasks/get` poll: one pass over the body into borrowed fields, and
//! the headers rmcp would check. It recognises only the plain form every client sends; any
//! other request (another method, an extra or missing member, a header rmcp would refuse or
//! could act on) is `None`, and takes the full path.

use std::borrow::Cow;

use axum::http::{HeaderMap, header};
use rmcp::model::{ClientCapabilities, Implementation, RequestId};
use serde::Deserialize;

/// The protocol version the fast paths serve; every other version takes the full path.
pub(crate) const VERSION: &str = "2026-07-28";

/// A recognised `tasks/get` poll.
#[derive(Debug, PartialEq)]
pub struct Poll {
    /// The JSON-RPC request ID, as rmcp reads it.
    pub id: RequestId,
    /// `params.taskId`.
    pub task_id: String,
    /// Whether the client accepts a gzip-coded answer (`Accept-Encoding`).
    pub accepts_gzip: bool,
}

/// A JSON-RPC request with nothing but its four members; `P` reads the params.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope<'a, P> {
    #[serde(borrow)]
    pub jsonrpc: Cow<'a, str>,
    pub id: RequestId,
    #[serde(borrow)]
    pub method: Cow<'a, str>,
    pub params: P,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(rename = "taskId", borrow)]
    task_id: Cow<'a, str>,
    #[serde(rename = "_meta", borrow)]
    meta: Meta<'a>,
}

/// `_meta` with exactly the three keys of a 2026-07-28 request; anything else (a trace
/// context, a progress token, a log level) takes the full path.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: Cow<'a, str>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    #[allow(dead_code, reason = "read only to check it")]
    client_info: Implementation,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
}

impl Meta<'_> {
    /// Whether the request is of [`VERSION`] and declares the tasks extension.
    pub fn declares_tasks(&self) -> bool {
        self.protocol_version == VERSION && self.client_capabilities.supports_tasks()
    }
}

/// Whether `headers` name `method` and [`VERSION`] (one value each) and are otherwise plain
/// ([`plain_headers`]): the cheap refusals, before the body is parsed.
pub(crate) fn plain_request_headers(headers: &HeaderMap, method: &str) -> bool {
    single(headers, "mcp-method") == Some(method.as_bytes())
        && single(headers, "mcp-protocol-version") == Some(VERSION.as_bytes())
        && plain_headers(headers)
}

/// The poll in `body` with `headers`, when both have the plain form; `None` otherwise.
pub fn parse(headers: &HeaderMap, body: &[u8]) -> Option<Poll> {
    // Cheap refusals first: most requests that are not polls stop at the method header.
    if !plain_request_headers(headers, "tasks/get") {
        return None;
    }
    let envelope: Envelope<'_, Params<'_>> = serde_json::from_slice(body).ok()?;
    // clientInfo is read as rmcp's `Implementation` (so a malformed one takes the full path)
    // and not used further.
    let ok = envelope.jsonrpc == "2.0"
        && envelope.method == "tasks/get"
        && envelope.params.meta.declares_tasks()
        && single(headers, "mcp-name")? == envelope.params.task_id.as_bytes();
    ok.then(|| Poll {
        id: envelope.id,
        task_id: envelope.params.task_id.into_owned(),
        accepts_gzip: super::gzip::accepts(headers),
    })
}

/// The one value of header `name`; `None` when it is absent or repeated.
pub(crate) fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h [u8]> {
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
