//! The MCP front end as a client sees it: one JSON-RPC request per POST, with the headers and
//! `_meta` of protocol revision 2026-07-28 and the Tasks extension declared
//! (https://modelcontextprotocol.github.io/ext-tasks/specification/2026-07-28/tasks.html).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_task_operator_crds::wire::sse::sse_messages;
use serde_json::{Map, Value, json};

use crate::Error;

/// The protocol revision this client speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The Tasks extension identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Longest answer read from the front end (its own request limit is 1 MiB; a task's result
/// can be larger).
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A client of one front end URL, for one caller.
pub struct Front {
    url: String,
    /// The Host header, when it is not the URL's.
    host: Option<String>,
    token: Option<String>,
    http: HttpClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Front {
    /// A client for `url` (http or https, the system's CA roots), sending `host` as the Host
    /// header and `token` as a bearer token when given.
    pub fn new(url: &str, host: Option<String>, token: Option<String>) -> Result<Self, Error> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| Error::Front(format!("cannot read the system's CA roots: {e}")))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            url: url.to_owned(),
            host,
            token,
            http: HttpClient::builder(TokioExecutor::new()).build(connector),
        })
    }

    /// Sends `method` with `params` and returns its `result`; a JSON-RPC error becomes
    /// [`Error::Rpc`] with the front end's code and message.
    pub async fn request(&self, method: &str, mut params: Value) -> Result<Value, Error> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": { TASKS_EXTENSION: {} },
                "elicitation": { "form": {}, "url": {} },
            },
            "io.modelcontextprotocol/clientInfo": {
                "name": "kubectl-mcp",
                "version": env!("CARGO_PKG_VERSION"),
            },
        });
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let mut request = hyper::Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        if let Some(host) = &self.host {
            request = request.header("host", host);
        }
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| Error::Front(format!("bad front end URL {}: {e}", self.url)))?;
        let response = tokio::time::timeout(REQUEST_TIMEOUT, self.http.request(request))
            .await
            .map_err(|_| Error::Front(format!("{method}: no answer from {} in 60 s", self.url)))?
            .map_err(|e| Error::Front(format!("{method}: cannot reach {}: {e}", self.url)))?;
        let status = response.status();
        let text = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| Error::Front(format!("{method}: reading the answer: {e}")))?
            .to_bytes();
        let text = String::from_utf8_lossy(&text);
        let message = json_message(&text).ok_or_else(|| {
            let shown: String = text.chars().take(300).collect();
            Error::Front(format!("{method}: HTTP {status}: {shown}"))
        })?;
        if let Some(error) = message.get("error") {
            return Err(Error::Rpc {
                code: error["code"].as_i64().unwrap_or_default(),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            });
        }
        message
            .get("result")
            .cloned()
            .ok_or_else(|| Error::Front(format!("{method}: an answer without a result: {message}")))
    }

    /// The tools the front end serves to this caller, by MCP name.
    pub async fn tools(&self) -> Result<Map<String, Value>, Error> {
        let listed = self.request("tools/list", json!({})).await?;
        let tools = listed["tools"].as_array().cloned().unwrap_or_default();
        Ok(tools
            .into_iter()
            .filter_map(|t| Some((t["name"].as_str()?.to_owned(), t)))
            .collect())
    }
}

/// The JSON-RPC message of an answer: the body itself, or for a `text/event-stream` answer the
/// last `data:` message that carries a result or an error.
fn json_message(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return value.is_object().then_some(value);
    }
    sse_messages(text)
        .into_iter()
        .rev()
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_json_answer_is_the_message() {
        let got = json_message(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#);
        assert_eq!(got.unwrap()["result"]["a"], 1);
    }

    #[test]
    fn an_event_stream_answer_is_its_last_result() {
        let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n\
                    data: {\"jsonrpc\":\"2.0\",\"id\":1,\n\
                    data: \"result\":{\"b\":2}}\n\n";
        assert_eq!(json_message(text).unwrap()["result"]["b"], 2);
    }

    #[test]
    fn text_that_is_no_message_is_none() {
        assert_eq!(json_message("Unauthorized"), None);
        assert_eq!(json_message("[1,2]"), None);
    }
}
