//! The floor of a bridged call: mcp-server-time, the same package and version the image holds
//! (`hack/mcp-servers.sh` installs it in a virtualenv on this machine), started once as a child
//! process and initialized; each call is one `tools/call` over its stdio, timed from the request
//! written to the answer read.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Longest wait for one answer.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// A running mcp-server-time, past `initialize`; killed when dropped.
pub struct StdioServer {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl StdioServer {
    /// Installs (once; cached) and starts mcp-server-time as the image runs it
    /// (`--local-timezone UTC`), and initializes it.
    pub async fn start() -> Result<Self, String> {
        let script = mcp_task_operator_harness::repo_dir().join("hack/mcp-servers.sh");
        let out = tokio::task::block_in_place(|| std::process::Command::new(&script).output())
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let mut child = Command::new(format!("{dir}/py/bin/python"))
            .args(["-m", "mcp_server_time", "--local-timezone", "UTC"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start mcp-server-time from {dir}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let mut server = Self {
            _child: child,
            stdin,
            stdout,
            next_id: 1,
        };
        server
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "mto-bench", "version": "1"},
                }),
            )
            .await?;
        server
            .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(server)
    }

    /// One `get_current_time` call (the section's bridged call's arguments); its round trip.
    pub async fn call(&mut self) -> Result<Duration, String> {
        let started = Instant::now();
        let answer = self
            .request(
                "tools/call",
                json!({"name": "get_current_time", "arguments": {"timezone": "Etc/UTC"}}),
            )
            .await?;
        let took = started.elapsed();
        if answer["result"]["isError"] != json!(false) {
            return Err(format!("get_current_time failed: {answer}"));
        }
        Ok(took)
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let read = async {
            while let Some(line) = self
                .stdout
                .next_line()
                .await
                .map_err(|e| format!("cannot read mcp-server-time: {e}"))?
            {
                let message: Value = serde_json::from_str(&line)
                    .map_err(|e| format!("mcp-server-time wrote a non-JSON line ({e}): {line}"))?;
                if message["id"] == json!(id) {
                    return Ok(message);
                }
            }
            Err(format!("mcp-server-time ended before answering {method}"))
        };
        tokio::time::timeout(ANSWER_WAIT, read)
            .await
            .map_err(|_| format!("mcp-server-time did not answer {method} in {ANSWER_WAIT:?}"))?
    }

    async fn write(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("cannot write to mcp-server-time: {e}"))?;
        self.stdin
            .flush()
            .await
            .map_err(|e| format!("cannot write to mcp-server-time: {e}"))
    }
}
