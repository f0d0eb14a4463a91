//! The real front end binary as a child process of a test.
//!
//! The binary is `MTO_FRONTEND_BIN` (`make integration` builds it). Each process is bound to a
//! free port on 127.0.0.1, serves one test namespace and is killed when dropped, also on panic.
//! [`crate::mcp_client`] talks to it.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::mcp_client::{WAIT, http_client};

/// Settings for a front end driven hard by one caller (benchmarks): no authentication, and
/// neither the per-caller `tools/call` rate nor the active-task quota, which a single
/// identity sending calls back to back would reach.
pub const UNLIMITED: &[(&str, &str)] = &[
    ("AUTH_MODE", "none"),
    ("ALLOW_UNAUTHENTICATED", "true"),
    ("CALL_RATE_PER_SECOND", "0"),
    ("MAX_ACTIVE_TASKS_PER_CALLER", "0"),
];

/// A running front end process; killed (SIGKILL) when dropped.
pub struct Frontend {
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    child: Child,
    log: std::path::PathBuf,
}

impl Frontend {
    /// Starts the front end for `ns` with `MCP_FRONTEND_*` settings `env` (unprefixed names;
    /// `OTEL_*` names are passed as they are; an empty list means `AUTH_MODE=none`; authorization is off unless `env` sets
    /// `AUTHORIZATION_MODE`) and waits until `/readyz` answers 200.
    pub async fn start(ns: &str, env: &[(&str, &str)]) -> Self {
        Self::start_with_kubeconfig(ns, env, None).await
    }

    /// [`Frontend::start`] reaching the API server through `kubeconfig` instead of
    /// `$KUBECONFIG` (e.g. through a [`crate::lag_proxy::LagProxy`]).
    pub async fn start_with_kubeconfig(
        ns: &str,
        env: &[(&str, &str)],
        kubeconfig: Option<&std::path::Path>,
    ) -> Self {
        let bin = std::env::var("MTO_FRONTEND_BIN")
            .expect("MTO_FRONTEND_BIN is not set: run the integration tests through `make test`");
        let port = free_port();
        let log = std::env::temp_dir().join(format!("mto-frontend-{ns}-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("create front end log file");
        let mut command = Command::new(bin);
        command
            .env("MCP_FRONTEND_BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("MCP_FRONTEND_NAMESPACE", ns)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .kill_on_drop(true);
        // These tests run the binary with the admin kubeconfig; RBAC on tools is tested
        // through the chart (tests/tests/chart_authz.rs).
        command.env("MCP_FRONTEND_AUTHORIZATION_MODE", "none");
        if env.is_empty() {
            command
                .env("MCP_FRONTEND_AUTH_MODE", "none")
                .env("MCP_FRONTEND_ALLOW_UNAUTHENTICATED", "true");
        }
        for (name, value) in env {
            command.env(env_name("MCP_FRONTEND_", name), value);
        }
        if let Some(kubeconfig) = kubeconfig {
            command.env("KUBECONFIG", kubeconfig);
        }
        let child = command.spawn().expect("the front end binary starts");
        let mut frontend = Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            child,
            log,
        };
        frontend.wait_ready(port).await;
        frontend
    }

    /// The value of the counter line `series` (name and labels as `/metrics` prints them, e.g.
    /// `mcp_frontend_reviews_total{kind="token",outcome="granted"}`); 0 before it first counts.
    pub async fn counter(&self, series: &str) -> u64 {
        let prefix = format!("{series} ");
        self.metrics()
            .await
            .lines()
            .find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The whole `/metrics` text.
    pub async fn metrics(&self) -> String {
        let url = self.url.replace("/mcp", "/metrics");
        let response = crate::mcp_client::http_client()
            .get(url.parse().expect("metrics url"))
            .await
            .expect("GET /metrics");
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .expect("metrics body")
            .to_bytes();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The process ID of the child.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("front end still running")
    }

    /// Kills the process with SIGKILL (no graceful shutdown) and reaps it.
    pub async fn kill(&mut self) {
        self.child.kill().await.expect("kill the front end");
    }

    /// Stops the process with SIGTERM (graceful shutdown) and waits until it has exited.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.pid().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("front end still running {WAIT:?} after SIGTERM"))
            .expect("wait for the front end")
    }

    /// The process's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    async fn wait_ready(&mut self, port: u16) {
        let client = http_client();
        let url = format!("http://127.0.0.1:{port}/readyz");
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("front end exited with {status}:\n{}", self.log());
            }
            if let Ok(response) = client.get(url.parse().expect("url")).await
                && response.status() == 200
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "front end not ready in {WAIT:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Frontend {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("==== front end log {} ====\n{}", self.url, self.log());
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The variable for setting `name` of a binary whose settings are `prefix`ed: the standard
/// `OTEL_*` variables keep their own names.
pub fn env_name(prefix: &str, name: &str) -> String {
    if name.starts_with("OTEL_") {
        name.to_owned()
    } else {
        format!("{prefix}{name}")
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    listener.local_addr().expect("local address").port()
}
