//! `--launch`: once a warm pod is claimed, runs the native tool as a child with the claim's
//! env, its output going straight to the container log. A child, not an exec: the claim
//! listener keeps answering the operator's retries while the tool runs.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitCode, ExitStatus, Stdio};

use rustix::process::{Pid, Signal, kill_process};
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};

use crate::claim::Claim;
use crate::warm::{Channel, Config, ENV_PREFIX};

/// SIGTERM and SIGINT, caught for the whole life of the process (the launcher may be PID 1,
/// which the kernel sends neither by default).
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts catching SIGTERM and SIGINT.
    pub fn catch() -> std::io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The next SIGTERM or SIGINT.
    pub async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::TERM,
            _ = self.int.recv() => Signal::INT,
        }
    }
}

/// A pod waiting for its claim: its settings, its claim channel, its signals.
pub struct Waiting {
    /// From the env.
    pub config: Config,
    /// The listener, bound.
    pub channel: Channel,
    /// SIGTERM and SIGINT.
    pub signals: Signals,
}

impl Waiting {
    /// Reads the settings, catches the signals and listens (`/ready` answers 200 at once when
    /// `ready`; a `reusable` pod is claimed again after each call); the exit code when that
    /// fails: 2 for a bad setting, 1 otherwise.
    pub async fn open(ready: bool, reusable: bool) -> Result<Self, ExitCode> {
        let config = Config::from_env().map_err(|why| {
            eprintln!("mcp-bridge: {why}");
            ExitCode::from(2)
        })?;
        let signals = Signals::catch().map_err(|e| {
            eprintln!("mcp-bridge: cannot catch SIGTERM: {e}");
            ExitCode::from(1)
        })?;
        let channel = Channel::listen(&config, ready, reusable)
            .await
            .map_err(|e| {
                eprintln!("mcp-bridge: cannot listen on port {}: {e}", config.port);
                ExitCode::from(1)
            })?;
        Ok(Self {
            config,
            channel,
            signals,
        })
    }
}

/// `mcp-bridge --launch -- COMMAND [ARG...]`: waits for the claim, then runs the tool.
pub async fn main(command: &str, args: &[String]) -> ExitCode {
    // Found now, a missing command ends the pod before it is ready, never handed to a task.
    if !resolvable(command) {
        eprintln!("mcp-bridge: the tool command `{command}` is not an executable file");
        return ExitCode::from(2);
    }
    let mut waiting = match Waiting::open(true, false).await {
        Ok(waiting) => waiting,
        Err(code) => return code,
    };
    let claim = tokio::select! {
        claim = waiting.channel.claimed() => Some(claim),
        () = tokio::time::sleep(waiting.config.max_wait) => waiting.channel.close(),
        _ = waiting.signals.recv() => return ExitCode::SUCCESS,
    };
    match claim {
        Some(claim) => run(command, args, &claim, &mut waiting.signals).await,
        None => ExitCode::SUCCESS,
    }
}

/// Whether `command` names an executable file, as `execvp` would find it.
pub fn resolvable(command: &str) -> bool {
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return executable(Path::new(command));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| executable(&dir.join(command)))
}

/// Runs `command` with `args` for the task of `claim` and exits as it does: its exit code, or
/// 128 + the signal that killed it. SIGTERM and SIGINT are passed on to it.
pub async fn run(command: &str, args: &[String], claim: &Claim, signals: &mut Signals) -> ExitCode {
    let mut child = Command::new(command);
    child
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with(ENV_PREFIX) {
            child.env_remove(name);
        }
    }
    child.envs(claim.env.iter().map(|(n, v)| (n, v)));
    let mut child = match child.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("mcp-bridge: cannot start the tool command `{command}`: {e}");
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return ExitCode::from(code);
        }
    };
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    loop {
        tokio::select! {
            status = child.wait() => return match status {
                Ok(status) => exit_code(status),
                Err(e) => {
                    eprintln!("mcp-bridge: lost the tool process: {e}");
                    ExitCode::from(1)
                }
            },
            sig = signals.recv() => {
                if let Some(pid) = pid {
                    let _ = kill_process(pid, sig);
                }
            }
        }
    }
}

/// The launcher's exit code for the child's `status`, as a shell reports it.
fn exit_code(status: ExitStatus) -> ExitCode {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from(128u8.saturating_add(sig.clamp(0, 127) as u8)),
        (None, None) => ExitCode::from(1),
    }
}
