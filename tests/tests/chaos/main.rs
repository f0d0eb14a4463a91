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
//! `frozen.rs` (f.) runs on its own: two operator processes, the leader SIGSTOPped past its
//! Lease and woken after the standby ended its tasks; it must write nothing after it wakes.
//!
//! After each: every task reaches the terminal status its tool dictates, each task's Job had
//! one UID ever, no terminal status changed (a watch records every transition), every client
//! error was cured by a retry through the Service, and the time to recover (fault → all
//! replicas Ready and a fresh task completed) is printed.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{CONFORMANCE_TOOLS, prepare_examples_blocking};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::faults::{
    JobRecorder, Partition, Restore, cluster_ctl, container_pid, pod_is_ready, pods_ready, signal,
};
use mcp_task_operator_harness::mcp_client::{Mcp, framed};
use mcp_task_operator_harness::operator::TaskRecorder;
use mcp_task_operator_harness::stack::{
    NODE_IP, Release, TWO_REPLICAS, apply_examples, install, output_text,
};
use mcp_task_operator_harness::traffic::{Record, Traffic, wait_for_tools};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::{Value, json};
use tokio::task::{JoinHandle, block_in_place};

#[path = "../common/mod.rs"]
mod common;
mod faults;
mod frozen;
mod wave;

const RELEASE: &str = "chaos";
const FRONTEND: &str = "app.kubernetes.io/instance=chaos,app.kubernetes.io/component=mcp-frontend";
const OPERATOR: &str = "app.kubernetes.io/instance=chaos,app.kubernetes.io/component=operator";
/// Generous limit on anything the suite waits for; only a hung stack reaches it.
const PATIENCE: Duration = Duration::from_secs(300);
/// Held by each test of the suite while it runs: the faults of one would break another's.
static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    let _alone = CLUSTER.lock().await;
    with_temp_ns("chaos", |client, ns| async move {
        let begun = Instant::now();
        prepare_examples_blocking(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let port = block_in_place(|| install(&ns, RELEASE, TWO_REPLICAS));
        let token = caller_token(&client, &ns, RELEASE, "chaos-client").await;
        apply_examples(&client, &ns, &[CONFORMANCE_TOOLS]).await;
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
