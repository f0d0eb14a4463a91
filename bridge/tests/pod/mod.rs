//! The real `mcp-bridge` binary as a warm pod on a loopback port, for the tests of `--launch`,
//! `--warm` and `--serve`: started, claimed over HTTP, probed, and waited for.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// The claim secret of every pod here, and its SHA-256 (what the pod holds).
pub const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// Longest any one thing may take before the test gives up.
pub const BOUND: Duration = Duration::from_secs(60);

/// The SHA-256 of `secret`'s bytes, as hex: what a pod holds.
pub fn key_hash(secret: &str) -> String {
    let bytes: Vec<u8> = (0..secret.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&secret[i..i + 2], 16).expect("hex"))
        .collect();
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new, empty scratch directory for the test `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-warm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A waiting pod: the bridge in `mode` running `command`, on a free loopback port.
pub struct Pod {
    /// The bridge.
    pub child: Child,
    /// Its claim port.
    pub port: u16,
}

impl Pod {
    /// Starts the bridge in `mode` running `command`, with `env` added to its own.
    pub fn start(mode: &str, command: &[&str], env: &[(&str, &str)]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_mcp-bridge"))
            .arg(mode)
            .arg("--")
            .args(command)
            .env("MCP_WARM_CLAIM_KEY_SHA256", key_hash(SECRET))
            .env("MCP_WARM_PORT", port.to_string())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the bridge starts");
        Self { child, port }
    }

    /// One request: the status code and the body. Retries while nothing listens yet.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        auth: Option<&str>,
        body: &str,
    ) -> (u16, String) {
        let auth = auth
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: pod\r\n{auth}Content-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let exchange = async {
            loop {
                let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)).await else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                stream
                    .write_all(head.as_bytes())
                    .await
                    .expect("send the head");
                // The pod may answer (413) before it read the whole body.
                let _ = stream.write_all(body.as_bytes()).await;
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer).await;
                return String::from_utf8_lossy(&answer).into_owned();
            }
        };
        let answer = tokio::time::timeout(BOUND, exchange)
            .await
            .expect("an answer");
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        (status, body.to_owned())
    }

    /// Claims the pod for `task` with `env`, with the pod's secret.
    pub async fn claim(&self, task: &str, env: Value) -> (u16, String) {
        let body = json!({"taskId": task, "env": env}).to_string();
        self.request("POST", "/claim", Some(&format!("Bearer {SECRET}")), &body)
            .await
    }

    /// Polls `/ready` until it answers 200.
    pub async fn wait_ready(&self) {
        let wait = async {
            while self.request("GET", "/ready", None, "").await != (200, "waiting".into()) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(BOUND, wait)
            .await
            .expect("ready within a minute");
    }

    /// Waits for the bridge to exit: its status, stdout and stderr.
    pub async fn end(self) -> (ExitStatus, String, String) {
        let out = tokio::time::timeout(BOUND, self.child.wait_with_output())
            .await
            .expect("the bridge ends within a minute")
            .expect("its output");
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (out.status, text(out.stdout), text(out.stderr))
    }
}
