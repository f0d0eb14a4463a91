//! MCP requests as the load generator sends them: the bytes and headers of the tests' raw
//! client ([`mcp_task_operator_harness::mcp_client::framed`]).

use std::net::SocketAddr;

use bytes::Bytes;
use mcp_task_operator_harness::mcp_client::{PROTOCOL_VERSION, framed};
use serde_json::json;

use crate::load::{Request, Target};

/// A `tasks/get` target for `addr` that cycles through `ids`.
pub fn tasks_get(addr: SocketAddr, ids: &[String]) -> Target {
    let requests = ids
        .iter()
        .map(|id| {
            let (headers, body) = framed("tasks/get", json!({ "taskId": id }), true);
            Request {
                headers: headers
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
                body: Bytes::from(body.to_string()),
            }
        })
        .collect();
    Target {
        addr,
        path: "/mcp".to_owned(),
        headers: vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            (
                "mcp-protocol-version".to_owned(),
                PROTOCOL_VERSION.to_owned(),
            ),
        ],
        requests,
    }
}

/// The address part of `http://127.0.0.1:PORT/mcp`.
pub fn addr_of(url: &str) -> Result<SocketAddr, String> {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("{url} has no IP address and port"))
}
