//! A small raw MCP 2026-07-28 client for the front end: JSON-RPC over HTTP/1.1 with the headers
//! and `_meta` the protocol asks for, and `subscriptions/listen` streams. Raw on purpose: the
//! tests assert on exact wire bytes, status codes and error objects.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
pub use mcp_task_operator_crds::wire::sse::sse_messages;
use serde_json::{Value, json};

/// The protocol revision the front end speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The Tasks extension identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// How long a test waits for anything the front end or the stand-in operator does.
pub const WAIT: Duration = Duration::from_secs(60);

/// A plain HTTP/1.1 client.
pub fn http_client() -> HttpClient<HttpConnector, Full<Bytes>> {
    HttpClient::builder(TokioExecutor::new()).build_http()
}

/// An HTTP answer to one JSON-RPC request.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// The JSON-RPC response (for SSE answers, the message carrying the request's id; for a
    /// body that is not JSON, such as a 401's, the text as a string).
    pub body: Value,
    /// The `WWW-Authenticate` header, if any (a 401's challenge).
    pub challenge: Option<String>,
}

impl Reply {
    /// The `result`, or a panic showing the reply.
    pub fn result(&self) -> &Value {
        assert!(
            self.body.get("result").is_some(),
            "expected a result, got HTTP {}: {}",
            self.status,
            self.body
        );
        &self.body["result"]
    }

    /// The JSON-RPC error code, if the reply is an error.
    pub fn error_code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }

    /// The JSON-RPC error message ("" when none).
    pub fn error_message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or_default()
    }
}

/// A raw MCP client for one front end URL and one caller.
#[derive(Clone)]
pub struct Mcp {
    url: String,
    token: Option<String>,
    client: HttpClient<HttpConnector, Full<Bytes>>,
}

impl Mcp {
    /// A client for `url` without credentials.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            token: None,
            client: http_client(),
        }
    }

    /// The same client sending `Authorization: Bearer <token>`.
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// The same client talking to another front end.
    pub fn with_url(mut self, url: &str) -> Self {
        url.clone_into(&mut self.url);
        self
    }

    /// Sends `method` with `params` plus the required `_meta` (declaring the Tasks extension
    /// when `declare_tasks`) and the matching `MCP-Protocol-Version`, `Mcp-Method` and
    /// `Mcp-Name` headers.
    pub async fn request(&self, method: &str, params: Value, declare_tasks: bool) -> Reply {
        let (headers, body) = framed(method, params, declare_tasks);
        self.send(&headers, &body).await
    }

    /// [`Mcp::request`], with a connection failure as an error.
    pub async fn try_request(
        &self,
        method: &str,
        params: Value,
        declare_tasks: bool,
    ) -> Result<Reply, hyper_util::client::legacy::Error> {
        let (headers, body) = framed(method, params, declare_tasks);
        self.try_send(&headers, &body).await
    }

    /// Posts `body` with the protocol version header plus `headers`, and reads the answer.
    pub async fn send(&self, headers: &[(&str, String)], body: &Value) -> Reply {
        self.try_send(headers, body)
            .await
            .unwrap_or_else(|e| panic!("POST {} failed: {e}", self.url))
    }

    /// [`Mcp::send`], with a connection failure (say, a killed front end) as an error.
    pub async fn try_send(
        &self,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<Reply, hyper_util::client::legacy::Error> {
        let response = self.post(headers, body).await?;
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let sse = is_sse(&response);
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("read response body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        let body = if sse {
            sse_messages(&text)
                .into_iter()
                .rfind(|m| m.get("id").is_some())
                .unwrap_or(Value::Null)
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text.into_owned()))
        };
        Ok(Reply {
            status,
            body,
            challenge,
        })
    }

    async fn post(
        &self,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<hyper::Response<Incoming>, hyper_util::client::legacy::Error> {
        let mut request = hyper::Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("valid request");
        self.client.request(request).await
    }

    /// `tools/call` of `name` with `arguments`, declaring the Tasks extension.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Reply {
        let params = json!({ "name": name, "arguments": arguments });
        self.request("tools/call", params, true).await
    }

    /// `tools/call` that must create a task; returns its ID.
    pub async fn start_task(&self, name: &str, arguments: Value) -> String {
        let reply = self.call_tool(name, arguments).await;
        let result = reply.result();
        assert_eq!(
            result["resultType"], "task",
            "expected a task: {}",
            reply.body
        );
        result["taskId"].as_str().expect("taskId").to_owned()
    }

    /// `tasks/get` (declaring).
    pub async fn get_task(&self, id: &str) -> Reply {
        self.request("tasks/get", json!({ "taskId": id }), true)
            .await
    }

    /// `tasks/cancel` (declaring).
    pub async fn cancel_task(&self, id: &str) -> Reply {
        self.request("tasks/cancel", json!({ "taskId": id }), true)
            .await
    }

    /// `tasks/update` with `inputResponses` (declaring).
    pub async fn update_task(&self, id: &str, responses: Value) -> Reply {
        let params = json!({ "taskId": id, "inputResponses": responses });
        self.request("tasks/update", params, true).await
    }

    /// Polls `tasks/get` until the task's `status` is `status`; returns that `tasks/get`
    /// result. Panics on an error reply or after [`WAIT`].
    pub async fn wait_status(&self, id: &str, status: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let reply = self.get_task(id).await;
            let result = reply.result().clone();
            if result["status"] == status {
                return result;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task {id} not {status} in {WAIT:?}; last: {result}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Names in `tools/list`.
    pub async fn tool_names(&self) -> Vec<String> {
        let reply = self.request("tools/list", json!({}), false).await;
        reply.result()["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until `tools/list` names every tool in `names`.
    pub async fn wait_for_tools(&self, names: &[&str]) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let listed = self.tool_names().await;
            if names.iter().all(|n| listed.iter().any(|l| l == n)) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "tools/list never showed {names:?}; it has {listed:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Opens `subscriptions/listen` for `task_ids` (declaring) with the given JSON-RPC id.
    pub async fn listen(&self, id: &str, task_ids: &[&str]) -> Listen {
        let (headers, body) = listen_request(id, task_ids);
        let response = self
            .post(&headers, &body)
            .await
            .unwrap_or_else(|e| panic!("POST {} failed: {e}", self.url));
        assert_eq!(response.status(), 200, "listen refused");
        assert!(is_sse(&response), "listen did not answer with SSE");
        Listen {
            body: response.into_body(),
            buffer: String::new(),
        }
    }
}

impl Mcp {
    /// Opens `subscriptions/listen` for `task_ids` like [`Mcp::listen`]; a refusal (an answer
    /// that is not an event stream) comes back as its [`Reply`].
    pub async fn try_listen(&self, id: &str, task_ids: &[&str]) -> Result<Listen, Reply> {
        let (headers, body) = listen_request(id, task_ids);
        let response = self
            .post(&headers, &body)
            .await
            .unwrap_or_else(|e| panic!("POST {} failed: {e}", self.url));
        if response.status() == 200 && is_sse(&response) {
            return Ok(Listen {
                body: response.into_body(),
                buffer: String::new(),
            });
        }
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("read response body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        Err(Reply {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text.into_owned())),
            challenge: None,
        })
    }
}

/// The `subscriptions/listen` request with JSON-RPC id `id` for `task_ids`, declaring the
/// Tasks extension, and its headers.
pub fn listen_request(
    id: &str,
    task_ids: &[impl AsRef<str>],
) -> ([(&'static str, String); 1], Value) {
    let task_ids: Vec<&str> = task_ids.iter().map(AsRef::as_ref).collect();
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {
            "notifications": { "taskIds": task_ids },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS_EXTENSION: {} } },
            },
        },
    });
    ([("mcp-method", "subscriptions/listen".to_owned())], body)
}

fn is_sse(response: &hyper::Response<Incoming>) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The JSON-RPC request and headers for `method`: `_meta` as the protocol requires, and
/// `Mcp-Method` plus `Mcp-Name` (the tool name or task ID). Public for the load generator of
/// `bench/`, which sends the same requests as these tests.
pub fn framed(
    method: &str,
    mut params: Value,
    declare_tasks: bool,
) -> (Vec<(&'static str, String)>, Value) {
    let capabilities = if declare_tasks {
        json!({ "extensions": { TASKS_EXTENSION: {} }, "elicitation": { "form": {} } })
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "mto-tests", "version": "0" },
    });
    let mut headers = vec![("mcp-method", method.to_owned())];
    if let Some(name) = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
    {
        headers.push(("mcp-name", name.to_owned()));
    }
    let body = json!({ "jsonrpc": "2.0", "id": next_id(), "method": method, "params": params });
    (headers, body)
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// An open `subscriptions/listen` stream.
pub struct Listen {
    body: Incoming,
    buffer: String,
}

impl Listen {
    /// The next JSON-RPC message on the stream; panics if none comes within [`WAIT`] or the
    /// stream ends.
    pub async fn next(&mut self) -> Value {
        tokio::time::timeout(WAIT, self.next_inner())
            .await
            .expect("a listen message within the wait")
            .expect("the listen stream is still open")
    }

    /// The next message, or `None` when the stream ends.
    pub async fn next_inner(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                if let Some(message) = sse_messages(&event).into_iter().next() {
                    return Some(message);
                }
                continue;
            }
            let frame = self.body.frame().await?.ok()?;
            if let Ok(data) = frame.into_data() {
                self.buffer
                    .push_str(&String::from_utf8_lossy(&data).replace("\r\n", "\n"));
            }
        }
    }

    /// Reads notifications until one for `task_id` has `status`; returns it.
    pub async fn wait_status(&mut self, task_id: &str, status: &str) -> Value {
        loop {
            let message = self.next().await;
            if message["method"] == "notifications/tasks"
                && message["params"]["taskId"] == task_id
                && message["params"]["status"] == status
            {
                return message;
            }
        }
    }
}

/// Asserts that `stranger` cannot tell `owner`'s task `id` (waiting for the `confirm-1` answer
/// of `confirm_delete`) from a task that does not exist, and that nothing it tries touches it:
/// get, cancel and update give byte-identical -32602 answers, listen accepts nothing.
pub async fn assert_foreign_task_looks_unknown(
    stranger: &Mcp,
    owner: &Mcp,
    tasks: &kube::Api<mcp_task_operator_crds::McpTask>,
    id: &str,
) {
    let unknown = mcp_task_operator_crds::task_id::generate();
    let answer = json!({ "confirm-1": { "action": "accept", "content": { "confirm": true } } });
    for (theirs, nobodys) in [
        (
            stranger.get_task(id).await,
            stranger.get_task(&unknown).await,
        ),
        (
            stranger.cancel_task(id).await,
            stranger.cancel_task(&unknown).await,
        ),
        (
            stranger.update_task(id, answer.clone()).await,
            stranger.update_task(&unknown, answer.clone()).await,
        ),
    ] {
        assert_eq!(theirs.error_code(), Some(-32602), "{}", theirs.body);
        assert_eq!(theirs.status, nobodys.status);
        assert_eq!(theirs.body["error"], nobodys.body["error"]);
    }
    let mut listen = stranger.listen("stranger-listen", &[id]).await;
    let ack = listen.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([]));

    let task = tasks.get(id).await.expect("task");
    assert!(!task.is_cancel_requested());
    assert!(task.spec.input_responses.is_none());
    assert_eq!(
        owner.get_task(id).await.result()["status"],
        "input_required"
    );
}
