//! The real operator binary as a child process of a test, the tool images it runs, and helpers
//! to make tools and tasks and to watch what happens to them.
//!
//! The binary is `MTO_OPERATOR_BIN` (`make integration` builds it). Each process watches one
//! test namespace, elects itself on a Lease of its own (named by the test, in that namespace) so
//! that parallel tests never contend, serves its probes on a free port of 127.0.0.1 and is
//! killed (SIGKILL) when dropped, also on panic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, McpTool, TaskStatus};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::frontend::{env_name, free_port};

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

/// Builds the example tool images and imports them into the cluster, once per test binary.
pub fn ensure_example_images() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| run_script(&repo().join("examples/build-images.sh"), &[]));
}

/// Packages the Rust tool binary (pass `env!("CARGO_BIN_EXE_rust-tool")`) as
/// [`RUST_TOOL_IMAGE`] and imports it, once per test binary.
pub fn ensure_rust_tool_image(binary: &str) {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let binary = format!("{binary}:/usr/local/bin/rust-tool");
        run_script(
            &repo().join("hack/images.sh"),
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

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run_script(script: &Path, args: &[&str]) {
    let out = std::process::Command::new(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An McpTool named `name` (MCP name the same) running `image` as its only container, named
/// `tool`, with `command` (none: the image's entrypoint). `spec` is merged over the defaults
/// (input schema `{type: object}`, TTL one hour); `container` over the container's fields.
pub fn tool(name: &str, image: &str, command: &[&str], spec: Value, container: Value) -> McpTool {
    let mut tool_container = json!({
        "name": "tool",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"memory": "128Mi"},
        },
    });
    if !command.is_empty() {
        tool_container["command"] = json!(command);
    }
    merge(&mut tool_container, container);
    let mut spec_value = json!({
        "inputSchema": {"type": "object"},
        "ttlMs": 3_600_000,
        "template": {"spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [tool_container],
        }},
    });
    merge(&mut spec_value, spec);
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTool",
        "metadata": {"name": name},
        "spec": spec_value,
    }))
    .expect("tool manifest is an McpTool")
}

/// A shell tool: `script` run by `sh -c` in the stock busybox image.
pub fn shell_tool(name: &str, script: &str, spec: Value) -> McpTool {
    tool(name, BUSYBOX_IMAGE, &["sh", "-c", script], spec, json!({}))
}

/// Merges `patch` into `base` (objects key by key, anything else replaced).
fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, patch) => *base = patch,
    }
}

/// Creates `tool` in `ns`.
pub async fn create_tool(client: &Client, ns: &str, tool: &McpTool) -> McpTool {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    tools
        .create(&PostParams::default(), tool)
        .await
        .unwrap_or_else(|e| panic!("cannot create McpTool {}: {e}", tool.name_any()))
}

/// Applies every McpTool in the YAML file `path` (relative to the repository) to `ns`.
pub async fn apply_example_tools(client: &Client, ns: &str, path: &str) {
    let text = std::fs::read_to_string(repo().join(path))
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = <Value as serde::Deserialize>::deserialize(document).expect("YAML document");
        if value.is_null() {
            continue;
        }
        let tool: McpTool = serde_json::from_value(value).expect("an McpTool");
        create_tool(client, ns, &tool).await;
    }
}

/// Creates a task of the tool with MCP name `tool` with `arguments` and `annotations`; its
/// name is a fresh task ID.
pub async fn create_task_with(
    client: &Client,
    ns: &str,
    tool: &str,
    arguments: Value,
    ttl_ms: Option<i64>,
    annotations: BTreeMap<String, String>,
) -> McpTask {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let task: McpTask = serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "metadata": {"name": mcp_task_operator_crds::task_id::generate(), "annotations": annotations},
        "spec": {"tool": tool, "owner": "tests", "arguments": arguments, "ttlMs": ttl_ms},
    }))
    .expect("task manifest is an McpTask");
    tasks
        .create(&PostParams::default(), &task)
        .await
        .unwrap_or_else(|e| panic!("cannot create a task of {tool}: {e}"))
}

/// Creates a task of `tool` with `arguments` and a one-hour TTL.
pub async fn create_task(client: &Client, ns: &str, tool: &str, arguments: Value) -> McpTask {
    create_task_with(
        client,
        ns,
        tool,
        arguments,
        Some(3_600_000),
        BTreeMap::new(),
    )
    .await
}

/// Waits until the task satisfies `check`, or panics after `timeout`.
pub async fn wait_task(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
    check: impl Fn(&McpTask) -> bool + Send + 'static,
) -> McpTask {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    crate::wait_for(
        &tasks,
        name,
        move |t: Option<&McpTask>| t.is_some_and(&check),
        timeout,
    )
    .await
}

/// Polls the task (a get every 200 ms: no watch to expire over minutes on a busy cluster)
/// until `check` holds, for up to `limit`.
pub async fn poll_task(
    client: &Client,
    ns: &str,
    name: &str,
    limit: Duration,
    check: impl Fn(&McpTask) -> bool,
) -> McpTask {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let begun = Instant::now();
    loop {
        let task = tasks.get(name).await.expect("get task");
        if check(&task) {
            return task;
        }
        assert!(
            begun.elapsed() < limit,
            "not there in {limit:?}: {:?}",
            task.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the task has `status`, or panics after [`WAIT`].
pub async fn wait_status(client: &Client, ns: &str, name: &str, status: TaskStatus) -> McpTask {
    wait_task(client, ns, name, WAIT, move |t| {
        t.task_status() == status && t.status.is_some()
    })
    .await
}

/// Waits until the task is terminal and returns it.
pub async fn wait_terminal(client: &Client, ns: &str, name: &str) -> McpTask {
    wait_task(client, ns, name, WAIT, McpTask::is_terminal).await
}

/// Sets the task's cancel annotation (the time now, RFC 3339), as the front end does.
pub async fn request_cancel(client: &Client, ns: &str, name: &str) {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = json!({"metadata": {"annotations": {
        mcp_task_operator_crds::CANCEL_REQUESTED_ANNOTATION: now,
    }}});
    tasks
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("cannot request cancel of {name}: {e}"));
}

/// Merges `responses` into the task's `spec.inputResponses`, as the front end's tasks/update.
pub async fn answer(client: &Client, ns: &str, name: &str, responses: Value) {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let patch = json!({"spec": {"inputResponses": responses}});
    tasks
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("cannot answer {name}: {e}"));
}

/// One Event about an object, as `kubectl describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenEvent {
    /// `Normal` or `Warning`.
    pub type_: String,
    /// PascalCase reason.
    pub reason: String,
    /// The note (message).
    pub message: String,
    /// How often it happened (a series counts repeats).
    pub count: i32,
}

/// The Events about the object of `kind` named `name` in `ns`.
pub async fn events_for(client: &Client, ns: &str, kind: &str, name: &str) -> Vec<SeenEvent> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
    let list = events
        .list(&ListParams::default().fields(&selector))
        .await
        .unwrap_or_else(|e| panic!("cannot list Events of {kind} {name}: {e}"));
    let mut seen: Vec<(Option<_>, SeenEvent)> = list
        .items
        .into_iter()
        .map(|e| {
            let time = e
                .event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.first_timestamp.as_ref().map(|t| t.0));
            let series = e.series.as_ref().and_then(|s| s.count);
            let event = SeenEvent {
                type_: e.type_.unwrap_or_default(),
                reason: e.reason.unwrap_or_default(),
                message: e.message.unwrap_or_default(),
                count: series.or(e.count).unwrap_or(1),
            };
            (time, event)
        })
        .collect();
    seen.sort_by_key(|(time, _)| *time);
    seen.into_iter().map(|(_, e)| e).collect()
}

/// Waits until the task has an Event with `reason` and returns all its Events.
pub async fn wait_task_event(
    client: &Client,
    ns: &str,
    name: &str,
    reason: &str,
) -> Vec<SeenEvent> {
    let started = Instant::now();
    loop {
        let events = events_for(client, ns, "McpTask", name).await;
        if events.iter().any(|e| e.reason == reason) {
            return events;
        }
        assert!(
            started.elapsed() < WAIT,
            "task {name} got no {reason} Event in {WAIT:?}; it has {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `error.data.reason` of a failed task.
pub fn failure_reason(task: &McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.error.as_ref())
        .and_then(|e| e.data.as_ref())
        .and_then(|d| d["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The first text content of a completed task's result.
pub fn result_text(task: &McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.result.as_ref())
        .and_then(|r| r.get("content"))
        .and_then(|c| c[0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Whether a completed task's result says `isError: true`.
pub fn result_is_error(task: &McpTask) -> bool {
    task.status
        .as_ref()
        .and_then(|s| s.result.as_ref())
        .and_then(|r| r.get("isError"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The task's `statusMessage`.
pub fn status_message(task: &McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.status_message.clone())
        .unwrap_or_default()
}

/// One change of a task's MCP-visible state, as a watch delivered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// When the watch delivered it (this machine's wall clock, which the node shares).
    pub seen_at: SystemTime,
    /// The task.
    pub task: String,
    /// The new `status` (`None`: no status yet).
    pub status: Option<TaskStatus>,
    /// The new `statusMessage`.
    pub message: Option<String>,
}

/// Watches every McpTask of a namespace and records each change of status or statusMessage,
/// from when it starts until it is dropped.
pub struct TaskRecorder {
    transitions: Arc<Mutex<Vec<Transition>>>,
    watch: JoinHandle<()>,
}

impl TaskRecorder {
    /// Starts watching `ns`; returns once the watch has listed the namespace.
    pub async fn start(client: &Client, ns: &str) -> Self {
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
        let transitions = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let recorded = Arc::clone(&transitions);
        let watch = tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            let mut last: BTreeMap<String, (Option<TaskStatus>, Option<String>)> = BTreeMap::new();
            let stream = watcher(tasks, watcher::Config::default()).default_backoff();
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let objects = match event {
                    Ok(watcher::Event::Apply(task) | watcher::Event::InitApply(task)) => {
                        vec![task]
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    _ => continue,
                };
                let seen_at = SystemTime::now();
                for task in objects {
                    let state = (
                        task.status.as_ref().map(|s| s.status),
                        task.status.as_ref().and_then(|s| s.status_message.clone()),
                    );
                    let name = task.name_any();
                    if last.get(&name) == Some(&state) {
                        continue;
                    }
                    last.insert(name.clone(), state.clone());
                    recorded.lock().expect("recorder lock").push(Transition {
                        seen_at,
                        task: name,
                        status: state.0,
                        message: state.1,
                    });
                }
            }
        });
        tokio::time::timeout(WAIT, ready_rx)
            .await
            .expect("the task watch lists the namespace")
            .expect("the task watch runs");
        Self { transitions, watch }
    }

    /// Every transition so far.
    pub fn transitions(&self) -> Vec<Transition> {
        self.transitions.lock().expect("recorder lock").clone()
    }

    /// The transitions of one task so far.
    pub fn of(&self, task: &str) -> Vec<Transition> {
        self.transitions()
            .into_iter()
            .filter(|t| t.task == task)
            .collect()
    }

    /// The distinct statuses one task went through, in order.
    pub fn statuses(&self, task: &str) -> Vec<TaskStatus> {
        let mut statuses: Vec<TaskStatus> = Vec::new();
        for t in self.of(task) {
            if let Some(status) = t.status
                && statuses.last() != Some(&status)
            {
                statuses.push(status);
            }
        }
        statuses
    }

    /// Waits until the watch has delivered `status` for `task` (another watch may be ahead).
    pub async fn wait_seen(&self, task: &str, status: TaskStatus) {
        let started = Instant::now();
        while !self.statuses(task).contains(&status) {
            assert!(
                started.elapsed() < WAIT,
                "the recorder saw no {status:?} for {task} in {WAIT:?}: {:#?}",
                self.of(task)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Panics if any task's status or statusMessage changed after it was terminal.
    pub fn assert_terminal_statuses_never_change(&self) {
        let mut terminal: BTreeMap<String, Transition> = BTreeMap::new();
        for t in self.transitions() {
            if let Some(done) = terminal.get(&t.task) {
                panic!(
                    "task {} changed after its terminal status {:?} ({:?}): {:#?}",
                    t.task,
                    done.status,
                    done.message,
                    self.of(&t.task)
                );
            }
            if t.status.is_some_and(TaskStatus::is_terminal) {
                terminal.insert(t.task.clone(), t);
            }
        }
    }
}

impl Drop for TaskRecorder {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// Parses the Unix time a tool printed after `marker` (e.g. `"at "` in `step 1 of 3 at T`).
pub fn printed_time(text: &str, marker: &str) -> Option<SystemTime> {
    let (_, rest) = text.rsplit_once(marker)?;
    let secs: f64 = rest.split_whitespace().next()?.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs))
}

/// Median and worst of a sample, in milliseconds, for the measurement printouts.
pub fn summarize(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let n = samples.len();
    let median = if n % 2 == 1 {
        ms(samples[n / 2])
    } else {
        (ms(samples[n / 2 - 1]) + ms(samples[n / 2])) / 2.0
    };
    (median, samples.last().copied().map(ms).unwrap_or_default())
}

/// Waits until the tool's Ready condition is for its current generation (the operator has
/// validated what is stored now); returns (status, reason, message).
pub async fn tool_ready(client: &Client, ns: &str, name: &str) -> (String, String, String) {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let validated = |t: Option<&McpTool>| {
        t.is_some_and(|t| {
            t.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.observed_generation == t.metadata.generation)
            })
        })
    };
    let tool = crate::wait_for(&tools, name, validated, WAIT).await;
    let c = tool
        .status
        .expect("status")
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    (c.status, c.reason, c.message)
}

/// Waits until the tool has an Event with `reason` (published after its status is written);
/// returns its type and message.
pub async fn tool_event(client: &Client, ns: &str, name: &str, reason: &str) -> (String, String) {
    let started = Instant::now();
    loop {
        let events = events_for(client, ns, "McpTool", name).await;
        if let Some(e) = events.iter().find(|e| e.reason == reason) {
            return (e.type_.clone(), e.message.clone());
        }
        assert!(
            started.elapsed() < WAIT,
            "no {reason} Event on {name}: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
