//! The fault suite (`make chaos`; `make test` runs it bounded with `MTO_CHAOS_SCALE=ci`): the
//! Helm chart installed namespace-scoped (2 operator and 2 front-end replicas, auth none, the
//! front end a NodePort on the bridge address), and for each fault a wave of tasks in flight
//! (slow_compute of various lengths, some cancelled, failing_job, protocol_error_job) with every
//! task polled through the Service at its advised interval and listened to, while:
//!
//! a. the operator leader's process is SIGKILLed; b. a front-end replica's process is SIGKILLed
//! mid-poll; c. kube-apiserver is restarted; d. the kubelet is stopped for 30 s; e. one
//! front-end replica is cut off the API server for 30 s (iptables in its network namespace):
//! its readiness fails and requests it still gets are refused at once, then it heals.
//!
//! After each: every task reaches the terminal status its tool dictates, each task's Job had
//! one UID ever, no terminal status changed (a watch records every transition), every client
//! error was cured by a retry through the Service, and the time to recover (fault → all
//! replicas Ready and a fresh task completed) is printed.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_tests::callers::caller_token;
use mcp_task_operator_tests::faults::{
    JobRecorder, Partition, Restore, cluster_ctl, container_pid, pod_is_ready, pods_ready,
};
use mcp_task_operator_tests::mcp_client::{Mcp, framed};
use mcp_task_operator_tests::operator::{TaskRecorder, ensure_example_images};
use mcp_task_operator_tests::stack::{NODE_IP, Release, TWO_REPLICAS, install, output_text};
use mcp_task_operator_tests::traffic::{Record, Traffic, wait_for_tools};
use mcp_task_operator_tests::{chart_dir, ensure_crds, kubectl_ok, with_temp_ns};
use serde_json::{Value, json};
use tokio::task::{JoinHandle, block_in_place};

const RELEASE: &str = "chaos";
const FRONTEND: &str = "app.kubernetes.io/instance=chaos,app.kubernetes.io/component=mcp-frontend";
const OPERATOR: &str = "app.kubernetes.io/instance=chaos,app.kubernetes.io/component=operator";
/// Generous limit on anything the suite waits for; only a hung stack reaches it.
const PATIENCE: Duration = Duration::from_secs(300);

/// How much work each wave puts in flight (`MTO_CHAOS_SCALE`: unset = full, `ci` = bounded).
struct Scale {
    /// slow_compute lengths in seconds, one task each.
    slow: &'static [u64],
    /// slow_compute tasks of an hour, half cancelled before the fault and half after.
    cancelled: usize,
    /// failing_job tasks (completed with isError) and protocol_error_job tasks (failed).
    failing: usize,
    /// Length of the kubelet and partition outages.
    outage: Duration,
}

fn scale() -> (&'static str, Scale) {
    match std::env::var("MTO_CHAOS_SCALE").as_deref() {
        Ok("ci") => (
            "ci",
            Scale {
                slow: &[15, 20, 30, 40],
                cancelled: 2,
                failing: 1,
                outage: Duration::from_secs(30),
            },
        ),
        _ => (
            "full",
            Scale {
                slow: &[
                    25, 30, 30, 35, 40, 45, 45, 50, 60, 60, 70, 80, 90, 90, 100, 120,
                ],
                cancelled: 4,
                failing: 2,
                outage: Duration::from_secs(30),
            },
        ),
    }
}

/// The terminal state a task's tool dictates.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// completed with this text.
    Computed(String),
    /// completed with `isError: true`.
    ToolError,
    /// failed with a JSON-RPC error.
    Failed,
    /// cancelled.
    Cancelled,
}

/// One task the suite started.
struct Planned {
    id: String,
    expect: Expect,
    poller: JoinHandle<Result<Polled, String>>,
}

/// What one client polling a task saw.
struct Polled {
    /// The first terminal `tasks/get` result.
    terminal: Value,
    /// When later polls showed another status (a replica behind the other).
    regressions: Vec<Instant>,
}

/// One row of the printed fault table.
struct Row {
    fault: &'static str,
    in_flight: usize,
    recovery: Duration,
    after_heal: Option<Duration>,
    client_failures: usize,
    note: String,
}

/// A fault as injected: what, when, and what the suite saw.
struct Fault {
    name: &'static str,
    in_flight: usize,
    injected: Instant,
    healed: Option<Instant>,
    note: String,
}

struct Suite {
    client: Client,
    ns: String,
    /// The caller's bearer token (the chart's default auth), for requests past `traffic`.
    token: String,
    traffic: Traffic,
    recorder: TaskRecorder,
    jobs: JobRecorder,
    scale: Scale,
    known: BTreeSet<String>,
    rows: Vec<Row>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "fault injection on the shared cluster: run by `make chaos` and `make test`"]
async fn tasks_survive_killed_leaders_frontends_apiserver_kubelet_and_a_partition() {
    with_temp_ns("chaos", |client, ns| async move {
        let begun = Instant::now();
        ensure_crds(&client).await;
        block_in_place(ensure_example_images);
        let _release = Release::new(&ns, RELEASE);
        let port = block_in_place(|| install(&ns, RELEASE, TWO_REPLICAS));
        let token = caller_token(&client, &ns, RELEASE, "chaos-client").await;
        let tools = chart_dir().join("../../examples/conformance/mcptools.yaml");
        let tools = tools.to_str().expect("UTF-8 path");
        block_in_place(|| {
            kubectl_ok(&["apply", "-n", &ns, "-f", tools]);
            kubectl_ok(&[
                "wait",
                "-n",
                &ns,
                "--for=condition=Ready",
                "mcptool",
                "--all",
                "--timeout=120s",
            ]);
        });
        let url = format!("http://{NODE_IP}:{port}/mcp");
        let traffic = Traffic::new(&url, Record::default()).with_token(&token);
        wait_for_tools(
            &traffic,
            &["slow_compute", "failing_job", "protocol_error_job"],
        )
        .await;
        let (scale_name, scale) = scale();
        eprintln!(
            "chaos ({scale_name}): stack installed in {:.1} s",
            begun.elapsed().as_secs_f64()
        );
        let mut suite = Suite {
            recorder: TaskRecorder::start(&client, &ns).await,
            jobs: JobRecorder::start(&client, &ns),
            traffic,
            token,
            client,
            ns,
            scale,
            known: BTreeSet::new(),
            rows: Vec::new(),
        };
        suite.kill_operator_leader().await;
        suite.kill_frontend_replica().await;
        suite.restart_apiserver().await;
        suite.stop_kubelet().await;
        suite.partition_frontend().await;
        suite.print_table(scale_name, begun.elapsed());
    })
    .await;
}

impl Suite {
    /// Starts a wave: every task through the Service, a poller per task and three listeners,
    /// then waits until half the slow tasks are computing and cancels half the hour-long ones.
    /// Returns the wave and the hour-long tasks still to cancel.
    async fn begin_wave(&mut self, tag: &str) -> (Vec<Planned>, Vec<String>) {
        let mut calls: Vec<(&'static str, Value, Expect)> = Vec::new();
        for (i, seconds) in self.scale.slow.iter().enumerate() {
            let label = format!("{tag}-{i}");
            let text = format!("Computed {label} in {seconds} s");
            calls.push((
                "slow_compute",
                json!({"seconds": seconds, "label": label}),
                Expect::Computed(text),
            ));
        }
        for i in 0..self.scale.cancelled {
            let args = json!({"seconds": 3600, "label": format!("{tag}-cancel-{i}")});
            calls.push(("slow_compute", args, Expect::Cancelled));
        }
        for _ in 0..self.scale.failing {
            calls.push(("failing_job", json!({}), Expect::ToolError));
            calls.push(("protocol_error_job", json!({}), Expect::Failed));
        }
        let started = futures::future::join_all(calls.into_iter().map(|(tool, args, expect)| {
            let traffic = self.traffic.clone();
            async move {
                let params = json!({"name": tool, "arguments": args});
                let created = traffic.call("tools/call", params).await;
                (created, expect)
            }
        }))
        .await;
        let mut wave = Vec::new();
        for (created, expect) in started {
            let created = created.unwrap_or_else(|e| panic!("tools/call not cured: {e}"));
            assert_eq!(created["resultType"], "task", "{created}");
            let id = created["taskId"].as_str().expect("taskId").to_owned();
            let interval =
                Duration::from_millis(created["pollIntervalMs"].as_u64().unwrap_or(1000));
            self.known.insert(id.clone());
            let poller = tokio::spawn(poll(self.traffic.clone(), id.clone(), interval));
            wave.push(Planned { id, expect, poller });
        }
        let ids: Vec<String> = wave.iter().map(|t| t.id.clone()).collect();
        for chunk in ids.chunks(ids.len().div_ceil(3)) {
            // Ends by itself once each of its tasks was notified terminal.
            drop(self.traffic.listen(chunk.to_vec()));
        }
        // In flight for real: half the slow tasks print progress (their pods run).
        let slow: Vec<&Planned> = wave
            .iter()
            .filter(|t| matches!(t.expect, Expect::Computed(_)))
            .collect();
        let waited = Instant::now();
        while slow
            .iter()
            .filter(|t| {
                self.recorder
                    .of(&t.id)
                    .iter()
                    .any(|s| s.message.as_deref().is_some_and(|m| m.contains(" of ")))
            })
            .count()
            < slow.len().div_ceil(2)
        {
            assert!(
                waited.elapsed() < PATIENCE,
                "the wave's tasks never started computing"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let mut to_cancel: Vec<String> = wave
            .iter()
            .filter(|t| t.expect == Expect::Cancelled)
            .map(|t| t.id.clone())
            .collect();
        let later = to_cancel.split_off(to_cancel.len() / 2);
        self.cancel(&to_cancel).await;
        (wave, later)
    }

    async fn cancel(&self, ids: &[String]) {
        for id in ids {
            self.traffic
                .call("tasks/cancel", json!({"taskId": id}))
                .await
                .unwrap_or_else(|e| panic!("tasks/cancel not cured: {e}"));
        }
    }

    /// Tasks of the namespace not yet terminal, by the API server.
    async fn in_flight(&self) -> usize {
        let tasks: Api<McpTask> = Api::namespaced(self.client.clone(), &self.ns);
        let list = tasks
            .list(&ListParams::default())
            .await
            .expect("list tasks");
        list.items.iter().filter(|t| !t.is_terminal()).count()
    }

    /// Waits until both Deployments' pods are Ready and a fresh task completes through the
    /// Service; returns the time since `since`.
    async fn recover(&self, since: Instant) -> Duration {
        while !(pods_ready(&self.client, &self.ns, FRONTEND, 2).await
            && pods_ready(&self.client, &self.ns, OPERATOR, 2).await)
        {
            assert!(since.elapsed() < PATIENCE, "replicas not Ready again");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let args = json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "probe"}});
        let created = self
            .traffic
            .call("tools/call", args)
            .await
            .expect("probe task");
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        loop {
            let got = self
                .traffic
                .call("tasks/get", json!({"taskId": id}))
                .await
                .expect("probe task polled");
            if got["status"] == "completed" {
                return since.elapsed();
            }
            assert!(since.elapsed() < PATIENCE * 2, "probe task not done: {got}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Ends a wave: cancels the rest, measures recovery, then checks every invariant.
    async fn finish_wave(&mut self, fault: Fault, wave: Vec<Planned>, later: Vec<String>) {
        self.cancel(&later).await;
        let recovery = self.recover(fault.injected).await;
        let restarts = self.restarts().await;
        let after_heal = fault.healed.map(|h| h.elapsed());
        let mut regressions: Vec<Instant> = Vec::new();
        for task in wave {
            let polled = tokio::time::timeout(PATIENCE, task.poller)
                .await
                .unwrap_or_else(|_| panic!("task {} never ended", task.id))
                .expect("poller ran")
                .unwrap_or_else(|e| panic!("a client error no retry cured: {e}"));
            regressions.extend(polled.regressions);
            check_terminal(&task.id, &task.expect, &polled.terminal);
            let uids = self.jobs.uids(&task.id);
            assert_eq!(uids.len(), 1, "Job {} had UIDs {uids:?}", task.id);
            self.wait_notified(&task.id).await;
        }
        assert!(
            self.jobs.duplicated().is_empty(),
            "Jobs created twice: {:?}",
            self.jobs.duplicated()
        );
        self.recorder.assert_terminal_statuses_never_change();
        self.check_orphans().await;
        let offsets: Vec<String> = regressions
            .iter()
            .map(|at| format!("{:+.1} s", at.duration_since(fault.injected).as_secs_f64()))
            .collect();
        let regressions = if offsets.is_empty() {
            "0".to_owned()
        } else {
            format!(
                "{} (at {} from the fault)",
                offsets.len(),
                offsets.join(", ")
            )
        };
        let failures = self.traffic.record.failures();
        let uncured: Vec<_> = failures.iter().filter(|f| !f.cured).collect();
        assert!(
            uncured.is_empty(),
            "client errors never cured: {uncured:#?}"
        );
        let during: Vec<_> = failures
            .iter()
            .skip(self.rows.iter().map(|r| r.client_failures).sum())
            .collect();
        for f in during.iter().take(12) {
            eprintln!(
                "  client error (cured): {} after {:?}: {}",
                f.method, f.took, f.what
            );
        }
        eprintln!(
            "{}: {} tasks in flight; recovered in {:.1} s{}; {} client errors, all cured by a \
             retry; {regressions} polls saw another status after a terminal one; {}",
            fault.name,
            fault.in_flight,
            recovery.as_secs_f64(),
            after_heal.map_or(String::new(), |d| format!(
                " ({:.1} s after the heal)",
                d.as_secs_f64()
            )),
            during.len(),
            fault.note,
        );
        self.rows.push(Row {
            fault: fault.name,
            in_flight: fault.in_flight,
            recovery,
            after_heal,
            client_failures: during.len(),
            note: format!(
                "{}; {regressions} stale polls after terminal; container restarts so far: {restarts}",
                fault.note
            ),
        });
    }

    /// Waits until a listen stream delivered the task's terminal status.
    async fn wait_notified(&self, id: &str) {
        let started = Instant::now();
        loop {
            let seen = self.traffic.record.notified(id);
            if seen
                .iter()
                .any(|s| matches!(s.as_str(), "completed" | "failed" | "cancelled"))
            {
                return;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "no listen stream delivered a terminal status of {id}: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Tasks that a retried tools/call created besides the one it answered with: they must end
    /// too (each is a slow_compute, failing_job or protocol_error_job of a wave).
    async fn check_orphans(&mut self) {
        let tasks: Api<McpTask> = Api::namespaced(self.client.clone(), &self.ns);
        let list = tasks
            .list(&ListParams::default())
            .await
            .expect("list tasks");
        let probes = list.items.iter().filter(|t| {
            t.spec.arguments.as_ref().and_then(|a| a.get("label")) == Some(&json!("probe"))
        });
        let orphans: Vec<&McpTask> = list
            .items
            .iter()
            .filter(|t| !self.known.contains(&t.name_any()))
            .filter(|t| !probes.clone().any(|p| p.name_any() == t.name_any()))
            .collect();
        for orphan in &orphans {
            eprintln!(
                "  task {} was created by a tools/call whose answer was lost; status {:?}",
                orphan.name_any(),
                orphan.status.as_ref().map(|s| s.status)
            );
        }
    }

    fn print_table(&self, scale: &str, took: Duration) {
        println!("\nchaos ({scale}) took {:.0} s", took.as_secs_f64());
        println!(
            "| fault | tasks in flight | recovery (fault -> all Ready + fresh task done) | client errors (all cured) | notes |"
        );
        println!("|---|---|---|---|---|");
        for row in &self.rows {
            let heal = row.after_heal.map_or(String::new(), |d| {
                format!(", {:.1} s after the heal", d.as_secs_f64())
            });
            println!(
                "| {} | {} | {:.1} s{heal} | {} | {} |",
                row.fault,
                row.in_flight,
                row.recovery.as_secs_f64(),
                row.client_failures,
                row.note
            );
        }
    }

    /// Container restarts of the operator and front-end pods so far.
    async fn restarts(&self) -> String {
        let mut counts = Vec::new();
        for (selector, kind) in [(OPERATOR, "operator"), (FRONTEND, "front end")] {
            let total: i32 = self
                .pods(selector)
                .await
                .iter()
                .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref())
                .flatten()
                .map(|c| c.restart_count)
                .sum();
            counts.push(format!("{kind} {total}"));
        }
        counts.join(", ")
    }

    async fn pods(&self, selector: &str) -> Vec<Pod> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let mut list = pods
            .list(&ListParams::default().labels(selector))
            .await
            .expect("list pods")
            .items;
        list.sort_by_key(ResourceExt::name_any);
        list
    }

    /// a. SIGKILL the process of the operator that holds the Lease.
    async fn kill_operator_leader(&mut self) {
        let (wave, later) = self.begin_wave("leader").await;
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.ns);
        let lease = leases
            .list(&ListParams::default().labels(OPERATOR))
            .await
            .expect("list leases")
            .items
            .into_iter()
            .next()
            .expect("the operator Lease");
        let holder = lease
            .spec
            .and_then(|s| s.holder_identity)
            .expect("a leader");
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let pod = pods.get(&holder).await.expect("leader pod");
        let pid = container_pid(&pod, "operator");
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        kill9(pid);
        // Someone leads again once the Lease is renewed after the kill.
        let killed_at = k8s_openapi::jiff::Timestamp::now();
        let new_holder = loop {
            let lease = leases
                .get(&lease.metadata.name.clone().expect("name"))
                .await;
            if let Ok(Lease {
                spec: Some(spec), ..
            }) = lease
                && spec.renew_time.as_ref().is_some_and(|t| t.0 > killed_at)
            {
                break spec.holder_identity.unwrap_or_default();
            }
            assert!(injected.elapsed() < PATIENCE, "nobody leads after the kill");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let note = format!(
            "SIGKILL pid {pid} of leader {holder}; {new_holder} led {:.1} s later",
            injected.elapsed().as_secs_f64()
        );
        let fault = Fault {
            name: "a. operator leader SIGKILL",
            in_flight,
            injected,
            healed: None,
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// b. SIGKILL the process of one front-end replica while every task is being polled.
    async fn kill_frontend_replica(&mut self) {
        let (wave, later) = self.begin_wave("frontend").await;
        let pods = self.pods(FRONTEND).await;
        let pod = &pods[0];
        let pid = container_pid(pod, "mcp-frontend");
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        kill9(pid);
        let note = format!("SIGKILL pid {pid} of {}", pod.name_any());
        let fault = Fault {
            name: "b. front-end replica SIGKILL",
            in_flight,
            injected,
            healed: None,
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// c. Restart kube-apiserver with its own command line (`hack/cluster-ctl.sh restart`).
    async fn restart_apiserver(&mut self) {
        let (wave, later) = self.begin_wave("apiserver").await;
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        {
            let _restore = Restore("kube-apiserver");
            block_in_place(|| cluster_ctl("restart", "kube-apiserver"));
        }
        let healed = Instant::now();
        let note = format!(
            "stop (SIGTERM) + start took {:.1} s",
            (healed - injected).as_secs_f64()
        );
        let fault = Fault {
            name: "c. kube-apiserver restart",
            in_flight,
            injected,
            healed: Some(healed),
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// d. Stop the kubelet for the outage, then start it again.
    async fn stop_kubelet(&mut self) {
        let (wave, later) = self.begin_wave("kubelet").await;
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        {
            let _restore = Restore("kubelet");
            block_in_place(|| cluster_ctl("stop", "kubelet"));
            tokio::time::sleep(self.scale.outage.saturating_sub(injected.elapsed())).await;
            block_in_place(|| cluster_ctl("start", "kubelet"));
        }
        let healed = Instant::now();
        let note = format!("kubelet down {:.1} s", (healed - injected).as_secs_f64());
        let fault = Fault {
            name: "d. kubelet stopped",
            in_flight,
            injected,
            healed: Some(healed),
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }

    /// e. Cut one front-end replica off the API server for the outage: its readiness must
    /// fail and requests sent straight to it must be refused at once; then heal it.
    async fn partition_frontend(&mut self) {
        let (wave, later) = self.begin_wave("partition").await;
        let pods = self.pods(FRONTEND).await;
        let pod = pods[0].clone();
        let name = pod.name_any();
        let pid = container_pid(&pod, "mcp-frontend");
        let pod_ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .expect("pod IP");
        let in_flight = self.in_flight().await;
        let injected = Instant::now();
        let partition = Partition::cut(pid, "10.96.0.1:443", &format!("{NODE_IP}:6443"));
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        while api.get(&name).await.is_ok_and(|p| pod_is_ready(&p)) {
            assert!(
                injected.elapsed() < PATIENCE,
                "{name} stayed Ready while cut off"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let unready = injected.elapsed();
        // Straight to the cut-off replica, past the Service.
        let direct = Mcp::new(&format!("http://{pod_ip}:8080/mcp")).with_token(&self.token);
        let mut answers = Vec::new();
        for (method, params) in [
            ("tasks/get", json!({"taskId": wave[0].id})),
            (
                "tools/call",
                json!({"name": "slow_compute", "arguments": {"seconds": 1}}),
            ),
        ] {
            let (mut headers, body) = framed(method, params, true);
            headers.push(("host", NODE_IP.to_owned()));
            let asked = Instant::now();
            let reply = tokio::time::timeout(Duration::from_secs(60), direct.send(&headers, &body))
                .await
                .unwrap_or_else(|_| panic!("{method} to the cut-off replica hung"));
            let took = asked.elapsed();
            assert_eq!(reply.status, 503, "{method}: {}", reply.body);
            assert_eq!(reply.error_code(), Some(-32603), "{}", reply.body);
            assert!(
                reply.error_message().contains("API server unreachable"),
                "{}",
                reply.body
            );
            answers.push(format!("{method} {} ms", took.as_millis()));
        }
        tokio::time::sleep(self.scale.outage.saturating_sub(injected.elapsed())).await;
        assert!(partition.heal(), "could not remove the iptables rules");
        let healed = Instant::now();
        while !api.get(&name).await.is_ok_and(|p| pod_is_ready(&p)) {
            assert!(
                healed.elapsed() < PATIENCE,
                "{name} not Ready after the heal"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let note = format!(
            "{name} unready {:.1} s after the cut; direct requests refused with 503/-32603 in {}; \
             Ready again {:.1} s after the heal",
            unready.as_secs_f64(),
            answers.join(", "),
            healed.elapsed().as_secs_f64()
        );
        let fault = Fault {
            name: "e. front end cut off the API server",
            in_flight,
            injected,
            healed: Some(healed),
            note,
        };
        self.finish_wave(fault, wave, later).await;
    }
}

/// Polls `tasks/get` at the advised interval until the task is terminal, then twice more.
async fn poll(traffic: Traffic, id: String, interval: Duration) -> Result<Polled, String> {
    let mut terminal: Option<Value> = None;
    let mut regressions = Vec::new();
    let mut after = 0;
    loop {
        let got = traffic.call("tasks/get", json!({"taskId": id})).await?;
        match &terminal {
            Some(first) => {
                if first["status"] != got["status"] {
                    regressions.push(Instant::now());
                }
                after += 1;
                if after >= 2 {
                    let terminal = terminal.expect("terminal");
                    return Ok(Polled {
                        terminal,
                        regressions,
                    });
                }
            }
            None => {
                if matches!(
                    got["status"].as_str(),
                    Some("completed" | "failed" | "cancelled")
                ) {
                    terminal = Some(got);
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// Panics unless the `tasks/get` result is the terminal state `expect`.
fn check_terminal(id: &str, expect: &Expect, got: &Value) {
    let status = got["status"].as_str().unwrap_or_default();
    match expect {
        Expect::Computed(text) => {
            assert_eq!(status, "completed", "{id}: {got}");
            assert_eq!(
                got["result"]["content"][0]["text"],
                json!(text),
                "{id}: {got}"
            );
            assert_ne!(got["result"]["isError"], json!(true), "{id}: {got}");
        }
        Expect::ToolError => {
            assert_eq!(status, "completed", "{id}: {got}");
            assert_eq!(got["result"]["isError"], json!(true), "{id}: {got}");
        }
        Expect::Failed => {
            assert_eq!(status, "failed", "{id}: {got}");
            assert_eq!(got["error"]["code"], json!(-32603), "{id}: {got}");
        }
        Expect::Cancelled => assert_eq!(status, "cancelled", "{id}: {got}"),
    }
}

fn kill9(pid: u32) {
    let out = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .output()
        .expect("kill runs");
    assert!(out.status.success(), "kill -9 {pid}: {}", output_text(&out));
}
