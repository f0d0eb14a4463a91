//! `kubectl mcp`: call MCP tools as tasks through the mcp-task-operator front end, follow them,
//! answer their questions and cancel them; list and inspect `McpTask`s with the kubeconfig.
//!
//! kubectl runs any `kubectl-<name>` executable on the PATH as `kubectl <name>`
//! (https://kubernetes.io/docs/tasks/extend-kubectl/kubectl-plugins/).

mod args;
mod cluster;
mod front;
mod prompt;
mod service;
mod term;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use crate::cluster::{Cluster, result_text};
use crate::front::Front;
use crate::term::inert_line;

/// Bounds on how often a followed task is polled, whatever its `pollIntervalMs` says.
const MIN_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(30);

/// Errors, each printed as one line that says what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command line or an answer that cannot be used.
    #[error("{0}")]
    Usage(String),
    /// The front end could not be reached or answered something unreadable.
    #[error("{0}")]
    Front(String),
    /// A JSON-RPC error from the front end.
    #[error("the front end answered {code}: {message}")]
    Rpc { code: i64, message: String },
    /// The Kubernetes API.
    #[error("{0}")]
    Kube(String),
}

#[derive(Parser)]
#[command(name = "kubectl mcp", version, about = "MCP tools as Kubernetes tasks")]
struct Cli {
    /// Namespace of the tasks and the front end (default: the kubeconfig's).
    #[arg(short, long, global = true)]
    namespace: Option<String>,
    /// The front end's MCP endpoint (default: its Service's cluster IP in the namespace).
    #[arg(long, global = true, env = "MCP_URL")]
    url: Option<String>,
    /// Helm release whose front end Service to use when there is no --url; needed when more
    /// than one Service in the namespace is labelled as the front end.
    #[arg(long, global = true, env = "MCP_RELEASE")]
    release: Option<String>,
    /// Bearer token for the front end.
    #[arg(long, global = true, env = "MCP_BEARER_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Make a ten-minute token of this ServiceAccount (needs `create serviceaccounts/token`).
    #[arg(long, global = true, conflicts_with = "token")]
    service_account: Option<String>,
    /// Audience of the token made for --service-account (default: the one the front end's
    /// Service publishes, annotation `mcptasks.io/token-audience`, the release's own).
    #[arg(long, global = true, env = "MCP_TOKEN_AUDIENCE")]
    audience: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Call TOOL with key=value arguments; prints the task ID, or follows it with --follow.
    Call {
        tool: String,
        /// Arguments as key=value; values are typed by the tool's input schema.
        arguments: Vec<String>,
        /// Follow the task: show each status message, ask its questions, print its result.
        #[arg(short, long)]
        follow: bool,
    },
    /// Follow a running task until it ends.
    Follow { task: String },
    /// The tasks of the namespace: tool, status, message, age, owner.
    Tasks {
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
    /// One task: status, arguments, result or error, and its Events.
    Describe { task: String },
    /// The tool container's log.
    Logs {
        task: String,
        #[arg(short, long)]
        follow: bool,
    },
    /// Answer the task's open questions, asked one field at a time.
    Answer { task: String },
    /// Ask the task to stop.
    Cancel { task: String },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            term::warn(&format!("error: {}", term::inert_line(&e.to_string())));
            ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Error> {
    let cluster = Cluster::connect(cli.namespace.clone()).await;
    match &cli.command {
        Command::Tasks { all_namespaces } => {
            term::say(cluster?.tasks(*all_namespaces).await?.trim_end());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Describe { task } => {
            term::say(cluster?.describe(task).await?.trim_end());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Logs { task, follow } => {
            cluster?.logs(task, *follow).await?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let front = front(&cli, cluster).await?;
    let mut input = prompt::stdin();
    match cli.command {
        Command::Call {
            tool,
            arguments,
            follow,
        } => {
            let tools = front.tools().await?;
            let Some(described) = tools.get(&tool) else {
                let names: Vec<&str> = tools.keys().map(String::as_str).collect();
                return Err(Error::Usage(format!(
                    "no tool {tool} for you here; the tools are: {}",
                    names.join(", ")
                )));
            };
            let arguments = args::parse(&arguments, &described["inputSchema"])?;
            let answer = front
                .request("tools/call", json!({"name": tool, "arguments": arguments}))
                .await?;
            if answer["resultType"] != "task" {
                return Ok(print_result(&answer));
            }
            let id = answer["taskId"].as_str().unwrap_or_default().to_owned();
            if !follow {
                term::say(&inert_line(&id));
                return Ok(ExitCode::SUCCESS);
            }
            term::warn(&format!("task {}", inert_line(&id)));
            follow_task(&front, &id, &mut input).await
        }
        Command::Follow { task } => follow_task(&front, &task, &mut input).await,
        Command::Answer { task } => {
            let got = get(&front, &task).await?;
            let Some(requests) = got["inputRequests"].as_object().filter(|r| !r.is_empty()) else {
                return Err(Error::Usage(format!(
                    "task {task} asks nothing now (it is {})",
                    got["status"].as_str().unwrap_or("unknown")
                )));
            };
            let answers = prompt::answers(requests, &mut input).await?;
            let params = json!({"taskId": task, "inputResponses": answers});
            front.request("tasks/update", params).await?;
            term::say(&format!("answered {}", answers_keys(&answers)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { task } => {
            front
                .request("tasks/cancel", json!({"taskId": task}))
                .await?;
            term::say(&format!("cancel requested: {}", inert_line(&task)));
            Ok(ExitCode::SUCCESS)
        }
        Command::Tasks { .. } | Command::Describe { .. } | Command::Logs { .. } => {
            unreachable!("answered above")
        }
    }
}

/// The front end client: `--url` (or the Service found in the namespace), with `--token` or a
/// token made for `--service-account`, for `--audience` or else the audience that Service
/// publishes (each release has its own, so a token for one is refused by every other).
async fn front(cli: &Cli, cluster: Result<Cluster, Error>) -> Result<Front, Error> {
    let needs_cluster = cli.url.is_none() || cli.service_account.is_some();
    let cluster = if needs_cluster { Some(cluster?) } else { None };
    let minted_for_service = cli.service_account.is_some() && cli.audience.is_none();
    let service = match &cluster {
        Some(cluster) if cli.url.is_none() || minted_for_service => {
            Some(cluster.frontend(cli.release.as_deref()).await?)
        }
        _ => None,
    };
    let (url, host) = match (&cli.url, &service) {
        (Some(url), _) => (url.clone(), None),
        (None, Some(service)) => (service.url.clone(), Some(service.host.clone())),
        (None, None) => unreachable!("a Service when there is no URL"),
    };
    let token = match (&cli.service_account, &cluster) {
        (Some(account), Some(cluster)) => {
            let audience = match (&cli.audience, &service) {
                (Some(audience), _) => audience.as_str(),
                (None, Some(service)) => service.token_audience()?,
                (None, None) => unreachable!("a Service when there is no --audience"),
            };
            Some(cluster.token(account, audience).await?)
        }
        _ => cli.token.clone(),
    };
    Front::new(&url, host, token)
}

async fn get(front: &Front, id: &str) -> Result<Value, Error> {
    front.request("tasks/get", json!({"taskId": id})).await
}

/// Polls the task at its `pollIntervalMs` until it ends, printing each new status message
/// and asking its questions; the exit code says how it ended (see [`print_result`]).
async fn follow_task(
    front: &Front,
    id: &str,
    input: &mut prompt::Input,
) -> Result<ExitCode, Error> {
    let mut shown = (String::new(), String::new());
    loop {
        let task = tokio::select! {
            got = get(front, id) => got?,
            _ = tokio::signal::ctrl_c() => return Ok(stopped_following(id)),
        };
        let status = task["status"].as_str().unwrap_or_default().to_owned();
        let message = task["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if (status.as_str(), message.as_str()) != (shown.0.as_str(), shown.1.as_str()) {
            let sep = if message.is_empty() { "" } else { ": " };
            term::say(&format!(
                "{}{sep}{}",
                inert_line(&status),
                inert_line(&message)
            ));
            shown = (status.clone(), message);
        }
        match status.as_str() {
            "completed" => return Ok(print_result(&task["result"])),
            "failed" => {
                let error = &task["error"];
                term::warn(&format!(
                    "error {}: {}",
                    inert_line(&error["code"].to_string()),
                    inert_line(error["message"].as_str().unwrap_or(""))
                ));
                return Ok(ExitCode::from(2));
            }
            "cancelled" => return Ok(ExitCode::from(3)),
            "input_required" => {
                if let Some(requests) = task["inputRequests"].as_object().filter(|r| !r.is_empty())
                {
                    let answers = prompt::answers(requests, input).await?;
                    let params = json!({"taskId": id, "inputResponses": answers});
                    front.request("tasks/update", params).await?;
                    term::say(&format!("answered {}", answers_keys(&answers)));
                }
            }
            _ => {}
        }
        let interval = task["pollIntervalMs"]
            .as_u64()
            .map_or(Duration::from_secs(1), Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = tokio::signal::ctrl_c() => return Ok(stopped_following(id)),
        }
    }
}

fn stopped_following(id: &str) -> ExitCode {
    term::warn(&format!(
        "\nstopped following; the task goes on: kubectl mcp follow {}",
        inert_line(id)
    ));
    ExitCode::from(130)
}

/// Prints a tool's result; exit code 0, or 1 when the tool reported an error (`isError`).
fn print_result(result: &Value) -> ExitCode {
    term::say(&result_text(result));
    if result["isError"] == json!(true) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The keys of `answers` (the tool's input request keys), comma-separated, each inert on one line.
fn answers_keys(answers: &std::collections::BTreeMap<String, Value>) -> String {
    let keys: Vec<_> = answers.keys().map(|k| inert_line(k)).collect();
    keys.join(", ")
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
