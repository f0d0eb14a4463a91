//! The tool container contract as the bridge speaks it (`docs/tool-contract.md`): messages on
//! standard output, signed with the task's nonce when the pod has one; the cancel and
//! input-answer files the operator keeps in step with the task.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Where the operator mounts the task's files.
pub const DEFAULT_DIR: &str = "/var/run/mcp";
/// The environment variable that holds the task's message nonce in a bridged pod (the operator
/// projects no nonce file there); the server is started without it.
pub const NONCE_ENV: &str = "MCP_MESSAGE_NONCE";
/// Longest status message worth sending (the operator keeps 1024 characters).
const MAX_STATUS_CHARS: usize = 1024;

/// Writes contract messages and reads the task's files.
pub struct Contract {
    dir: PathBuf,
    nonce: Option<String>,
}

impl Contract {
    /// The contract of the pod whose task files are in `dir`, signed with the nonce of
    /// [`NONCE_ENV`], else of the file `message-nonce` in `dir` (a pod made without the
    /// bridge's template, or a test).
    pub fn new(dir: &Path) -> Self {
        let nonce = std::env::var(NONCE_ENV)
            .ok()
            .filter(|n| !n.trim().is_empty())
            .or_else(|| std::fs::read_to_string(dir.join("message-nonce")).ok())
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        Self {
            dir: dir.to_owned(),
            nonce,
        }
    }

    /// `statusMessage` of the task.
    pub fn status(&self, message: &str) {
        let message: String = message.chars().take(MAX_STATUS_CHARS).collect();
        self.send("status", "message", Value::String(message));
    }

    /// Input requests (key → `{method, params}`): the task becomes `input_required`.
    pub fn input(&self, requests: Map<String, Value>) {
        self.send("input", "requests", Value::Object(requests));
    }

    /// The task's result (an MCP `CallToolResult`).
    pub fn result(&self, result: Value) {
        self.send("result", "result", result);
    }

    /// The task fails with this JSON-RPC error.
    pub fn error(&self, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({ "code": code, "message": message });
        if let Some(data) = data {
            error["data"] = data;
        }
        self.send("error", "error", error);
    }

    /// An ordinary log line (never taken for a message: it does not start with `{`).
    pub fn log(&self, line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "mcp-bridge: {line}");
        let _ = out.flush();
    }

    /// Whether the client asked the task to stop (the file holds the time it did).
    pub fn cancel_requested(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cancel-requested"))
            .is_ok_and(|t| !t.trim().is_empty())
    }

    /// Every answer the client sent so far, by key (`{}` until the first).
    pub fn answers(&self) -> Map<String, Value> {
        std::fs::read_to_string(self.dir.join("input-responses"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| match v {
                Value::Object(map) => Some(map),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// One message line: the nonce first (the operator looks for it at the start of a long
    /// line), then the kind and its field.
    fn send(&self, kind: &str, field: &str, value: Value) {
        let mut message = Map::new();
        message.insert("mcp".into(), Value::String(kind.into()));
        if let Some(nonce) = &self.nonce {
            message.insert("nonce".into(), Value::String(nonce.clone()));
        }
        message.insert(field.into(), value);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", Value::Object(message));
        let _ = out.flush();
    }
}

/// The status message for an MCP `notifications/progress`: `40/100: indexing`, `40/100`,
/// `40: indexing` or `40`.
pub fn progress_message(params: &Value) -> String {
    let number = |v: &Value| match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", n as i64),
        Some(n) => format!("{n}"),
        None => "?".to_owned(),
    };
    let mut text = number(&params["progress"]);
    if params.get("total").is_some_and(Value::is_number) {
        text = format!("{text}/{}", number(&params["total"]));
    }
    if let Some(message) = params["message"].as_str().filter(|m| !m.is_empty()) {
        text = format!("{text}: {message}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_like_a_status_line() {
        let p = |v: Value| progress_message(&v);
        assert_eq!(
            p(json!({"progress": 40, "total": 100, "message": "indexing"})),
            "40/100: indexing"
        );
        assert_eq!(p(json!({"progress": 3, "total": 4})), "3/4");
        assert_eq!(p(json!({"progress": 0.5, "message": "half"})), "0.5: half");
        assert_eq!(p(json!({"progress": 7})), "7");
    }

    #[test]
    fn files_that_are_missing_or_broken_read_as_nothing_yet() {
        let dir = std::env::temp_dir().join(format!("mcp-bridge-contract-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let contract = Contract::new(&dir);
        assert!(!contract.cancel_requested());
        assert!(contract.answers().is_empty());
        std::fs::write(dir.join("input-responses"), "not json").unwrap();
        assert!(contract.answers().is_empty());
        std::fs::write(dir.join("input-responses"), r#"{"k":{"action":"accept"}}"#).unwrap();
        assert_eq!(contract.answers()["k"]["action"], "accept");
        std::fs::write(dir.join("cancel-requested"), "2026-12-01T12:00:00Z").unwrap();
        assert!(contract.cancel_requested());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
