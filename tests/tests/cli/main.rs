//! `kubectl mcp` (the `cli/` plugin) driven in a real terminal: tmux runs it against the Helm
//! chart installed with its default auth (TokenReview for the release's audience, RBAC on tools),
//! the real operator and the conformance tools as real Jobs. The test types what a user
//! types and reads the screen.
//!
//! The binary is `MTO_CLI_BIN` (`make integration` builds it); kubectl finds it on the PATH as
//! a plugin. `inert.rs` feeds it a tool's escape sequences, `decoy.rs` a second Service
//! labelled as the front end.

#[path = "../common/mod.rs"]
mod common;
mod decoy;
mod inert;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{CONFORMANCE_TOOLS, prepare_examples_blocking};
use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::stack::{Release, apply_examples, install, mcp_url, output_text};
use mcp_task_operator_harness::with_temp_ns;
use tokio::task::block_in_place;

const RELEASE: &str = "cli";
/// The chart's `--set` values: namespace-scoped, so that the releases of this binary's tests,
/// which run side by side, never act on each other's tasks.
const SETS: &[&str] = &["rbac.scope=namespace"];
const CALLER: &str = "cli-user";
/// Longest a screen may take to show what the test waits for.
const PATIENCE: Duration = Duration::from_secs(180);

/// The directory of the `kubectl-mcp` binary, for the PATH.
fn plugin_dir() -> PathBuf {
    let bin = std::env::var("MTO_CLI_BIN")
        .expect("MTO_CLI_BIN is not set: run the integration tests through `make test`");
    Path::new(&bin).parent().expect("a directory").to_owned()
}

/// The environment `kubectl mcp` runs with: the plugin first on the PATH, the test's
/// kubeconfig, and nothing else of the test's.
fn env(plugin: &Path) -> Vec<(String, String)> {
    let path = format!(
        "{}:{}",
        plugin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut env = vec![("PATH".to_owned(), path)];
    for key in ["KUBECONFIG", "HOME"] {
        if let Ok(value) = std::env::var(key) {
            env.push((key.to_owned(), value));
        }
    }
    env
}

/// `kubectl mcp <args>` run to its end without a terminal.
fn kubectl_mcp(plugin: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("mcp")
        .args(args)
        .env_clear()
        .envs(env(plugin))
        .output()
        .expect("kubectl runs")
}

/// [`kubectl_mcp`] with `input` on its standard input, without a terminal.
fn kubectl_mcp_typing(plugin: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new("kubectl")
        .arg("mcp")
        .args(args)
        .env_clear()
        .envs(env(plugin))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let mut stdin = child.stdin.take().expect("a piped stdin");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    child.wait_with_output().expect("kubectl ends")
}

/// One tmux server of its own (its own socket), so nothing of the user's is touched. Each
/// terminal needs a socket no earlier one used: `kill-server` returns before the old server has
/// gone, and a new session on its socket can reach the dying server ("server exited
/// unexpectedly").
struct Terminal {
    socket: String,
}

impl Terminal {
    /// Starts `command` (words, quoted for the shell here) in a 160x50 terminal; the shell
    /// prints `EXIT=<code>` when it ends.
    fn start(socket: &str, plugin: &Path, command: &[&str]) -> Self {
        let quoted: Vec<String> = command.iter().map(|w| format!("'{w}'")).collect();
        let script = format!("{}; echo EXIT=$?; sleep 600", quoted.join(" "));
        let mut tmux = Command::new("tmux");
        tmux.args([
            "-L",
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "160",
        ])
        .args(["-y", "50", "-s", "t", "sh", "-c", &script])
        .env_clear()
        .envs(env(plugin));
        let out = tmux.output().expect("tmux runs");
        assert!(out.status.success(), "tmux: {}", output_text(&out));
        Self {
            socket: socket.to_owned(),
        }
    }

    /// The whole screen and its scrollback, lines joined where the terminal wrapped them.
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "capture-pane",
                "-p",
                "-J",
                "-S",
                "-500",
                "-t",
                "t",
            ])
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen contains `text`; returns the screen.
    async fn wait_for(&self, text: &str) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "the terminal never showed {text:?}:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Types `text` and Enter.
    fn type_line(&self, text: &str) {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "-l", text])
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "{}", output_text(&out));
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "Enter"])
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "{}", output_text(&out));
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_mcp_calls_follows_answers_cancels_and_inspects_tasks() {
    with_temp_ns("cli", |client, ns| async move {
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let port = block_in_place(|| install(&ns, RELEASE, SETS));
        // The caller's ServiceAccount, bound to the chart's caller role; the plugin makes its
        // own token with --service-account, for the audience the release's Service publishes.
        caller_token(&client, &ns, RELEASE, CALLER).await;
        apply_examples(&client, &ns, &[CONFORMANCE_TOOLS]).await;
        let plugin = plugin_dir();
        let url = mcp_url(port);
        let who = ["-n", &ns, "--url", &url, "--service-account", CALLER];
        let with = |rest: &[&str]| -> Vec<String> {
            ["kubectl", "mcp"]
                .iter()
                .chain(who.iter())
                .chain(rest)
                .map(|s| (*s).to_owned())
                .collect()
        };
        let socket = format!("mto-{ns}");
        // `kubectl mcp` as the caller, through the NodePort, to the end, without a terminal.
        let caller = |rest: &[&str]| {
            let args: Vec<&str> = who.iter().chain(rest).copied().collect();
            block_in_place(|| kubectl_mcp(&plugin, &args))
        };

        // 1. A call followed live: every progress message, then the result, exit 0.
        let words = with(&["call", "slow_compute", "seconds=4", "label=cli", "--follow"]);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let term = Terminal::start(&format!("{socket}-follow"), &plugin, &words);
        let screen = term.wait_for("EXIT=").await;
        println!("--- kubectl mcp call slow_compute seconds=4 label=cli --follow\n{screen}");
        // Polled at the advised interval: some of the four progress messages, not all.
        for line in [
            "working: cli: ",
            " of 4 s\n",
            "Computed cli in 4 s",
            "EXIT=0",
        ] {
            assert!(
                screen.contains(line),
                "no {line:?} on the screen:\n{screen}"
            );
        }
        let followed = task_id(&screen);
        drop(term);

        // 2. A question asked in the terminal and answered by typing.
        let words = with(&["call", "confirm_delete", "filename=r.txt", "--follow"]);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let term = Terminal::start(&format!("{socket}-answer"), &plugin, &words);
        term.wait_for("Delete r.txt? This cannot be undone.").await;
        let screen = term.wait_for("confirm (boolean): ").await;
        assert!(screen.contains("input_required"), "{screen}");
        term.type_line("maybe");
        term.wait_for("answer yes or no").await;
        term.type_line("yes");
        let screen = term.wait_for("EXIT=").await;
        println!("--- kubectl mcp call confirm_delete filename=r.txt --follow\n{screen}");
        for line in ["answered confirm-1", "Deleted r.txt", "EXIT=0"] {
            assert!(
                screen.contains(line),
                "no {line:?} on the screen:\n{screen}"
            );
        }
        drop(term);

        // 3. Started, cancelled, then followed to its end: exit 3, the front end found by its
        //    Service (no --url) this time.
        let started = block_in_place(|| {
            kubectl_mcp(
                &plugin,
                &[
                    "-n",
                    &ns,
                    "--service-account",
                    CALLER,
                    "call",
                    "slow_compute",
                    "seconds=3600",
                    "label=long",
                ],
            )
        });
        assert!(started.status.success(), "{}", output_text(&started));
        let long = String::from_utf8_lossy(&started.stdout).trim().to_owned();
        assert_eq!(long.len(), 39, "a task ID: {long:?}");
        let cancelled = caller(&["cancel", &long]);
        assert!(cancelled.status.success(), "{}", output_text(&cancelled));
        let followed_cancel = caller(&["follow", &long]);
        let text = output_text(&followed_cancel);
        assert_eq!(followed_cancel.status.code(), Some(3), "{text}");
        assert!(text.contains("cancelled"), "{text}");
        // The token is minted for the audience the release's Service publishes (above);
        // --audience overrides it, and the old shared default is refused.
        let shared = caller(&["--audience", "mcp-task-operator", "follow", &long]);
        let text = output_text(&shared);
        assert_eq!(shared.status.code(), Some(1), "{text}");
        assert!(text.contains("401"), "{text}");

        // 4. The table, one task, its log, with the kubeconfig only.
        let tasks = block_in_place(|| kubectl_mcp(&plugin, &["-n", &ns, "tasks"]));
        let table = output_text(&tasks);
        println!("--- kubectl mcp tasks\n{table}");
        let owner = format!("system:serviceaccount:{ns}:{CALLER}");
        for needle in [
            followed.as_str(),
            long.as_str(),
            "confirm_delete",
            "completed",
            "cancelled",
            owner.as_str(),
        ] {
            assert!(table.contains(needle), "no {needle:?} in:\n{table}");
        }
        let described =
            block_in_place(|| kubectl_mcp(&plugin, &["-n", &ns, "describe", &followed]));
        let text = output_text(&described);
        println!("--- kubectl mcp describe\n{text}");
        for needle in [
            "Tool:           slow_compute",
            "Status:         completed",
            "Result:         Computed cli in 4 s",
            "Events:",
            "JobCreated",
        ] {
            assert!(text.contains(needle), "no {needle:?} in:\n{text}");
        }
        let logs = block_in_place(|| kubectl_mcp(&plugin, &["-n", &ns, "logs", &followed]));
        let text = output_text(&logs);
        assert!(logs.status.success(), "{text}");
        assert!(text.contains("Computed cli in 4 s"), "{text}");

        // 5. Mistakes are refused with what was wrong, and nothing is called.
        let refused = caller(&["call", "slow_compute", "seconds"]);
        assert_eq!(refused.status.code(), Some(1));
        assert!(output_text(&refused).contains("argument `seconds` is not key=value"));
        let unknown = caller(&["call", "no_such_tool"]);
        assert_eq!(unknown.status.code(), Some(1));
        assert!(output_text(&unknown).contains("no tool no_such_tool for you here"));
        let anonymous =
            block_in_place(|| kubectl_mcp(&plugin, &["-n", &ns, "--url", &url, "cancel", &long]));
        assert_eq!(anonymous.status.code(), Some(1));
        assert!(
            output_text(&anonymous).contains("HTTP 401"),
            "{}",
            output_text(&anonymous)
        );
    })
    .await;
}

/// The task ID the plugin printed on standard error (`task <id>`).
fn task_id(screen: &str) -> String {
    screen
        .lines()
        .find_map(|l| l.strip_prefix("task "))
        .expect("a `task <id>` line")
        .trim()
        .to_owned()
}
