//! The real operator binary as a child process of a test, the tool images it runs, and helpers
//! to make tools and tasks and to watch what happens to them.
//!
//! The binary is `MTO_OPERATOR_BIN` (`make integration` builds it). Each process watches one
//! test namespace, elects itself on a Lease of its own (named by the test, in that namespace) so
//! that parallel tests never contend, serves its probes on a free port of 127.0.0.1 and is
//! killed (SIGKILL) when dropped, also on panic.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::frontend::{env_name, free_port};
use crate::run_script;

mod recorder;
mod resources;

pub use recorder::{ANSWERED_ONCE, TaskRecorder, Transition, printed_time, summarize};
pub use resources::{
    SeenEvent, answer, apply_example_tools, assert_completed, create_task, create_task_with,
    create_tool, events_for, failure_reason, poll_task, request_cancel, result_is_error,
    result_text, shell_tool, status_message, task_pods, tool, tool_event, tool_ready,
    wait_completed, wait_job_stopped, wait_pod_phase, wait_status, wait_task, wait_task_event,
    wait_terminal,
};

/// How long a test waits for anything the operator and the cluster do.
pub const WAIT: Duration = Duration::from_secs(60);
/// Image of the Rust tool (`tests/src/bin/rust-tool.rs`).
pub const RUST_TOOL_IMAGE: &str = "localhost/rust-tool:v1";
/// The stock busybox image the cluster scripts build; shell tools run their script in it.
pub const BUSYBOX_IMAGE: &str = "localhost/busybox:1.35";

/// A running operator process; killed (SIGKILL) when dropped.
pub struct Operator {
    /// Its identity in the Lease and in Events (`POD_NAME`).
    pub identity: String,
    /// Port of its /healthz, /readyz and /metrics server on 127.0.0.1.
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl Operator {
    /// Starts an operator for `ns` that elects itself on the Lease `lease` in `ns`, with
    /// `MCP_OPERATOR_*` settings `env` (unprefixed names; `OTEL_*` names are passed as they
    /// are), and waits until `/readyz` answers.
    pub async fn start(ns: &str, lease: &str, identity: &str, env: &[(&str, &str)]) -> Self {
        Self::start_with(ns, lease, identity, env, None).await
    }

    /// Like [`Operator::start`], but the operator talks to the API server as the user of
    /// `kubeconfig` (say a ServiceAccount with fewer rights than the chart's).
    pub async fn start_as(ns: &str, lease: &str, identity: &str, kubeconfig: &Path) -> Self {
        Self::start_with(ns, lease, identity, &[], Some(kubeconfig)).await
    }

    async fn start_with(
        ns: &str,
        lease: &str,
        identity: &str,
        env: &[(&str, &str)],
        kubeconfig: Option<&Path>,
    ) -> Self {
        let bin = std::env::var("MTO_OPERATOR_BIN")
            .expect("MTO_OPERATOR_BIN is not set: run the integration tests through `make test`");
        let port = free_port();
        let log = std::env::temp_dir().join(format!("mto-operator-{ns}-{identity}-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("create operator log file");
        let mut command = Command::new(bin);
        command
            .env("MCP_OPERATOR_NAMESPACE", ns)
            .env("MCP_OPERATOR_LEASE_NAMESPACE", ns)
            .env("MCP_OPERATOR_LEASE_NAME", lease)
            .env("MCP_OPERATOR_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("POD_NAME", identity)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("clone log file"))
            .stderr(log_file)
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(env_name("MCP_OPERATOR_", name), value);
        }
        if let Some(path) = kubeconfig {
            command.env("KUBECONFIG", path);
        }
        let child = command.spawn().expect("the operator binary starts");
        let operator = Self {
            identity: identity.to_owned(),
            port,
            child,
            log,
        };
        let started = Instant::now();
        while operator.get("/readyz").await.map(|(code, _)| code) != Some(200) {
            assert!(
                started.elapsed() < WAIT,
                "operator not ready in {WAIT:?}:\n{}",
                operator.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        operator
    }

    /// Starts the one operator of a test (Lease named after the namespace) and waits until it
    /// leads.
    pub async fn start_leader(ns: &str) -> Self {
        let operator = Self::start(ns, &format!("{ns}-lease"), "operator-0", &[]).await;
        operator.wait_leading().await;
        operator
    }

    /// Waits until this process has started its controllers (it holds the Lease).
    pub async fn wait_leading(&self) {
        let started = Instant::now();
        while !self.is_leading() {
            assert!(
                started.elapsed() < WAIT,
                "operator {} did not become leader in {WAIT:?}:\n{}",
                self.identity,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether this process has logged that it became the leader.
    pub fn is_leading(&self) -> bool {
        self.log().contains("became leader")
    }

    /// The process ID of the child.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("operator still running")
    }

    /// Whether the process is still running (it has not exited or crashed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process with SIGKILL (no graceful shutdown, no Lease release) and reaps it.
    pub async fn kill(&mut self) {
        self.child.kill().await.expect("kill the operator");
    }

    /// The process's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET `path` on the probe server: status code and body, or `None` if nobody answers.
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .ok()?;
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let text = String::from_utf8_lossy(&response).into_owned();
        let code = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
        Some((code, body))
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("==== operator {} log ====\n{}", self.identity, self.log());
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Runs `test` in a fresh namespace ([`with_temp_ns`](crate::with_temp_ns)) with the CRDs
/// applied and the namespace's own operator leading ([`Operator::start_leader`]); the operator
/// stops when the test ends.
pub async fn with_operator(
    prefix: &str,
    test: impl AsyncFnOnce(kube::Client, String, &mut Operator),
) {
    crate::with_temp_ns(prefix, |client, ns| async move {
        crate::ensure_crds(&client).await;
        let mut operator = Operator::start_leader(&ns).await;
        test(client, ns, &mut operator).await;
    })
    .await;
}

/// Builds the example tool images and imports them into the cluster, once per test binary.
pub fn ensure_example_images() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| run_script("examples/build-images.sh", &[]));
}

/// Packages the Rust tool binary (pass `env!("CARGO_BIN_EXE_rust-tool")`) as
/// [`RUST_TOOL_IMAGE`] and imports it, once per test binary.
pub fn ensure_rust_tool_image(binary: &str) {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let binary = format!("{binary}:/usr/local/bin/rust-tool");
        run_script(
            "hack/images.sh",
            &[
                "build",
                RUST_TOOL_IMAGE,
                "--binary",
                &binary,
                "--user",
                "65532:65532",
                "--entrypoint",
                "/usr/local/bin/rust-tool",
            ],
        );
    });
}
