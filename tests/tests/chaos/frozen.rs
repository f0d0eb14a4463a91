//! f. A frozen leader: two operator processes on one Lease (the test's children, a 6 s Lease,
//! 4 s renew deadline), the leader SIGSTOPped while it writes the progress of running tasks and
//! starts a wave of new ones, until the standby has taken over and cancelled the new tasks (the
//! client cancelled them meanwhile).
//! The standby is then SIGKILLed, so that from here on only the old leader could write, and
//! the old leader is SIGCONTed. It must write nothing after it wakes: no task's status (the
//! progress it was about to write when frozen is older than the new leader's), no Job created
//! or deleted, no Event. Its writes are refused by the lease fence (`operator/src/fence.rs`);
//! it exits on its lost Lease.
//!
//! Whether a woken leader has a write on its way depends on where its threads were when it was
//! frozen (a wave being started) and on which of its futures runs first when it wakes (the
//! controllers, or the election loop that makes it exit): so the freeze is repeated with a new
//! pair of replicas up to [`CYCLES`] times. Before the fence, the woken leader wrote within
//! three cycles in each of 3 runs: the Job of a task the standby had cancelled (its record was
//! written before the freeze), a `JobCreated` Event; with the fence, never. With the fence
//! checked only when a request entered the client, an Event made before the freeze still
//! landed after the wake once in CI (a request past the check, not yet on the wire); the write
//! connections now check the fence before they move bytes, and such a request fails instead.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::events::v1::Event;
use mcp_task_operator_harness::ensure_crds;
use mcp_task_operator_harness::operator::{
    Operator, apply_example_tools, create_task, request_cancel, wait_task,
};

use super::*;

/// Freezes at most, each with a new leader and standby (a cycle is about 20 s).
const CYCLES: usize = 6;
/// Tasks that run through every cycle, their progress written by each leader in turn.
const RUNNING: usize = 12;
/// Tasks of each cycle, created just before its leader is frozen and cancelled by the client
/// while it is.
const CANCELLED: usize = 6;
/// A short Lease, so that a standby takes over 6 s after the freeze (chart: 15 s).
const LEASE: &[(&str, &str)] = &[
    ("LEASE_DURATION_SECONDS", "6"),
    ("LEASE_RENEW_DEADLINE_SECONDS", "4"),
    ("LEASE_RETRY_PERIOD_SECONDS", "1"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "fault injection on the shared cluster: run by `make chaos` and `make test`"]
async fn a_frozen_leader_writes_nothing_after_it_wakes() {
    let _alone = CLUSTER.lock().await;
    with_temp_ns("chaos-frozen", |client, ns| async move {
        let begun = Instant::now();
        ensure_crds(&client).await;
        prepare_examples_blocking(&client).await;
        apply_example_tools(&client, &ns, common::CONFORMANCE_TOOLS).await;
        let mut running = Vec::new();
        for i in 0..RUNNING {
            let args = json!({"seconds": 3600, "label": format!("run-{i}")});
            running.push(
                create_task(&client, &ns, "slow_compute", args)
                    .await
                    .name_any(),
            );
        }
        for cycle in 0..CYCLES {
            let wake = freeze_and_wake(&client, &ns, &running, cycle).await;
            eprintln!(
                "frozen leader, cycle {cycle}: the standby led {:.1} s after the SIGSTOP; the \
                 woken leader exited {:.3} s after the SIGCONT; writes refused: {:?}; Events \
                 made before the freeze that landed after the wake: {:?}",
                wake.took_over.as_secs_f64(),
                wake.exited.as_secs_f64(),
                wake.refused,
                wake.in_flight,
            );
            assert!(
                wake.writes.is_empty(),
                "cycle {cycle}: the woken leader wrote after it lost the Lease:\n{}",
                wake.writes.join("\n")
            );
            // Sent before the freeze but still in the client when it came: the write
            // connections check the fence before they move bytes (`FencedExecutor`), so these
            // never reach the API server either.
            assert!(
                wake.in_flight.is_empty(),
                "cycle {cycle}: requests the woken leader made before its freeze landed after \
                 its wake: {:?}",
                wake.in_flight
            );
        }
        eprintln!(
            "frozen leader: {CYCLES} cycles, no write after a wake, {:.1} s in all",
            begun.elapsed().as_secs_f64()
        );
    })
    .await;
}

/// What one freeze showed.
struct Wake {
    /// From the SIGSTOP to the standby leading.
    took_over: Duration,
    /// From the SIGCONT to the old leader's exit.
    exited: Duration,
    /// Writes its fence refused (its log), by method and resource.
    refused: BTreeMap<String, usize>,
    /// Every change in the namespace after the SIGCONT: the old leader's writes.
    writes: Vec<String>,
    /// Events it made before it was frozen that reached the API server only after the wake: a
    /// request already past the fence when the process stopped (docs/RELIABILITY.md, "what the
    /// lease fence cannot see"), not a write decided after waking.
    in_flight: Vec<String>,
}

/// One cycle: a leader that writes the `running` tasks' progress and runs tasks of its own,
/// frozen; the standby takes over and cancels those; the standby killed; the leader woken.
async fn freeze_and_wake(client: &Client, ns: &str, running: &[String], cycle: usize) -> Wake {
    let lease = format!("{ns}-lease-{cycle}");
    let identity = format!("operator-a{cycle}");
    let mut leader = Operator::start(ns, &lease, &identity, LEASE).await;
    leader.wait_leading().await;
    let mut standby = Operator::start(ns, &lease, &format!("operator-b{cycle}"), LEASE).await;
    // The leader follows every task and writes its progress: each message moves on.
    let shown = messages(client, ns).await;
    for name in running {
        let first = shown.get(name).cloned().flatten();
        wait_task(client, ns, name, PATIENCE, move |t| {
            let message = t.status.as_ref().and_then(|s| s.status_message.clone());
            message.as_deref().is_some_and(|m| m.contains(" of ")) && message != first
        })
        .await;
    }
    // A wave of new tasks, and the leader frozen while it starts them (records their Jobs,
    // creates them, writes their status).
    let mut cancelled = Vec::new();
    for i in 0..CANCELLED {
        let args = json!({"seconds": 3600, "label": format!("cancel-{cycle}-{i}")});
        cancelled.push(
            create_task(client, ns, "slow_compute", args)
                .await
                .name_any(),
        );
    }

    let pid = leader.pid();
    signal("STOP", pid);
    let frozen = Instant::now();
    for name in &cancelled {
        request_cancel(client, ns, name).await;
    }
    wait_until("the standby leads", || standby.is_leading()).await;
    let took_over = frozen.elapsed();
    for name in &cancelled {
        let task = wait_task(client, ns, name, PATIENCE, McpTask::is_terminal).await;
        let status = task.status.as_ref().map(|s| json!(s.status));
        assert_eq!(status, Some(json!("cancelled")), "{name}");
    }
    // From here only the old leader could write; what the standby sent has landed.
    standby.kill().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = Snapshot::take(client, ns, &identity).await;

    let woken_at = k8s_openapi::jiff::Timestamp::now();
    signal("CONT", pid);
    let woken = Instant::now();
    wait_until("the old leader exits", || !leader.is_running()).await;
    let exited = woken.elapsed();
    // Anything it sent before exiting has landed by now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = Snapshot::take(client, ns, &identity).await;
    let log = leader.log();
    assert!(log.contains("lost the leader Lease"), "{log}");
    Wake {
        took_over,
        exited,
        refused: refused(&log),
        writes: before.changes_to(&after, woken_at),
        in_flight: before.in_flight(&after, woken_at),
    }
}

/// What of the namespace only an operator writes.
struct Snapshot {
    /// Each task's resourceVersion, status message and last update.
    tasks: BTreeMap<String, (String, Value)>,
    /// Each Job's UID and whether it is being deleted.
    jobs: BTreeMap<String, (String, bool)>,
    /// The Events the old leader (`instance`) published.
    events: BTreeMap<String, Option<k8s_openapi::jiff::Timestamp>>,
}

impl Snapshot {
    async fn take(client: &Client, ns: &str, instance: &str) -> Self {
        let all = ListParams::default();
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        let events: Api<Event> = Api::namespaced(client.clone(), ns);
        let tasks = tasks.list(&all).await.expect("list tasks").items;
        let jobs = jobs.list(&all).await.expect("list Jobs").items;
        let events = events.list(&all).await.expect("list Events").items;
        Self {
            tasks: tasks
                .iter()
                .map(|t| {
                    let status = t.status.as_ref();
                    let seen = json!({
                        "status": status.map(|s| json!(s.status)),
                        "statusMessage": status.and_then(|s| s.status_message.clone()),
                        "lastUpdatedAt": status.and_then(|s| s.last_updated_at.clone()),
                    });
                    (
                        t.name_any(),
                        (t.resource_version().unwrap_or_default(), seen),
                    )
                })
                .collect(),
            jobs: jobs
                .iter()
                .map(|j| {
                    let deleting = j.metadata.deletion_timestamp.is_some();
                    (j.name_any(), (j.uid().unwrap_or_default(), deleting))
                })
                .collect(),
            events: events
                .iter()
                .filter(|e| e.reporting_instance.as_deref() == Some(instance))
                .map(|e| {
                    let regarding = e.regarding.as_ref().and_then(|r| r.name.as_deref());
                    let name = format!(
                        "{} ({} on {})",
                        e.name_any(),
                        e.reason.as_deref().unwrap_or_default(),
                        regarding.unwrap_or_default()
                    );
                    (name, e.event_time.as_ref().map(|t| t.0))
                })
                .collect(),
        }
    }

    /// Every difference from `self` to `later`, one line each.
    /// The Events published since `self` that the old leader stamped before `woken_at` (it
    /// made them before it was frozen: they were in flight).
    fn in_flight(&self, later: &Self, woken_at: k8s_openapi::jiff::Timestamp) -> Vec<String> {
        later
            .events
            .iter()
            .filter(|(name, at)| {
                !self.events.contains_key(*name) && at.is_some_and(|t| t < woken_at)
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn changes_to(&self, later: &Self, woken_at: k8s_openapi::jiff::Timestamp) -> Vec<String> {
        let mut changes = Vec::new();
        for (name, (version, seen)) in &later.tasks {
            match self.tasks.get(name) {
                Some((was, _)) if was == version => {}
                Some((_, before)) => changes.push(format!("task {name}: {before} -> {seen}")),
                None => changes.push(format!("task {name} created: {seen}")),
            }
        }
        for (name, job) in &later.jobs {
            match self.jobs.get(name) {
                Some(was) if was == job => {}
                was => {
                    // A Job is named after its task.
                    let task = later.tasks.get(name).map(|(_, seen)| &seen["status"]);
                    changes.push(format!("Job {name} (task {task:?}): {was:?} -> {job:?}"));
                }
            }
        }
        let gone = self.jobs.keys().filter(|n| !later.jobs.contains_key(*n));
        changes.extend(gone.map(|name| format!("Job {name} deleted")));
        // An Event made after the wake: stamped at or after it, or not stamped at all.
        let published = later.events.iter().filter(|(name, at)| {
            !self.events.contains_key(*name) && at.is_none_or(|t| t >= woken_at)
        });
        changes.extend(published.map(|(e, _)| format!("Event {e} published")));
        changes
    }
}

/// The writes the fence refused in `log` (`refused to PATCH /apis/.../mcptasks/<name>/status`),
/// counted by method and resource.
fn refused(log: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in log.lines().filter(|l| l.contains("refused a write")) {
        let Some((_, call)) = line.split_once("refused to ") else {
            continue;
        };
        let mut words = call.split_whitespace();
        let (method, path) = (words.next().unwrap_or("?"), words.next().unwrap_or("?"));
        let segments: Vec<&str> = path.trim_end_matches(':').split('/').collect();
        let at = segments.iter().position(|s| *s == "namespaces");
        let kind = at.and_then(|i| segments.get(i + 2)).unwrap_or(&"?");
        let sub = if segments.last() == Some(&"status") {
            "/status"
        } else {
            ""
        };
        *counts.entry(format!("{method} {kind}{sub}")).or_default() += 1;
    }
    counts
}

/// Each task's status message, by name.
async fn messages(client: &Client, ns: &str) -> BTreeMap<String, Option<String>> {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let list = tasks
        .list(&ListParams::default())
        .await
        .expect("list tasks");
    list.items
        .iter()
        .map(|t| {
            let message = t.status.as_ref().and_then(|s| s.status_message.clone());
            (t.name_any(), message)
        })
        .collect()
}

/// Checks `done` every 20 ms until it holds; panics naming `what` after [`PATIENCE`].
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let waited = Instant::now();
    while !done() {
        assert!(waited.elapsed() < PATIENCE, "{what}: not in {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
