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
    /// Writes to stderr instead of stdout: a warm pod before its claim, whose output is no
    /// task's yet.
    unclaimed: bool,
    /// The cancel file's content when the call was claimed, which is no cancel of this call
    /// (`--serve`: the file is the pod's, and the operator's reset reaches it late).
    cancel_seen: Option<String>,
    /// Runs right before the call's last line (its result or error) is written.
    before_final: Option<Box<dyn Fn()>>,
}

impl Contract {
    /// The contract of the pod whose task files are in `dir`, signed with the nonce of
    /// [`NONCE_ENV`], else of the file `message-nonce` in `dir` (a pod made without the
    /// bridge's template, or a test).
    pub fn new(dir: &Path) -> Self {
        Self::with_nonce(dir, std::env::var(NONCE_ENV).ok())
    }

    /// The contract of a claimed warm pod: the nonce came with the claim, else from the file
    /// `message-nonce` in `dir`.
    pub fn with_nonce(dir: &Path, nonce: Option<String>) -> Self {
        let nonce = nonce
            .filter(|n| !n.trim().is_empty())
            .or_else(|| std::fs::read_to_string(dir.join("message-nonce")).ok())
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        Self {
            dir: dir.to_owned(),
            nonce,
            unclaimed: false,
            cancel_seen: None,
            before_final: None,
        }
    }

    /// The contract of one call of a `--serve` pod: the cancel file's content now is no
    /// cancel of this call, and `before_final` runs right before its result or error line.
    pub fn for_reused_pod(mut self, before_final: impl Fn() + 'static) -> Self {
        self.cancel_seen = Some(self.cancel_content());
        self.before_final = Some(Box::new(before_final));
        self
    }

    /// The contract of a warm pod before its claim: what it writes goes to stderr, and never
    /// as a message, so whatever the server does then cannot speak for a task.
    pub fn unclaimed(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            nonce: None,
            unclaimed: true,
            cancel_seen: None,
            before_final: None,
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
        self.before_final();
        self.send("result", "result", result);
    }

    /// The task fails with this JSON-RPC error.
    pub fn error(&self, code: i64, message: &str, data: Option<Value>) {
        self.before_final();
        self.failure(code, message, data);
    }

    /// The task fails with this JSON-RPC error, and a `--serve` pod stays held: its server is
    /// gone, so the pod ends rather than take another call.
    pub fn failure(&self, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({ "code": code, "message": message });
        if let Some(data) = data {
            error["data"] = data;
        }
        self.send("error", "error", error);
    }

    /// An ordinary log line (never taken for a message: it does not start with `{`).
    pub fn log(&self, line: &str) {
        self.write_line(&format!("mcp-bridge: {line}"));
    }

    /// Whether the client asked the task to stop (the file holds the time it did), and not
    /// with the content the file had when the call was claimed.
    pub fn cancel_requested(&self) -> bool {
        let content = self.cancel_content();
        !content.is_empty() && self.cancel_seen.as_ref() != Some(&content)
    }

    /// The cancel file's content, trimmed (empty when there is none).
    fn cancel_content(&self) -> String {
        std::fs::read_to_string(self.dir.join("cancel-requested"))
            .map(|t| t.trim().to_owned())
            .unwrap_or_default()
    }

    fn before_final(&self) {
        if let Some(hook) = &self.before_final {
            hook();
        }
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
        self.write_line(&Value::Object(message).to_string());
    }

    fn write_line(&self, line: &str) {
        if self.unclaimed {
            // The container log holds stderr too: no line of an unclaimed pod reads as a message.
            match line.starts_with('{') {
                true => eprintln!("mcp-bridge: unclaimed: {line}"),
                false => eprintln!("{line}"),
            }
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
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

    #[test]
    fn a_reused_pods_call_is_cancelled_only_by_a_cancel_file_it_has_not_seen() {
        let dir = std::env::temp_dir().join(format!("mcp-bridge-reused-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cancel = dir.join("cancel-requested");
        std::fs::write(&cancel, "2026-12-01T12:00:00Z\n").unwrap();
        let contract = Contract::new(&dir).for_reused_pod(|| {});
        assert!(!contract.cancel_requested(), "the previous call's cancel");
        std::fs::write(&cancel, "").unwrap();
        assert!(!contract.cancel_requested(), "the operator's reset");
        std::fs::write(&cancel, "2026-12-01T12:00:00Z").unwrap();
        assert!(!contract.cancel_requested());
        std::fs::write(&cancel, "2026-12-01T12:00:07Z").unwrap();
        assert!(contract.cancel_requested());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
