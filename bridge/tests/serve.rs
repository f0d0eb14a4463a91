//! `--serve` pods (`docs/tool-contract.md`, "Warm pods"): the real `mcp-bridge` binary on a
//! loopback port keeps one shell MCP server, which counts its calls in memory, for one claimed
//! call after another. Nothing here waits a fixed time: every wait is for an event, bounded.

mod pod;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStdout;

use pod::{BOUND, Pod, key_hash, scratch};

/// A stdio MCP server in sh that keeps state in its process: `count` answers how many times it
/// was called; `hold` touches `$DIR/started` and answers `held` once `$DIR/gate` exists (and
/// removes it); `quit` answers `bye` and exits. It logs each `notifications/cancelled` to
/// `$DIR/cancelled`.
const COUNTER: &str = r#"
n=0
while IFS= read -r line; do
  id=${line#*\"id\":}; id=${id%%[!0-9]*}
  case $line in
  *'"method":"initialize"'*)
    echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"counter","version":"1"}}}' ;;
  *'"method":"notifications/cancelled"'*)
    echo "$line" >> "$DIR/cancelled" ;;
  *'"name":"count"'*)
    n=$((n + 1))
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}\n' "$id" "$n" ;;
  *'"name":"hold"'*)
    touch "$DIR/started"
    while [ ! -e "$DIR/gate" ]; do sleep 0.05; done
    rm -f "$DIR/gate"
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"held"}]}}\n' "$id" ;;
  *'"name":"quit"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"bye"}]}}\n' "$id"
    echo '{"not":"a message"}' >&2
    exit 3 ;;
  esac
done"#;

/// A `--serve` pod running [`COUNTER`] with its files in `dir`, plus `env`.
fn counter_pod(dir: &Path, env: &[(&str, &str)]) -> Pod {
    let dir = dir.to_str().expect("a UTF-8 path");
    let mut all = vec![("DIR", dir), ("MCP_BRIDGE_DIR", dir)];
    all.extend_from_slice(env);
    Pod::start("--serve", &["sh", "-c", COUNTER], &all)
}

/// A claim's env: the task, its tool and, when given, its nonce.
fn call(task: &str, tool: &str, nonce: Option<&str>) -> Value {
    let mut env = json!({"MCP_TASK_ID": task, "MCP_TOOL_NAME": tool});
    if let Some(nonce) = nonce {
        env["MCP_MESSAGE_NONCE"] = json!(nonce);
    }
    env
}

fn claimed(task: &str) -> (u16, String) {
    (200, json!({ "claimed": task }).to_string())
}

/// The bridge's stdout, line by line.
struct Output {
    lines: Lines<BufReader<ChildStdout>>,
    /// The log lines read so far (every line that is not a message).
    logs: Vec<String>,
}

impl Output {
    fn of(pod: &mut Pod) -> Self {
        let stdout = pod.child.stdout.take().expect("stdout");
        Self {
            lines: BufReader::new(stdout).lines(),
            logs: Vec::new(),
        }
    }

    /// The next message line, as JSON.
    async fn message(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(BOUND, self.lines.next_line())
                .await
                .expect("a line within a minute")
                .expect("readable")
                .unwrap_or_else(|| panic!("stdout ended; logs: {:?}", self.logs));
            if line.starts_with('{') {
                return serde_json::from_str(&line).expect("a JSON message");
            }
            self.logs.push(line);
        }
    }

    /// Every line left, once the bridge ends.
    async fn rest(mut self) -> Vec<String> {
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(BOUND, self.lines.next_line())
            .await
            .expect("stdout ends within a minute")
            .expect("readable")
        {
            rest.push(line);
        }
        rest
    }
}

/// The text of a result message, and its nonce (`None` when unsigned).
fn answer(message: &Value) -> (String, Option<String>) {
    assert_eq!(message["mcp"], "result", "{message}");
    let text = message["result"]["content"][0]["text"]
        .as_str()
        .expect("a text");
    (
        text.to_owned(),
        message["nonce"].as_str().map(str::to_owned),
    )
}

fn some(nonce: &str) -> Option<String> {
    Some(nonce.to_owned())
}

async fn ready(pod: &Pod) -> (u16, String) {
    pod.request("GET", "/ready", None, "").await
}

/// Waits until `path` exists, then removes it.
async fn take_file(path: &Path) {
    let wait = async {
        while std::fs::remove_file(path).is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(BOUND, wait)
        .await
        .expect("the file within a minute");
}

#[tokio::test]
async fn a_serve_pod_keeps_its_server_for_one_call_after_another() {
    let dir = scratch("serve");
    let mut pod = counter_pod(&dir, &[]);
    let mut out = Output::of(&mut pod);
    pod.wait_ready().await;
    let hash_as_secret = format!("Bearer {}", key_hash(pod::SECRET));
    let body = json!({"taskId": "t1", "env": call("t1", "count", Some("n1"))}).to_string();
    let refused = pod
        .request("POST", "/claim", Some(&hash_as_secret), &body)
        .await;
    assert_eq!(refused.0, 401);

    // One server for every call: its count carries over, each result signed for its own task,
    // and the pod is free again by the time the result line is out.
    for (n, task, nonce) in [(1, "t1", "n1"), (2, "t2", "n2"), (3, "t3", "n3")] {
        assert_eq!(
            pod.claim(task, call(task, "count", Some(nonce))).await,
            claimed(task)
        );
        assert_eq!(answer(&out.message().await), (n.to_string(), some(nonce)));
        assert_eq!(ready(&pod).await, (200, "waiting".into()));
    }
    // A late retry of a claim that ran gets its answer again, and the call is not run again.
    assert_eq!(
        pod.claim("t2", call("t2", "count", Some("n2"))).await,
        claimed("t2")
    );
    assert_eq!(ready(&pod).await, (200, "waiting".into()));
    // No nonce in the claim: the line is unsigned, never signed with an earlier call's nonce.
    assert_eq!(
        pod.claim("t4", call("t4", "count", None)).await,
        claimed("t4")
    );
    assert_eq!(answer(&out.message().await), ("4".into(), None));

    // One call at a time.
    assert_eq!(
        pod.claim("t5", call("t5", "hold", Some("n5"))).await,
        claimed("t5")
    );
    take_file(&dir.join("started")).await;
    assert_eq!(ready(&pod).await, (503, "claimed".into()));
    let (status, body) = pod.claim("t6", call("t6", "count", Some("n6"))).await;
    assert_eq!(
        (status, body),
        (409, json!({"error": "busy with task t5"}).to_string())
    );
    assert_eq!(
        pod.claim("t5", call("t5", "hold", Some("n5"))).await,
        claimed("t5")
    );
    std::fs::write(dir.join("gate"), "").unwrap();
    assert_eq!(answer(&out.message().await), ("held".into(), some("n5")));
    assert_eq!(ready(&pod).await, (200, "waiting".into()));
    assert_eq!(
        pod.claim("t6", call("t6", "count", Some("n6"))).await,
        claimed("t6")
    );
    assert_eq!(answer(&out.message().await), ("5".into(), some("n6")));
    assert!(
        out.logs
            .iter()
            .all(|l| l == "mcp-bridge: server counter speaks MCP 2025-11-25"),
        "{:?}",
        out.logs
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn only_a_new_cancel_cancels_the_call_and_the_server_stays_for_the_next() {
    let dir = scratch("serve-cancel");
    // The previous call's cancel, which the operator's reset has not replaced yet.
    std::fs::write(dir.join("cancel-requested"), "2026-12-01T12:00:00Z\n").unwrap();
    let mut pod = counter_pod(&dir, &[]);
    let mut out = Output::of(&mut pod);
    pod.wait_ready().await;
    assert_eq!(
        pod.claim("t1", call("t1", "hold", Some("n1"))).await,
        claimed("t1")
    );
    take_file(&dir.join("started")).await;
    std::fs::write(dir.join("gate"), "").unwrap();
    assert_eq!(answer(&out.message().await), ("held".into(), some("n1")));

    // The same content again is no cancel of this call either; a new one is.
    assert_eq!(
        pod.claim("t2", call("t2", "hold", Some("n2"))).await,
        claimed("t2")
    );
    take_file(&dir.join("started")).await;
    std::fs::write(dir.join("cancel-requested"), "2026-12-01T12:00:05Z").unwrap();
    pod.wait_ready().await;
    // The server, still held in t2's call, gets t3's call: t2's late answer is not t3's.
    assert_eq!(
        pod.claim("t3", call("t3", "count", Some("n3"))).await,
        claimed("t3")
    );
    std::fs::write(dir.join("gate"), "").unwrap();
    assert_eq!(answer(&out.message().await), ("1".into(), some("n3")));
    let cancelled: Vec<Value> = std::fs::read_to_string(dir.join("cancelled"))
        .expect("the server was told")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(
        cancelled[0]["params"]["reason"],
        "The client cancelled the task"
    );
    let cancel_log = "mcp-bridge: cancel requested: sent notifications/cancelled to the server";
    assert_eq!(
        out.logs.iter().filter(|l| *l == cancel_log).count(),
        1,
        "{:?}",
        out.logs
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_idle_serve_pod_ends_quietly_and_one_whose_server_died_fails() {
    let dir = scratch("serve-end");
    // Never claimed: exit 0, nothing on stdout.
    let pod = counter_pod(&dir, &[("MCP_WARM_MAX_WAIT_SECONDS", "1")]);
    let (status, stdout, stderr) = pod.end().await;
    assert_eq!((status.code(), stdout.as_str()), (Some(0), ""), "{stderr}");

    // Idle after a call: exit 0, nothing more on stdout.
    let mut pod = counter_pod(&dir, &[("MCP_WARM_MAX_WAIT_SECONDS", "3")]);
    let mut out = Output::of(&mut pod);
    pod.wait_ready().await;
    assert_eq!(
        pod.claim("t1", call("t1", "count", Some("n1"))).await,
        claimed("t1")
    );
    assert_eq!(answer(&out.message().await), ("1".into(), some("n1")));
    let (status, _, stderr) = pod.end().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(out.rest().await, Vec::<String>::new());

    // The server dies after its answer: the task has it, then the pod ends with exit 1 and
    // no line of its log reads as a message.
    let mut pod = counter_pod(&dir, &[]);
    let mut out = Output::of(&mut pod);
    pod.wait_ready().await;
    assert_eq!(
        pod.claim("t1", call("t1", "quit", Some("n1"))).await,
        claimed("t1")
    );
    assert_eq!(answer(&out.message().await), ("bye".into(), some("n1")));
    let (status, _, stderr) = pod.end().await;
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(out.rest().await, Vec::<String>::new());
    assert!(stderr.contains("ended while this pod waited"), "{stderr}");
    assert!(!stderr.lines().any(|l| l.starts_with('{')), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
