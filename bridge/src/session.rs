//! One MCP session with the server: `initialize`, then either one `tools/call` mapped onto
//! the tool container contract, or `tools/list` for discovery.
//!
//! Mapping (MCP 2025-11-25, the revision stdio servers speak:
//! https://modelcontextprotocol.io/specification/2025-11-25):
//! - `notifications/progress` for the call → a status line;
//! - `notifications/message` → a log line;
//! - the bridge declares to the server only what the client that created the task declared
//!   (`MCP_CLIENT_CAPABILITIES`): `elicitation` with the same modes, `sampling`, `roots`;
//! - `elicitation/create` from the server → an input request when the client declared its mode;
//!   `sampling/createMessage`, `roots/list` → input requests when it declared `sampling` or
//!   `roots`. An undeclared kind is refused with -32601, an undeclared elicitation mode with
//!   -32602 (https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation);
//! - the client's answer, once it is in the answers file, → the server's result; an answer with
//!   an `error` member (the front end's "the client cannot be asked", docs/tool-contract.md)
//!   → a JSON-RPC error with its code, message and data;
//! - discovery (`--list`) declares every kind, so tools a server offers only to such clients
//!   are listed too, and refuses every request the server makes meanwhile (nobody can answer);
//! - the call's result → the result; its JSON-RPC error → the error;
//! - a cancel request → `notifications/cancelled`, then the grace period, then the server is
//!   stopped (and no result is printed: the task ends `cancelled`);
//! - a server that exits or stays silent → an error with the last lines of its stderr;
//! - a warm pod (`--warm`) initializes the server before any task claims it, so it declares
//!   nothing whatever the client declared, and refuses every request of the server but `ping`;
//! - a `--serve` pod makes many calls in one session: each has its own request id (which is
//!   also its progress token: another call's progress is not its status) and input request
//!   keys (`<kind>-<id>-<n>` from the second call on, so an answer to an earlier call's
//!   request never answers a later one's).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::{Instant, interval};

use crate::contract::{Contract, progress_message};
use crate::server::{FromServer, Server};

/// The revision the bridge asks for; a server may answer with an older one it speaks.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// JSON-RPC "internal error".
const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params": MCP's answer to an elicitation mode the client did not declare.
const INVALID_PARAMS: i64 = -32602;
/// How often the cancel and answers files are read.
const TICK: Duration = Duration::from_millis(500);
/// Most tools/list pages read in discovery.
const MAX_PAGES: usize = 100;
/// Most input requests one call may open (the contract allows 64 per task).
const MAX_INPUT_REQUESTS: usize = 64;

const INITIALIZE_ID: i64 = 1;
/// The request id of a session's first `tools/call` (later ones count up from it).
pub const CALL_ID: i64 = 2;
const FIRST_LIST_ID: i64 = 3;

/// The elicitation modes the client declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elicitation {
    /// Form mode (`elicitation.form`, or a bare `elicitation: {}`).
    pub form: bool,
    /// URL mode (`elicitation.url`).
    pub url: bool,
}

impl Elicitation {
    /// Both modes.
    const ALL: Self = Self {
        form: true,
        url: true,
    };

    /// The modes of a client's `elicitation` capability, or `None` when it declares none the
    /// bridge passes on. A bare `{}` declares form mode only (MCP 2025-11-25).
    pub fn declared(capability: &Value) -> Option<Self> {
        let modes = capability.as_object()?;
        let declared = Self {
            form: modes.is_empty() || modes.get("form").is_some_and(Value::is_object),
            url: modes.get("url").is_some_and(Value::is_object),
        };
        (declared.form || declared.url).then_some(declared)
    }

    /// The capability the bridge declares to the server: the modes, each named.
    fn capability(self) -> Value {
        let mut modes = Map::new();
        for (mode, on) in [("form", self.form), ("url", self.url)] {
            if on {
                modes.insert(mode.into(), json!({}));
            }
        }
        Value::Object(modes)
    }
}

/// Time limits of a session, and what the client behind it can answer.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// For the server to answer `initialize`.
    pub initialize: Duration,
    /// For the server to stop after a cancel; zero: the call ends once the server is told
    /// (a `--serve` pod keeps its server).
    pub cancel_grace: Duration,
    /// The client declared `elicitation` in these modes: the server's `elicitation/create` of
    /// a declared mode is passed on.
    pub elicitation: Option<Elicitation>,
    /// The client declared `sampling`: the server's `sampling/createMessage` is passed on.
    pub sampling: bool,
    /// The client declared `roots`: the server's `roots/list` is passed on.
    pub roots: bool,
}

impl Limits {
    /// These limits with no client capability declared: a warm server starts before any call,
    /// so it cannot know its caller's (`docs/tool-contract.md`, "Warm pods").
    pub fn declaring_nothing(self) -> Self {
        Self {
            elicitation: None,
            sampling: false,
            roots: false,
            ..self
        }
    }
}

/// How a session ended, already reported through the contract.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// A result or an error was printed.
    Answered,
    /// Cancelled: nothing printed.
    Cancelled,
    /// An error was printed: the server stopped reading or writing.
    ServerGone,
}

/// Calls `tool` with `arguments` and reports through `contract`.
pub async fn call(
    server: &mut Server,
    contract: &Contract,
    tool: &str,
    arguments: Value,
    limits: Limits,
) -> Ended {
    match initialize(server, contract, limits).await {
        Ok(init) => {
            call_initialized(server, contract, tool, arguments, limits, &init, CALL_ID).await
        }
        Err(ended) => ended,
    }
}

/// `initialize` and `notifications/initialized`: the server's answer, or how the session
/// ended after reporting why there is none.
pub async fn initialize(
    server: &mut Server,
    contract: &Contract,
    limits: Limits,
) -> Result<Value, Ended> {
    let mut session = Session::new(server, contract, limits);
    session
        .initialize(limits)
        .await
        .ok_or_else(|| session.ended())
}

/// Keeps an initialized server served (pings answered, its requests refused: `limits`
/// declares nothing) until `until` is done; `None` if the server ends first.
pub async fn idle_until<T>(
    server: &mut Server,
    contract: &Contract,
    limits: Limits,
    until: impl Future<Output = T>,
) -> Option<T> {
    let mut session = Session::new(server, contract, limits);
    tokio::pin!(until);
    loop {
        // Only the receive races `until`: a message is handled whole, never cut mid-write.
        let got = tokio::select! {
            done = &mut until => return Some(done),
            got = session.server.messages.recv() => got,
        };
        match got {
            Some(FromServer::Message(message)) => session.incoming(message).await,
            Some(FromServer::Garbage(line)) => {
                contract.log(&format!("not a JSON-RPC message from the server: {line}"));
            }
            Some(FromServer::Closed) | None => return None,
        }
    }
}

/// [`call`] on a server that already answered `initialize` with `init`, as request `id`
/// ([`CALL_ID`] for the session's first call, one more for each later one).
pub async fn call_initialized(
    server: &mut Server,
    contract: &Contract,
    tool: &str,
    arguments: Value,
    limits: Limits,
    init: &Value,
    id: i64,
) -> Ended {
    let mut session = Session::new(server, contract, limits);
    session.call_id = id;
    contract.log(&format!(
        "server {} speaks MCP {}",
        init["serverInfo"]["name"].as_str().unwrap_or("(unnamed)"),
        init["protocolVersion"].as_str().unwrap_or("?")
    ));
    let params = json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": id}});
    if !session.server.request(id, "tools/call", params).await {
        session.server_gone("tools/call").await;
        return session.ended();
    }
    let mut cancelled_at: Option<Instant> = None;
    let mut tick = interval(TICK);
    loop {
        tokio::select! {
            got = session.server.messages.recv() => match got {
                Some(FromServer::Message(message)) if message["id"] == json!(id) && message.get("method").is_none() => {
                    if cancelled_at.is_some() {
                        return Ended::Cancelled;
                    }
                    session.answered(&message);
                    return Ended::Answered;
                }
                Some(FromServer::Message(message)) => session.incoming(message).await,
                Some(FromServer::Garbage(line)) => contract.log(&format!("not a JSON-RPC message from the server: {line}")),
                Some(FromServer::Closed) | None => {
                    if cancelled_at.is_some() {
                        return Ended::Cancelled;
                    }
                    session.server_gone("tools/call").await;
                    return Ended::ServerGone;
                }
            },
            _ = tick.tick() => {
                if cancelled_at.is_none() && contract.cancel_requested() {
                    let params = json!({"requestId": id, "reason": "The client cancelled the task"});
                    session.server.notify("notifications/cancelled", params).await;
                    contract.log("cancel requested: sent notifications/cancelled to the server");
                    if limits.cancel_grace.is_zero() {
                        return Ended::Cancelled;
                    }
                    cancelled_at = Some(Instant::now());
                }
                if cancelled_at.is_some_and(|at| at.elapsed() >= limits.cancel_grace) {
                    contract.log("the server did not stop within the cancel grace period");
                    return Ended::Cancelled;
                }
                session.deliver_answers().await;
            }
        }
    }
}

/// Lists the server's tools (every page) and prints them as the result's
/// `structuredContent`: `{protocolVersion, serverInfo, tools}`.
pub async fn list(server: &mut Server, contract: &Contract, limits: Limits) -> Ended {
    // Declares every kind, so that tools offered only to clients that declared one are listed
    // (each call declares what its own client did).
    let limits = Limits {
        elicitation: Some(Elicitation::ALL),
        sampling: true,
        roots: true,
        ..limits
    };
    let mut session = Session::new(server, contract, limits);
    session.discovering = true;
    let Some(init) = session.initialize(limits).await else {
        return session.ended();
    };
    let mut tools: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0..MAX_PAGES {
        let id = FIRST_LIST_ID + page as i64;
        let params = cursor
            .as_ref()
            .map_or_else(|| json!({}), |c| json!({"cursor": c}));
        if !session.server.request(id, "tools/list", params).await {
            session.server_gone("tools/list").await;
            return Ended::Answered;
        }
        let Some(listed) = session.response(id, limits.initialize, "tools/list").await else {
            return Ended::Answered;
        };
        tools.extend(listed["tools"].as_array().cloned().unwrap_or_default());
        cursor = listed["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let text = format!("{} tools", tools.len());
    contract.result(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {
            "protocolVersion": init["protocolVersion"],
            "serverInfo": init["serverInfo"],
            "tools": tools,
        },
    }));
    Ended::Answered
}

struct Session<'a> {
    server: &'a mut Server,
    contract: &'a Contract,
    /// Open input requests: contract key → the server's request id.
    pending: BTreeMap<String, Value>,
    /// Input requests opened so far (keys stay unique for the task's life).
    opened: usize,
    answered: bool,
    /// The server stopped reading or writing (and that was reported).
    gone: bool,
    limits: Limits,
    /// The request id of the session's call (its progress token too).
    call_id: i64,
    /// Listing tools: no request of the server can be answered.
    discovering: bool,
}

impl<'a> Session<'a> {
    fn new(server: &'a mut Server, contract: &'a Contract, limits: Limits) -> Self {
        Self {
            server,
            contract,
            pending: BTreeMap::new(),
            opened: 0,
            answered: false,
            gone: false,
            limits,
            call_id: CALL_ID,
            discovering: false,
        }
    }

    fn ended(&self) -> Ended {
        if self.gone {
            Ended::ServerGone
        } else if self.answered {
            Ended::Answered
        } else {
            Ended::Cancelled
        }
    }

    /// `initialize` and `notifications/initialized`; the server's answer, or `None` after
    /// reporting why there is none.
    async fn initialize(&mut self, limits: Limits) -> Option<Value> {
        let mut capabilities = json!({});
        if let Some(elicitation) = self.limits.elicitation {
            capabilities["elicitation"] = elicitation.capability();
        }
        if self.limits.sampling {
            capabilities["sampling"] = json!({});
        }
        if self.limits.roots {
            capabilities["roots"] = json!({});
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "mcp-bridge", "version": env!("CARGO_PKG_VERSION")},
        });
        if !self
            .server
            .request(INITIALIZE_ID, "initialize", params)
            .await
        {
            self.server_gone("initialize").await;
            return None;
        }
        let init = self
            .response(INITIALIZE_ID, limits.initialize, "initialize")
            .await?;
        self.server
            .notify("notifications/initialized", json!({}))
            .await;
        Some(init)
    }

    /// Waits up to `limit` for the answer to request `id`, handling what else comes; the
    /// result, or `None` after reporting the error, the silence or the exit.
    async fn response(&mut self, id: i64, limit: Duration, method: &str) -> Option<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let got = tokio::time::timeout_at(deadline, self.server.messages.recv()).await;
            match got {
                Err(_) => {
                    let message = format!(
                        "The MCP server did not answer {method} within {} s",
                        limit.as_secs()
                    );
                    self.fail(&message);
                    return None;
                }
                Ok(Some(FromServer::Message(message)))
                    if message["id"] == json!(id) && message.get("method").is_none() =>
                {
                    if message.get("error").is_some() {
                        self.answered(&message);
                        return None;
                    }
                    return Some(message["result"].clone());
                }
                Ok(Some(FromServer::Message(message))) => self.incoming(message).await,
                Ok(Some(FromServer::Garbage(line))) => self
                    .contract
                    .log(&format!("not a JSON-RPC message from the server: {line}")),
                Ok(Some(FromServer::Closed) | None) => {
                    self.server_gone(method).await;
                    return None;
                }
            }
        }
    }

    /// A request or notification from the server.
    async fn incoming(&mut self, message: Value) {
        let Some(method) = message["method"].as_str() else {
            return; // a response to nothing we asked
        };
        let id = message.get("id").cloned();
        let params = &message["params"];
        match (method, id) {
            // Progress of another call (one a `--serve` pod's server still works on after its
            // cancel) is not this call's status.
            ("notifications/progress", None)
                if params
                    .get("progressToken")
                    .is_none_or(|t| *t == json!(self.call_id)) =>
            {
                self.contract.status(&progress_message(params));
            }
            ("notifications/message", None) => {
                let data = match &params["data"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let logger = params["logger"]
                    .as_str()
                    .map(|l| format!("{l}: "))
                    .unwrap_or_default();
                let level = params["level"].as_str().unwrap_or("info");
                self.contract.log(&format!("[{level}] {logger}{data}"));
            }
            (_, None) => {}
            ("ping", Some(id)) => {
                self.server.answer(&id, json!({})).await;
            }
            (other, Some(id)) if self.discovering => {
                let why = format!("{other} cannot be answered while the bridge lists tools");
                self.server.refuse(&id, METHOD_NOT_FOUND, &why).await;
            }
            ("elicitation/create", Some(id)) => self.elicit(id, params.clone()).await,
            ("sampling/createMessage", Some(id)) if self.limits.sampling => {
                self.ask("sampling", id, method, params.clone()).await;
            }
            ("roots/list", Some(id)) if self.limits.roots => {
                self.ask("roots", id, method, json!({})).await;
            }
            (other, Some(id)) => {
                let why =
                    format!("Method not found: {other} (the mcp-bridge client does not offer it)");
                self.server.refuse(&id, METHOD_NOT_FOUND, &why).await;
            }
        }
    }

    /// Passes the server's elicitation on as an input request of the task, when the client
    /// declared elicitation in its mode.
    async fn elicit(&mut self, id: Value, params: Value) {
        let Some(declared) = self.limits.elicitation else {
            let why = "Method not found: elicitation/create (the client that created the task \
                       did not declare elicitation)";
            self.server.refuse(&id, METHOD_NOT_FOUND, why).await;
            return;
        };
        let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
        let allowed = match mode {
            "form" => declared.form,
            "url" => declared.url,
            _ => false,
        };
        if !allowed {
            let shown: String = mode.chars().take(32).collect();
            let why = format!(
                "Invalid params: the client that created the task did not declare elicitation \
                 in {shown:?} mode"
            );
            self.server.refuse(&id, INVALID_PARAMS, &why).await;
            return;
        }
        // The contract passes URL elicitations on only with an https URL.
        if mode == "url"
            && !params["url"]
                .as_str()
                .is_some_and(|u| u.starts_with("https://"))
        {
            self.server.answer(&id, json!({"action": "decline"})).await;
            self.contract
                .log("declined a URL elicitation without an https URL");
            return;
        }
        self.ask("elicitation", id, "elicitation/create", params)
            .await;
    }

    /// Passes the server's request `id` on as the task's input request `<prefix>-<n>`.
    async fn ask(&mut self, prefix: &str, id: Value, method: &str, params: Value) {
        if self.opened >= MAX_INPUT_REQUESTS {
            let why = format!("at most {MAX_INPUT_REQUESTS} input requests per call");
            self.server.refuse(&id, INTERNAL_ERROR, &why).await;
            return;
        }
        self.opened += 1;
        let key = if self.call_id == CALL_ID {
            format!("{prefix}-{}", self.opened)
        } else {
            format!("{prefix}-{}-{}", self.call_id, self.opened)
        };
        let mut request = Map::new();
        request.insert(key.clone(), json!({"method": method, "params": params}));
        self.contract.input(request);
        self.pending.insert(key, id);
    }

    /// Sends the server every answer that arrived for an open elicitation.
    async fn deliver_answers(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let answers = self.contract.answers();
        let ready: Vec<String> = self
            .pending
            .keys()
            .filter(|k| answers.contains_key(*k))
            .cloned()
            .collect();
        for key in ready {
            if let Some(id) = self.pending.remove(&key) {
                match answers[&key].get("error") {
                    Some(error @ Value::Object(_)) => self.pass_error(&id, error).await,
                    _ => {
                        self.server.answer(&id, answers[&key].clone()).await;
                    }
                }
            }
        }
    }

    /// Answers the server's request `id` with the JSON-RPC error of an answer that says the
    /// client cannot be asked (docs/tool-contract.md, "Input the client cannot be asked").
    async fn pass_error(&mut self, id: &Value, error: &Value) {
        let mut passed = json!({
            "code": error["code"].as_i64().unwrap_or(INTERNAL_ERROR),
            "message": error["message"].as_str().unwrap_or("The client could not be asked"),
        });
        if let Some(data) = error.get("data") {
            passed["data"] = data.clone();
        }
        self.server
            .send(&json!({"jsonrpc": "2.0", "id": id, "error": passed}))
            .await;
    }

    /// Reports the server's answer to the call: its result, or its error.
    fn answered(&mut self, message: &Value) {
        self.answered = true;
        match message.get("error") {
            Some(error) => self.contract.error(
                error["code"].as_i64().unwrap_or(INTERNAL_ERROR),
                error["message"]
                    .as_str()
                    .unwrap_or("The MCP server answered an error"),
                error.get("data").cloned(),
            ),
            None => self.contract.result(message["result"].clone()),
        }
    }

    /// The server stopped reading or writing before it answered `method`.
    async fn server_gone(&mut self, method: &str) {
        self.gone = true;
        // Its stderr may still be draining; give it a moment.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let status = self.server.exited().map_or_else(
            || "closed its output".to_owned(),
            |s| format!("exited ({s})"),
        );
        self.fail(&format!(
            "The MCP server {status} before answering {method}"
        ));
    }

    fn fail(&mut self, message: &str) {
        self.answered = true;
        let tail = self.server.stderr_tail();
        let data = (!tail.is_empty()).then(|| json!({"stderr": tail}));
        let shown = match tail.last() {
            Some(last) => format!("{message}; its last stderr line: {last}"),
            None => message.to_owned(),
        };
        self.contract.failure(INTERNAL_ERROR, &shown, data);
    }
}
