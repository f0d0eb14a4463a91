//! `--serve`: a bridged MCP server kept for many calls, one at a time (`docs/tool-contract.md`,
//! "Warm pods"). Started and initialized before any claim as with `--warm`; after each call the
//! pod waits for the next claim with the same server process, so the server's in-memory state
//! carries over. Each call sees only its own claim's env; the pod ends once idle too long.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::EXIT_GRACE;
use crate::claim::Claim;
use crate::contract::{Contract, NONCE_ENV};
use crate::launch::Waiting;
use crate::session::{self, Ended, Limits};

/// What ended an idle wait.
enum Woken {
    /// A task's claim.
    Claimed(Claim),
    /// `MCP_WARM_MAX_WAIT_SECONDS` without a claim.
    Idle,
    /// SIGTERM or SIGINT.
    Signalled,
}

/// `mcp-bridge --serve -- COMMAND [ARG...]`. `limits` gives the time limits; nothing is
/// declared to the server whatever a claim's client declared.
pub async fn main(command: &str, args: &[String], dir: &Path, limits: Limits) -> ExitCode {
    let Waiting {
        config,
        mut channel,
        mut signals,
    } = match Waiting::open(false, true).await {
        Ok(waiting) => waiting,
        Err(code) => return code,
    };
    let limits = Limits {
        // A cancelled call ends once the server is told, and the server is kept for the next.
        cancel_grace: Duration::ZERO,
        ..limits.declaring_nothing()
    };
    let unclaimed = Contract::unclaimed(dir);
    let deadline = Instant::now() + config.max_wait;
    let (mut server, init) = match crate::warm_bridge::start_initialized(
        command,
        args,
        &unclaimed,
        limits,
        deadline,
        &mut signals,
    )
    .await
    {
        Ok(started) => started,
        Err(code) => return code,
    };
    channel.set_ready();
    let mut id = session::CALL_ID;
    loop {
        let deadline = Instant::now() + config.max_wait;
        let woken = session::idle_until(&mut server, &unclaimed, limits, async {
            tokio::select! {
                claim = channel.claimed() => Woken::Claimed(claim),
                () = sleep_until(deadline) => Woken::Idle,
                _ = signals.recv() => Woken::Signalled,
            }
        })
        .await;
        // The claim to serve, and the exit code after it when the pod ends with it. A claim
        // that came in as the pod gave up is served: the operator was told it has the pod.
        let (claim, last) = match woken {
            Some(Woken::Claimed(claim)) => (claim, None),
            Some(Woken::Idle) => {
                let Some(claim) = channel.close() else {
                    server.stop(EXIT_GRACE).await;
                    return ExitCode::SUCCESS;
                };
                channel.set_ready();
                (claim, None)
            }
            Some(Woken::Signalled) => {
                let Some(claim) = channel.close() else {
                    server.stop(EXIT_GRACE).await;
                    return ExitCode::SUCCESS;
                };
                (claim, Some(ExitCode::SUCCESS))
            }
            None => {
                let Some(claim) = channel.close() else {
                    eprintln!("mcp-bridge: the MCP server ended while this pod waited for a call");
                    return ExitCode::from(1);
                };
                // The call reports the server's end to its task.
                (claim, Some(ExitCode::from(1)))
            }
        };
        let task = claim.task_id.clone();
        // Freed as the call's last line is written, so the caller's next call can claim the
        // pod as soon as it reads that line.
        let release = channel.release_of(&task);
        let contract = Contract::with_nonce(dir, claim.var(NONCE_ENV).map(str::to_owned))
            .for_reused_pod(move || release.release());
        let tool = claim
            .var("MCP_BRIDGE_TOOL")
            .or_else(|| claim.var("MCP_TOOL_NAME"))
            .unwrap_or_default();
        let ended = match crate::arguments(claim.var("MCP_TOOL_ARGUMENTS")) {
            Err(why) => {
                contract.error(-32602, &why, None);
                Ended::Answered
            }
            Ok(arguments) => {
                let call = session::call_initialized(
                    &mut server,
                    &contract,
                    tool,
                    arguments,
                    limits,
                    &init,
                    id,
                );
                tokio::select! {
                    ended = call => ended,
                    sig = signals.recv() => {
                        // Dropping the server kills it.
                        return ExitCode::from(128u8.saturating_add(sig.as_raw().clamp(0, 127) as u8));
                    }
                }
            }
        };
        id += 1;
        if ended == Ended::ServerGone {
            // The task has its error; the pod, still held by it, takes no other call.
            channel.close();
            eprintln!("mcp-bridge: the MCP server ended during a call; this pod ends");
            server.stop(Duration::ZERO).await;
            return ExitCode::from(1);
        }
        // A cancelled call wrote no last line.
        channel.release_of(&task).release();
        if let Some(code) = last {
            channel.close();
            server.stop(EXIT_GRACE).await;
            return code;
        }
    }
}
