//! The MCP server as a child process on stdio: newline-delimited JSON-RPC messages in and out
//! (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio), its
//! stderr passed on to the pod's log and its last lines kept for error messages.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// Lines of the server's stderr kept for an error message.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stdout line read from the server (a larger message is refused, not buffered).
const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// What the server sent, or that it ended.
#[derive(Debug)]
pub enum FromServer {
    /// A JSON-RPC message.
    Message(Value),
    /// A stdout line that is not a JSON-RPC message.
    Garbage(String),
    /// Its stdout closed: it exited or is exiting.
    Closed,
}

/// A running MCP server.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Messages from its stdout, in order.
    pub messages: mpsc::Receiver<FromServer>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Server {
    /// Starts `command` with `args`, stdin and stdout piped, without the nonce and the warm
    /// pod's settings in its env.
    pub fn start(command: &str, args: &[String]) -> std::io::Result<Self> {
        let mut child = Command::new(command);
        child
            .args(args)
            .env_remove(crate::contract::NONCE_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with(crate::warm::ENV_PREFIX) {
                child.env_remove(name);
            }
        }
        let mut child = child.spawn()?;
        let stdin = child.stdin.take();
        let (tx, messages) = mpsc::channel(256);
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(read_messages(stdout, tx));
        }
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pass_stderr(stderr, Arc::clone(&stderr_tail)));
        }
        Ok(Self {
            child,
            stdin,
            messages,
            stderr_tail,
        })
    }

    /// Sends one JSON-RPC message; `false` when the server no longer reads.
    pub async fn send(&mut self, message: &Value) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).await.is_ok() && stdin.flush().await.is_ok()
    }

    /// Sends a request.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> bool {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&message).await
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) -> bool {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(&message).await
    }

    /// Answers the server's request `id` with `result`.
    pub async fn answer(&mut self, id: &Value, result: Value) -> bool {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send(&message).await
    }

    /// Answers the server's request `id` with a JSON-RPC error.
    pub async fn refuse(&mut self, id: &Value, code: i64, message: &str) -> bool {
        let message =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.send(&message).await
    }

    /// The server's exit status once it has exited, without waiting.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines of its stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Closes its stdin (the stdio transport's way to ask it to exit), waits up to `grace`,
    /// then kills it.
    pub async fn stop(mut self, grace: std::time::Duration) {
        self.stdin = None;
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

async fn read_messages(stdout: impl AsyncRead + Unpin, tx: mpsc::Sender<FromServer>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = read_bounded_line(&mut reader, &mut line).await;
        let item = match read {
            Ok(0) | Err(_) => {
                let _ = tx.send(FromServer::Closed).await;
                return;
            }
            Ok(_) if line.len() > MAX_MESSAGE_BYTES => {
                FromServer::Garbage(format!("a message over {MAX_MESSAGE_BYTES} bytes, dropped"))
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim();
                if text.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(text) {
                    Ok(value) if value.is_object() => FromServer::Message(value),
                    _ => FromServer::Garbage(text.chars().take(500).collect()),
                }
            }
        };
        if tx.send(item).await.is_err() {
            return;
        }
    }
}

/// Reads one line into `line`, keeping at most [`MAX_MESSAGE_BYTES`] + 1 bytes of it (the rest
/// is read and dropped); returns the bytes read, 0 at the end.
async fn read_bounded_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = (MAX_MESSAGE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok(total);
        }
    }
}

async fn pass_stderr(stderr: impl AsyncRead + Unpin, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        // The pod's log is the contract's channel: a server line that could read as a message
        // is passed on marked, so only the bridge's own lines are messages.
        if line.trim_start().starts_with('{') {
            eprintln!("server stderr: {line}");
        } else {
            eprintln!("{line}");
        }
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line.chars().take(500).collect());
        }
    }
}
