//! The bridge (`bridge/`, `mcp-bridge`) between real MCP servers nobody here wrote and the
//! tool container contract: the reference "everything" server (npm) and mcp-server-time
//! (PyPI), installed by `hack/mcp-servers.sh`, each run by the bridge exactly as in a tool pod,
//! with the task's files in a directory of the test's own.
//!
//! `MTO_BRIDGE_BIN` and `MTO_SERVERS` come from `make integration`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// Longest the test waits for one line of the bridge.
const LINE_WAIT: Duration = Duration::from_secs(60);

fn servers() -> PathBuf {
    PathBuf::from(
        std::env::var("MTO_SERVERS")
            .expect("MTO_SERVERS is not set: run the integration tests through `make test`"),
    )
}

/// A bridge running one call, and the task's files it reads.
struct Bridge {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    dir: PathBuf,
}

impl Bridge {
    /// Runs `mcp-bridge [extra...] -- command` with `env`, in a fresh task directory.
    fn start(command: &[&str], extra: &[&str], env: &[(&str, &str)], nonce: Option<&str>) -> Self {
        let dir = std::env::temp_dir().join(format!("mto-bridge-{}", rand_suffix()));
        std::fs::create_dir_all(&dir).expect("task dir");
        if let Some(nonce) = nonce {
            std::fs::write(dir.join("message-nonce"), nonce).expect("nonce file");
        }
        let bin = std::env::var("MTO_BRIDGE_BIN")
            .expect("MTO_BRIDGE_BIN is not set: run the integration tests through `make test`");
        let mut child = Command::new(bin)
            .args(extra)
            .arg("--")
            .args(command)
            .env("MCP_BRIDGE_DIR", &dir)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the bridge starts");
        let stdout = child.stdout.take().expect("stdout");
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
            dir,
        }
    }

    /// The next line, or `None` at the end of the output.
    async fn line(&mut self) -> Option<String> {
        tokio::time::timeout(LINE_WAIT, self.lines.next_line())
            .await
            .expect("a line within a minute")
            .expect("readable output")
    }

    /// The next contract message (`{"mcp":...}`), skipping log lines; `None` at the end.
    async fn message(&mut self) -> Option<Value> {
        while let Some(line) = self.line().await {
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && value.get("mcp").is_some()
            {
                return Some(value);
            }
        }
        None
    }

    /// Messages until the end of the output.
    async fn rest(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Some(message) = self.message().await {
            all.push(message);
        }
        all
    }

    fn write(&self, file: &str, text: &str) {
        std::fs::write(self.dir.join(file), text).expect("write a task file");
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> String {
    format!("{}-{:?}", std::process::id(), Instant::now()).replace(['{', '}', ' ', ':', '.'], "")
}

fn everything() -> String {
    servers().join("everything").display().to_string()
}

fn time_server() -> String {
    servers().join("time").display().to_string()
}

#[tokio::test]
async fn progress_becomes_status_lines_and_the_result_the_tasks() {
    let server = everything();
    let env = [
        ("MCP_TOOL_NAME", "trigger-long-running-operation"),
        ("MCP_TOOL_ARGUMENTS", r#"{"duration":2,"steps":4}"#),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let messages = bridge.rest().await;
    let statuses: Vec<&str> = messages
        .iter()
        .filter(|m| m["mcp"] == "status")
        .filter_map(|m| m["message"].as_str())
        .collect();
    assert_eq!(statuses, ["1/4", "2/4", "3/4", "4/4"], "{messages:#?}");
    let result = messages.last().expect("a last message");
    assert_eq!(result["mcp"], "result", "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        "Long running operation completed. Duration: 2 seconds, Steps: 4."
    );
}

#[tokio::test]
async fn an_elicitation_round_trips_through_the_answers_file() {
    let server = everything();
    let env = [
        ("MCP_TOOL_NAME", "trigger-elicitation-request"),
        ("MCP_CLIENT_CAPABILITIES", r#"{"elicitation":{}}"#),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let input = bridge.message().await.expect("an input request");
    assert_eq!(input["mcp"], "input", "{input}");
    let request = &input["requests"]["elicitation-1"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["check"]["type"],
        "boolean"
    );
    let answer =
        json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada", "check": true}}});
    bridge.write("input-responses", &answer.to_string());
    let result = bridge.message().await.expect("a result");
    assert_eq!(result["mcp"], "result", "{result}");
    let text = result["result"]["content"].to_string();
    assert!(
        text.contains("Name: Ada") && text.contains("Agreed to terms: true"),
        "{text}"
    );
}

#[tokio::test]
async fn a_cancel_reaches_the_server_and_no_result_is_printed() {
    let server = everything();
    let env = [
        ("MCP_TOOL_NAME", "trigger-long-running-operation"),
        ("MCP_TOOL_ARGUMENTS", r#"{"duration":60,"steps":60}"#),
        ("MCP_BRIDGE_CANCEL_GRACE_SECONDS", "2"),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let first = bridge.message().await.expect("progress");
    assert_eq!(first["message"], "1/60", "{first}");
    bridge.write("cancel-requested", "2026-12-01T12:00:00Z");
    let cancelled = Instant::now();
    let mut log = Vec::new();
    while let Some(line) = bridge.line().await {
        log.push(line);
    }
    let status = bridge.child.wait().await.expect("the bridge exits");
    assert!(status.success());
    // The server ignores the cancel; the bridge stops it after its grace period.
    assert!(
        cancelled.elapsed() < Duration::from_secs(20),
        "{:?}",
        cancelled.elapsed()
    );
    assert!(
        log.iter()
            .any(|l| l.contains("sent notifications/cancelled")),
        "{log:#?}"
    );
    assert!(!log.iter().any(|l| l.contains("\"result\"")), "{log:#?}");
}

#[tokio::test]
async fn discovery_lists_every_tool_with_its_own_schemas() {
    for (server, tool, property) in [
        (everything(), "get-sum", "a"),
        (time_server(), "convert_time", "source_timezone"),
    ] {
        let mut bridge = Bridge::start(&[&server], &["--list"], &[], None);
        let listed = bridge.message().await.expect("the tool list");
        assert_eq!(listed["mcp"], "result", "{listed}");
        let content = &listed["result"]["structuredContent"];
        let tools = content["tools"].as_array().expect("tools");
        let found = tools
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap_or_else(|| panic!("{tool} in {content}"));
        assert!(
            found["inputSchema"]["properties"].get(property).is_some(),
            "{found}"
        );
        assert!(content["serverInfo"]["name"].is_string(), "{content}");
    }
}

#[tokio::test]
async fn a_python_servers_structured_result_and_tool_error_pass_through() {
    let server = time_server();
    let args =
        r#"{"source_timezone":"Europe/Paris","time":"14:30","target_timezone":"Asia/Tokyo"}"#;
    let env = [
        ("MCP_TOOL_NAME", "convert_time"),
        ("MCP_TOOL_ARGUMENTS", args),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let result = bridge.message().await.expect("a result");
    assert_eq!(
        result["result"]["structuredContent"]["time_difference"], "+8.0h",
        "{result}"
    );
    let env = [
        ("MCP_TOOL_NAME", "get_current_time"),
        ("MCP_TOOL_ARGUMENTS", r#"{"timezone":"Mars/Olympus"}"#),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let result = bridge.message().await.expect("a result");
    assert_eq!(result["result"]["isError"], true, "{result}");
}

#[tokio::test]
async fn a_server_that_dies_or_stays_silent_fails_with_its_last_words() {
    let mut bridge = Bridge::start(
        &["sh", "-c", "echo 'no such config: /etc/x' >&2; exit 3"],
        &[],
        &[],
        None,
    );
    let error = bridge.message().await.expect("an error");
    assert_eq!(error["mcp"], "error", "{error}");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("exited") && message.contains("before answering initialize"),
        "{message}"
    );
    assert!(message.contains("no such config: /etc/x"), "{message}");
    assert_eq!(
        error["error"]["data"]["stderr"][0],
        "no such config: /etc/x"
    );

    let env = [("MCP_BRIDGE_INITIALIZE_SECONDS", "1")];
    let mut bridge = Bridge::start(&["sleep", "30"], &[], &env, None);
    let error = bridge.message().await.expect("an error");
    assert_eq!(
        error["error"]["message"],
        "The MCP server did not answer initialize within 1 s"
    );

    let mut bridge = Bridge::start(&["/no/such/server"], &[], &[], None);
    let error = bridge.message().await.expect("an error");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("The MCP server command `/no/such/server` could not be started"),
        "{message}"
    );
}

#[tokio::test]
async fn every_message_carries_the_tasks_nonce() {
    let server = everything();
    let nonce = "ab".repeat(32);
    let env = [
        ("MCP_TOOL_NAME", "echo"),
        (
            "MCP_TOOL_ARGUMENTS",
            r#"{"message":"{\"mcp\":\"result\"}"}"#,
        ),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, Some(&nonce));
    let messages = bridge.rest().await;
    assert!(!messages.is_empty());
    for message in &messages {
        assert_eq!(message["nonce"], nonce.as_str(), "{message}");
    }
    // The echoed text that looks like a message is inside the result, not a line of its own.
    assert_eq!(messages.len(), 1, "{messages:#?}");
}

#[tokio::test]
async fn sampling_is_passed_on_only_when_the_client_declared_it() {
    let server = everything();
    let declared = [
        ("MCP_TOOL_NAME", "trigger-sampling-request"),
        ("MCP_TOOL_ARGUMENTS", r#"{"prompt":"the answer?"}"#),
        (
            "MCP_CLIENT_CAPABILITIES",
            r#"{"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#,
        ),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &declared, None);
    let input = bridge.message().await.expect("an input request");
    let request = &input["requests"]["sampling-1"];
    assert_eq!(request["method"], "sampling/createMessage", "{input}");
    assert!(
        request["params"]["messages"]
            .to_string()
            .contains("the answer?"),
        "{request}"
    );
    let answer = json!({"sampling-1": {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "test-model"}});
    bridge.write("input-responses", &answer.to_string());
    let result = bridge.message().await.expect("a result");
    assert!(
        result["result"]["content"].to_string().contains("42"),
        "{result}"
    );

    // Without the capability the bridge does not declare sampling, so the server has no such
    // tool, and says so.
    let undeclared = [
        ("MCP_TOOL_NAME", "trigger-sampling-request"),
        ("MCP_TOOL_ARGUMENTS", r#"{"prompt":"the answer?"}"#),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &undeclared, None);
    let result = bridge.message().await.expect("an answer");
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(
        result["result"]["content"]
            .to_string()
            .contains("not found"),
        "{result}"
    );
}

/// The text of a result's content, or panics with the message.
fn content_text(message: &Value) -> String {
    assert_eq!(message["mcp"], "result", "{message}");
    message["result"]["content"].to_string()
}

#[tokio::test]
async fn elicitation_is_declared_to_the_server_only_as_the_client_declared_it() {
    let server = everything();
    // Nothing declared: the server offers no elicitation tool to this client.
    let env = [("MCP_TOOL_NAME", "trigger-elicitation-request")];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let result = bridge.message().await.expect("an answer");
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(content_text(&result).contains("not found"), "{result}");

    // URL mode declared: the server's URL elicitation is an input request, its answer the
    // server's result.
    let url_only = r#"{"elicitation":{"url":{}}}"#;
    let env = [
        ("MCP_TOOL_NAME", "trigger-url-elicitation"),
        (
            "MCP_TOOL_ARGUMENTS",
            r#"{"url":"https://example.com/consent"}"#,
        ),
        ("MCP_CLIENT_CAPABILITIES", url_only),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let input = bridge.message().await.expect("an input request");
    let request = &input["requests"]["elicitation-1"];
    assert_eq!(request["params"]["mode"], "url", "{input}");
    assert_eq!(
        request["params"]["url"], "https://example.com/consent",
        "{input}"
    );
    bridge.write(
        "input-responses",
        r#"{"elicitation-1": {"action": "accept"}}"#,
    );
    let result = bridge.message().await.expect("a result");
    assert_ne!(result["result"]["isError"], true, "{result}");

    // ... but a form elicitation from the same server is refused at once with -32602
    // (the mode was not declared), never shown to the client.
    let env = [
        ("MCP_TOOL_NAME", "trigger-elicitation-request"),
        ("MCP_CLIENT_CAPABILITIES", url_only),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let result = bridge.message().await.expect("an answer");
    let text = content_text(&result);
    assert!(text.contains("-32602") && text.contains("form"), "{result}");
}

#[tokio::test]
async fn an_answer_the_client_could_not_give_reaches_the_server_as_an_error() {
    let server = everything();
    let env = [
        ("MCP_TOOL_NAME", "trigger-elicitation-request"),
        ("MCP_CLIENT_CAPABILITIES", r#"{"elicitation":{}}"#),
    ];
    let mut bridge = Bridge::start(&[&server], &[], &env, None);
    let input = bridge.message().await.expect("an input request");
    assert_eq!(input["mcp"], "input", "{input}");
    // What the front end writes for a request the client cannot be asked
    // (docs/tool-contract.md, "Input the client cannot be asked").
    let answer = json!({"elicitation-1": {"error": {
        "code": -32021,
        "message": "Missing required client capability: the client cannot be asked",
        "data": {"requiredCapabilities": {"elicitation": {"form": {}}}},
    }}});
    bridge.write("input-responses", &answer.to_string());
    let result = bridge.message().await.expect("an answer");
    let text = content_text(&result);
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(
        text.contains("-32021") && text.contains("the client cannot be asked"),
        "{result}"
    );
}

#[tokio::test]
async fn discovery_lists_the_tools_a_server_offers_only_to_capable_clients() {
    let mut bridge = Bridge::start(&[&everything()], &["--list"], &[], None);
    let listed = bridge.message().await.expect("the tool list");
    let tools = listed["result"]["structuredContent"]["tools"].to_string();
    for tool in [
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
    ] {
        assert!(
            tools.contains(&format!("\"{tool}\"")),
            "{tool} not in {tools}"
        );
    }
}
