//! `mcp-bridge`: runs a stdio MCP server inside a tool pod and turns one call of one of its
//! tools into the tool container contract (`docs/tool-contract.md`), so that any existing MCP
//! server image runs as durable task tools.
//!
//! ```text
//! mcp-bridge [--list] [--] COMMAND [ARG...]
//! mcp-bridge --warm -- COMMAND [ARG...]
//! mcp-bridge --serve -- COMMAND [ARG...]
//! mcp-bridge --launch -- COMMAND [ARG...]
//! mcp-bridge --install DEST
//! ```
//!
//! `--install` copies the binary to DEST (what the init container of a server's pod does, so
//! that the server's own image needs nothing of ours). `--warm` and `--launch` run in a warm
//! pod (`docs/tool-contract.md`, "Warm pods"): they wait for a task's claim, `--warm` with the
//! server already initialized, `--launch` to then start a native tool with the claim's env.
//! `--serve` is `--warm` for many calls, one at a time, with the same server process (a tool
//! with `reuse: perCaller`): after each call it waits for the next claim.
//!
//! Without `--list` it calls the tool `MCP_BRIDGE_TOOL` (default `MCP_TOOL_NAME`) with
//! `MCP_TOOL_ARGUMENTS`; with `--list` it prints the server's tools as a result, for
//! discovery. The server's exit code does not matter: the printed result or error decides.
//!
//! | env | default | what |
//! |---|---|---|
//! | `MCP_BRIDGE_TOOL` | `MCP_TOOL_NAME` | the tool's name on the server |
//! | `MCP_TOOL_ARGUMENTS` | `{}` | the call's arguments, a JSON object |
//! | `MCP_BRIDGE_DIR` | `/var/run/mcp` | the task's contract files |
//! | `MCP_BRIDGE_INITIALIZE_SECONDS` | 60 | for the server to answer `initialize` (and each `tools/list`) |
//! | `MCP_BRIDGE_CANCEL_GRACE_SECONDS` | 10 | for the server to stop after `notifications/cancelled` |
//! | `MCP_CLIENT_CAPABILITIES` | `{}` | set by the operator: the bridge declares to the server the client's `elicitation` (with its modes), `sampling` and `roots`, and only those; the server's requests of those kinds become input requests |
//! | `MCP_MESSAGE_NONCE` | the file `message-nonce` | set by the operator: the nonce the bridge signs its messages with; the server is started without it, and cannot read the bridge's environment (the bridge is not dumpable) |

mod claim;
mod contract;
mod launch;
mod serve;
mod server;
mod session;
mod warm;
mod warm_bridge;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rustix::process::DumpableBehavior;
use serde_json::Value;

use crate::contract::{Contract, DEFAULT_DIR};
use crate::server::Server;
use crate::session::{Elicitation, Ended, Limits};

/// How long a server that answered may take to exit once its stdin is closed.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Largest value accepted for the time settings.
const MAX_SECONDS: u64 = 86_400;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // The server runs in this container as this user: without this it could read the message
    // nonce from /proc/<bridge>/environ (or its memory) and sign lines of its own.
    if let Err(e) = rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable) {
        eprintln!("mcp-bridge: cannot hide its process from the server (prctl: {e})");
    }
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--install") {
        return install(args.get(1));
    }
    let mode = args
        .first()
        .filter(|a| ["--list", "--warm", "--serve", "--launch"].contains(&a.as_str()))
        .cloned();
    if mode.is_some() {
        args.remove(0);
    }
    let list = mode.as_deref() == Some("--list");
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    let dir = PathBuf::from(std::env::var("MCP_BRIDGE_DIR").unwrap_or_else(|_| DEFAULT_DIR.into()));
    let contract = Contract::new(&dir);
    let Some((command, rest)) = args.split_first() else {
        eprintln!("usage: mcp-bridge [--list|--warm|--serve|--launch] [--] COMMAND [ARG...]");
        return ExitCode::from(2);
    };
    match mode.as_deref() {
        Some("--launch") => return launch::main(command, rest).await,
        Some(warm @ ("--warm" | "--serve")) => {
            // No task to report a bad setting to: the pod ends before it is ready.
            return match limits() {
                Ok(limits) if warm == "--serve" => serve::main(command, rest, &dir, limits).await,
                Ok(limits) => warm_bridge::main(command, rest, &dir, limits).await,
                Err(why) => {
                    eprintln!("mcp-bridge: {why}");
                    ExitCode::from(2)
                }
            };
        }
        _ => {}
    }
    let limits = match limits() {
        Ok(limits) => limits,
        Err(why) => {
            contract.error(-32603, &format!("mcp-bridge is misconfigured: {why}"), None);
            return ExitCode::SUCCESS;
        }
    };
    let mut server = match Server::start(command, rest) {
        Ok(server) => server,
        Err(e) => {
            let message = format!("The MCP server command `{command}` could not be started: {e}");
            contract.error(-32603, &message, None);
            return ExitCode::SUCCESS;
        }
    };
    let ended = if list {
        session::list(&mut server, &contract, limits).await
    } else {
        let tool = std::env::var("MCP_BRIDGE_TOOL")
            .or_else(|_| std::env::var("MCP_TOOL_NAME"))
            .unwrap_or_default();
        let arguments = match arguments(std::env::var("MCP_TOOL_ARGUMENTS").ok().as_deref()) {
            Ok(arguments) => arguments,
            Err(why) => {
                contract.error(-32602, &why, None);
                server.stop(Duration::ZERO).await;
                return ExitCode::SUCCESS;
            }
        };
        session::call(&mut server, &contract, &tool, arguments, limits).await
    };
    let grace = if ended == Ended::Cancelled {
        Duration::ZERO
    } else {
        EXIT_GRACE
    };
    server.stop(grace).await;
    ExitCode::SUCCESS
}

/// Copies this binary to `dest`, executable.
fn install(dest: Option<&String>) -> ExitCode {
    let Some(dest) = dest else {
        eprintln!("usage: mcp-bridge --install DEST");
        return ExitCode::from(2);
    };
    let copied = std::env::current_exe()
        .and_then(|me| std::fs::copy(me, dest))
        .and_then(|_| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dest, std::fs::Permissions::from_mode(0o555))
        });
    match copied {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-bridge: cannot install to {dest}: {e}");
            ExitCode::from(1)
        }
    }
}

/// The call's arguments from the text of `MCP_TOOL_ARGUMENTS` (`{}` when unset).
pub(crate) fn arguments(text: Option<&str>) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text.unwrap_or("{}")) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err("MCP_TOOL_ARGUMENTS is not a JSON object".into()),
    }
}

fn limits() -> Result<Limits, String> {
    // What the client that created the task can answer (the operator sets it for every task).
    let declared = std::env::var("MCP_CLIENT_CAPABILITIES")
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .unwrap_or(Value::Null);
    Ok(Limits {
        initialize: seconds("MCP_BRIDGE_INITIALIZE_SECONDS", 60)?,
        cancel_grace: seconds("MCP_BRIDGE_CANCEL_GRACE_SECONDS", 10)?,
        elicitation: declared.get("elicitation").and_then(Elicitation::declared),
        sampling: declared.get("sampling").is_some_and(Value::is_object),
        roots: declared.get("roots").is_some_and(Value::is_object),
    })
}

fn seconds(name: &str, default: u64) -> Result<Duration, String> {
    match std::env::var(name) {
        Err(_) => Ok(Duration::from_secs(default)),
        Ok(text) => match text.parse::<u64>() {
            Ok(n) if (1..=MAX_SECONDS).contains(&n) => Ok(Duration::from_secs(n)),
            _ => Err(format!(
                "{name} must be a whole number of seconds from 1 to {MAX_SECONDS}, got {text:?}"
            )),
        },
    }
}
