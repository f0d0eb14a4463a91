//! A tool written in Rust against the tool container contract (v1), for the operator's
//! end-to-end tests (`hack/images.sh` packages it as `localhost/rust-tool:v1`).
//!
//! Arguments (`MCP_TOOL_ARGUMENTS`, every key optional):
//! - `steps` (default 3) status lines `{"mcp":"status","message":"step N of M at T"}`, one every
//!   `delayMs` (default 200); `T` is the wall-clock time in Unix seconds with nanoseconds, so a
//!   test on the same machine can measure how long a line takes to reach the task.
//! - `ask`: after the steps, ask for input under this key (a form with one boolean `confirm`),
//!   wait until `/var/run/mcp/input-responses` holds it, and put the answer in the result.
//! - `plain`: finish with a plain line `exiting at T` and exit 0 without a result message.
//! - `exitCode`: finish with that exit code (after the plain line) instead.
//!
//! Otherwise it finishes with a result message whose `structuredContent.printedAt` is the
//! time `T` it was printed.
//!
//! Cancel (`/var/run/mcp/cancel-requested` non-empty) is checked every 20 ms: the tool prints
//! `{"mcp":"status","message":"cancelled at T"}` and exits 0 without a result.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

const RUN_DIR: &str = "/var/run/mcp";
const POLL: Duration = Duration::from_millis(20);

fn main() {
    let args: Value = std::env::var("MCP_TOOL_ARGUMENTS")
        .ok()
        .and_then(|a| serde_json::from_str(&a).ok())
        .unwrap_or_else(|| json!({}));
    let steps = args["steps"].as_u64().unwrap_or(3);
    let delay = Duration::from_millis(args["delayMs"].as_u64().unwrap_or(200));
    let task_id = std::env::var("MCP_TASK_ID").unwrap_or_default();
    println!("rust-tool: task {task_id}, arguments {args}");

    for step in 1..=steps {
        if wait(delay) {
            return cancelled();
        }
        message(&json!({
            "mcp": "status",
            "message": format!("step {step} of {steps} at {}", now()),
        }));
    }

    let mut answer = Value::Null;
    if let Some(key) = args["ask"].as_str() {
        message(&json!({"mcp": "input", "requests": {key: {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Go on?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                },
            },
        }}}));
        loop {
            if cancel_requested() {
                return cancelled();
            }
            let responses = std::fs::read_to_string(Path::new(RUN_DIR).join("input-responses"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok());
            if let Some(found) = responses.as_ref().and_then(|r| r.get(key)) {
                answer = found.clone();
                break;
            }
            std::thread::sleep(POLL);
        }
    }

    if args["plain"].as_bool() == Some(true) || args.get("exitCode").is_some() {
        println!("exiting at {}", now());
        let _ = std::io::stdout().flush();
        let code = args["exitCode"].as_i64().unwrap_or(0);
        std::process::exit(i32::try_from(code).unwrap_or(1));
    }
    let text = format!("rust-tool did {steps} steps");
    message(&json!({"mcp": "result", "result": {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {
            "steps": steps, "answer": answer, "taskId": task_id, "printedAt": now(),
        },
        "isError": false,
    }}));
}

/// Prints one contract message as a single stdout line.
fn message(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// Waits `total`, checking for cancel; returns whether cancel was requested.
fn wait(total: Duration) -> bool {
    let until = std::time::Instant::now() + total;
    loop {
        if cancel_requested() {
            return true;
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(POLL));
    }
}

fn cancel_requested() -> bool {
    std::fs::read_to_string(Path::new(RUN_DIR).join("cancel-requested"))
        .is_ok_and(|t| !t.trim().is_empty())
}

fn cancelled() {
    message(&json!({"mcp": "status", "message": format!("cancelled at {}", now())}));
}

/// Wall-clock time in Unix seconds, nanosecond precision.
fn now() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}", t.as_secs(), t.subsec_nanos())
}
