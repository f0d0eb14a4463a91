//! Warm pods (`docs/tool-contract.md`, "Warm pods"): the real `mcp-bridge` binary waiting on
//! a loopback port as in a pod, claimed over HTTP, running a shell tool (`--launch`) or a
//! shell MCP server (`--warm`). Nothing here waits a fixed time: every wait is for an event,
//! bounded generously.

mod pod;

use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use pod::{BOUND, Pod, SECRET, key_hash, scratch};

/// Waits until `path` exists.
async fn wait_for_file(path: &Path) {
    let wait = async {
        while !path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(BOUND, wait)
        .await
        .expect("the file within a minute");
}

#[tokio::test]
async fn a_launch_pod_is_claimed_by_one_task_whose_env_alone_its_tool_gets() {
    let dir = scratch("launch");
    let gate = dir.join("gate");
    let script = r#"echo "$MCP_TASK_ID $MCP_TOOL_ARGUMENTS"; env | grep -c MCP_WARM_; touch "$STARTED"
        while [ ! -e "$GATE" ]; do sleep 0.05; done; exit 7"#;
    let started = dir.join("started");
    let pod = Pod::start(
        "--launch",
        &["sh", "-c", script],
        &[
            ("GATE", gate.to_str().unwrap()),
            ("STARTED", started.to_str().unwrap()),
        ],
    );
    pod.wait_ready().await;
    let env = json!({"MCP_TASK_ID": "t1", "MCP_TOOL_ARGUMENTS": "{\"x\":1}"});
    let body = json!({"taskId": "t1", "env": env}).to_string();

    let (status, text) = pod.request("POST", "/claim", None, &body).await;
    assert_eq!(status, 401, "{text}");
    let wrong = format!("Bearer {}", SECRET.replace("ff", "fe"));
    assert_eq!(
        pod.request("POST", "/claim", Some(&wrong), &body).await.0,
        401
    );
    let hash_as_secret = format!("Bearer {}", key_hash(SECRET));
    assert_eq!(
        pod.request("POST", "/claim", Some(&hash_as_secret), &body)
            .await
            .0,
        401
    );
    let auth = format!("Bearer {SECRET}");
    let (status, text) = pod
        .request("POST", "/claim", Some(&auth), "{not json")
        .await;
    assert_eq!(status, 400);
    assert!(text.contains("not valid JSON"), "{text}");
    let (status, text) = pod
        .claim("t1", json!({"MCP_TASK_ID": "t1", "LD_PRELOAD": "/x.so"}))
        .await;
    assert_eq!(status, 400);
    assert!(text.contains("env.LD_PRELOAD"), "{text}");
    let big = format!(
        r#"{{"taskId":"t1","env":{{"MCP_TASK_ID":"{}"}}}}"#,
        "a".repeat(1 << 20)
    );
    assert_eq!(
        pod.request("POST", "/claim", Some(&auth), &big).await.0,
        413
    );
    assert_eq!(pod.request("GET", "/claim", Some(&auth), "").await.0, 405);
    assert_eq!(pod.request("GET", "/nothing", None, "").await.0, 404);
    // None of that claimed the pod, nor started the tool.
    assert_eq!(
        pod.request("GET", "/ready", None, "").await,
        (200, "waiting".into())
    );
    assert!(!started.exists());

    assert_eq!(
        pod.claim("t1", env.clone()).await,
        (200, r#"{"claimed":"t1"}"#.into())
    );
    wait_for_file(&started).await;
    // A retry of the same task's claim gets the same answer; another task's is refused.
    assert_eq!(
        pod.claim("t1", env).await,
        (200, r#"{"claimed":"t1"}"#.into())
    );
    let (status, text) = pod.claim("t2", json!({"MCP_TASK_ID": "t2"})).await;
    assert_eq!(status, 409);
    assert!(text.contains("claimed by task t1"), "{text}");
    assert_eq!(
        pod.request("GET", "/ready", None, "").await,
        (503, "claimed".into())
    );

    std::fs::write(&gate, "").unwrap();
    let (status, stdout, stderr) = pod.end().await;
    assert_eq!(
        status.code(),
        Some(7),
        "the tool's exit code; stderr: {stderr}"
    );
    assert_eq!(
        stdout, "t1 {\"x\":1}\n0\n",
        "the claim's env, and no MCP_WARM_* var"
    );
    assert_eq!(stderr, "");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn sigterm_reaches_the_claimed_tool_and_a_signal_death_exits_128_plus_it() {
    let script = r#"trap 'echo got TERM; exit 3' TERM; echo started
        while :; do sleep 0.05; done"#;
    let mut pod = Pod::start("--launch", &["sh", "-c", script], &[]);
    pod.wait_ready().await;
    assert_eq!(pod.claim("t1", json!({"MCP_TASK_ID": "t1"})).await.0, 200);
    let mut stdout = pod.child.stdout.take().expect("stdout");
    let mut seen = String::new();
    let mut buf = [0u8; 256];
    while !seen.contains("started\n") {
        let n = tokio::time::timeout(BOUND, stdout.read(&mut buf))
            .await
            .expect("the tool starts")
            .expect("readable");
        assert!(n > 0, "the tool ended early: {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let pid = pod.child.id().expect("running").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(killed.expect("kill runs").success());
    tokio::time::timeout(BOUND, stdout.read_to_string(&mut seen))
        .await
        .expect("the tool ends within a minute of SIGTERM")
        .expect("readable");
    let (status, _, _) = pod.end().await;
    assert_eq!(seen, "started\ngot TERM\n");
    assert_eq!(status.code(), Some(3));

    let pod = Pod::start("--launch", &["sh", "-c", "kill -KILL $$"], &[]);
    pod.wait_ready().await;
    assert_eq!(pod.claim("t1", json!({"MCP_TASK_ID": "t1"})).await.0, 200);
    assert_eq!(pod.end().await.0.code(), Some(128 + 9));
}

#[tokio::test]
async fn an_unclaimed_pod_ends_quietly_after_its_wait_and_a_misconfigured_one_at_once() {
    let pod = Pod::start(
        "--launch",
        &["sh", "-c", "echo the tool ran"],
        &[("MCP_WARM_MAX_WAIT_SECONDS", "1")],
    );
    assert_eq!(
        pod.end().await,
        (ExitStatus::default(), String::new(), String::new())
    );

    let pod = Pod::start(
        "--launch",
        &["true"],
        &[("MCP_WARM_CLAIM_KEY_SHA256", "not-a-hash")],
    );
    let (status, stdout, stderr) = pod.end().await;
    assert_eq!(status.code(), Some(2));
    assert_eq!(stdout, "");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("MCP_WARM_CLAIM_KEY_SHA256"), "{stderr}");

    // A command that cannot run ends the pod before it is ready.
    let pod = Pod::start("--launch", &["/no/such/tool"], &[]);
    let (status, stdout, stderr) = pod.end().await;
    assert_eq!(status.code(), Some(2));
    assert_eq!(stdout, "");
    assert!(stderr.contains("/no/such/tool"), "{stderr}");
}

/// A stdio MCP server in sh: answers `initialize` once `$GATE` exists, and `tools/call` with
/// the two requests it got (as JSON strings) and the env it was started with.
const FIXTURE_SERVER: &str = r#"
while [ ! -e "$GATE" ]; do sleep 0.05; done
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
while IFS= read -r line; do
  case $line in
  *'"method":"initialize"'*)
    init=$(esc "$line")
    echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fixture","version":"1"}}}' ;;
  *'"method":"tools/call"'*)
    printf '{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"initialize":"%s","call":"%s","task":"%s","warm":%s}}}\n' \
      "$init" "$(esc "$line")" "${MCP_TASK_ID:-}" "$(env | grep -c MCP_WARM_)" ;;
  esac
done"#;

#[tokio::test]
async fn a_warm_server_is_initialized_before_its_claim_and_serves_the_claims_call() {
    let dir = scratch("warm");
    let gate = dir.join("gate");
    let pod = Pod::start(
        "--warm",
        &["sh", "-c", FIXTURE_SERVER],
        &[
            ("GATE", gate.to_str().unwrap()),
            ("MCP_BRIDGE_DIR", dir.to_str().unwrap()),
        ],
    );
    let env = json!({
        "MCP_TASK_ID": "t1",
        "MCP_TOOL_NAME": "echo",
        "MCP_TOOL_ARGUMENTS": "{\"x\":1}",
        "MCP_MESSAGE_NONCE": "n0nce",
        "MCP_CLIENT_CAPABILITIES": "{\"elicitation\":{},\"sampling\":{}}",
    });
    // Not ready, and not claimable, until the server answered initialize.
    assert_eq!(
        pod.request("GET", "/ready", None, "").await,
        (503, "starting".into())
    );
    assert_eq!(pod.claim("t1", env.clone()).await.0, 503);
    std::fs::write(&gate, "").unwrap();
    pod.wait_ready().await;
    assert_eq!(pod.claim("t1", env).await.0, 200);

    let (status, stdout, stderr) = pod.end().await;
    assert!(status.success(), "stderr: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "mcp-bridge: server fixture speaks MCP 2025-11-25",
        "{stdout}"
    );
    let message: Value = serde_json::from_str(lines.last().unwrap()).expect("a message");
    assert_eq!(message["mcp"], "result");
    assert_eq!(message["nonce"], "n0nce", "signed with the claim's nonce");
    let got = &message["result"]["structuredContent"];
    let call: Value = serde_json::from_str(got["call"].as_str().unwrap()).unwrap();
    assert_eq!(call["params"]["name"], "echo");
    assert_eq!(call["params"]["arguments"], json!({"x": 1}));
    let init: Value = serde_json::from_str(got["initialize"].as_str().unwrap()).unwrap();
    assert_eq!(
        init["params"]["capabilities"],
        json!({}),
        "a warm pod declares nothing"
    );
    // The server started before any task: no task data and no warm settings in its env.
    assert_eq!(got["task"], "");
    assert_eq!(got["warm"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_warm_server_that_dies_before_its_claim_ends_the_pod_and_speaks_for_no_task() {
    let dir = scratch("dies");
    let pod = Pod::start(
        "--warm",
        &["sh", "-c", "echo boom >&2; exit 3"],
        &[("MCP_BRIDGE_DIR", dir.to_str().unwrap())],
    );
    let (status, stdout, stderr) = pod.end().await;
    assert_eq!(status.code(), Some(1));
    assert_eq!(stdout, "");
    assert!(stderr.contains("boom"), "{stderr}");
    // The log holds stderr too: nothing there may read as a contract message.
    assert!(!stderr.lines().any(|l| l.starts_with('{')), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
