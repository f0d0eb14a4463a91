//! `--warm`: a bridged MCP server started and initialized before any task claims the pod;
//! the claim's env then names the one `tools/call`, which runs exactly as in a cold pod.
//! Before the claim nothing goes to stdout (the task's channel); the server's requests are
//! refused, since no client is behind it yet.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::contract::{Contract, NONCE_ENV};
use crate::launch::Waiting;
use crate::server::Server;
use crate::session::{self, Ended, Limits};

/// `mcp-bridge --warm -- COMMAND [ARG...]`. `limits` gives the time limits; nothing is
/// declared to the server whatever the claim's client declared.
pub async fn main(command: &str, args: &[String], dir: &Path, limits: Limits) -> ExitCode {
    let Waiting {
        config,
        mut channel,
        mut signals,
    } = match Waiting::open(false, false).await {
        Ok(waiting) => waiting,
        Err(code) => return code,
    };
    let deadline = Instant::now() + config.max_wait;
    let limits = limits.declaring_nothing();
    let unclaimed = Contract::unclaimed(dir);
    let (mut server, init) =
        match start_initialized(command, args, &unclaimed, limits, deadline, &mut signals).await {
            Ok(started) => started,
            Err(code) => return code,
        };
    channel.set_ready();
    let waited = session::idle_until(&mut server, &unclaimed, limits, async {
        tokio::select! {
            claim = channel.claimed() => Some(claim),
            () = sleep_until(deadline) => None,
            _ = signals.recv() => None,
        }
    })
    .await;
    let claim = match waited {
        Some(Some(claim)) => claim,
        Some(None) => {
            // The wait is over, unless a claim came in meanwhile: it is served.
            let Some(claim) = channel.close() else {
                server.stop(Duration::ZERO).await;
                return ExitCode::SUCCESS;
            };
            claim
        }
        None => {
            let Some(claim) = channel.close() else {
                eprintln!("mcp-bridge: the MCP server ended before a task claimed this pod");
                return ExitCode::from(1);
            };
            // Claimed as the server ended: the call below reports it to the task.
            claim
        }
    };
    let contract = Contract::with_nonce(dir, claim.var(NONCE_ENV).map(str::to_owned));
    let tool = claim
        .var("MCP_BRIDGE_TOOL")
        .or_else(|| claim.var("MCP_TOOL_NAME"))
        .unwrap_or_default();
    let arguments = match crate::arguments(claim.var("MCP_TOOL_ARGUMENTS")) {
        Ok(arguments) => arguments,
        Err(why) => {
            contract.error(-32602, &why, None);
            server.stop(Duration::ZERO).await;
            return ExitCode::SUCCESS;
        }
    };
    let call = session::call_initialized(
        &mut server,
        &contract,
        tool,
        arguments,
        limits,
        &init,
        session::CALL_ID,
    );
    let ended = tokio::select! {
        ended = call => ended,
        sig = signals.recv() => {
            // Dropping the server kills it.
            return ExitCode::from(128u8.saturating_add(sig.as_raw().clamp(0, 127) as u8));
        }
    };
    let grace = if ended == Ended::Cancelled {
        Duration::ZERO
    } else {
        crate::EXIT_GRACE
    };
    server.stop(grace).await;
    ExitCode::SUCCESS
}

/// Starts the server `command` and has it answer `initialize` before `deadline` (the pod's wait
/// for a claim), before any claim: `Err` is how the pod ends (0: its wait ran out or a signal
/// came; 1: the server could not start or initialize, said on stderr through `unclaimed`).
pub async fn start_initialized(
    command: &str,
    args: &[String],
    unclaimed: &Contract,
    limits: Limits,
    deadline: Instant,
    signals: &mut crate::launch::Signals,
) -> Result<(Server, serde_json::Value), ExitCode> {
    let mut server = match Server::start(command, args) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mcp-bridge: the MCP server command `{command}` could not be started: {e}");
            return Err(ExitCode::from(1));
        }
    };
    let started = tokio::select! {
        init = session::initialize(&mut server, unclaimed, limits) => Some(init),
        () = sleep_until(deadline) => None,
        _ = signals.recv() => None,
    };
    match started {
        None => {
            server.stop(Duration::ZERO).await;
            Err(ExitCode::SUCCESS)
        }
        // The error went to stderr through `unclaimed`.
        Some(Err(_)) => Err(ExitCode::from(1)),
        Some(Ok(init)) => Ok((server, init)),
    }
}
