//! f. A frozen leader: two operator processes on one Lease (the test's children, chart
//! timing: 15 s lease, 10 s renew deadline), the leader SIGSTOPped with tasks running until
//! the standby has taken over and ended them (some cancelled, some completed), then SIGCONTed.
//! After it wakes it must write nothing: no Job for any task (none is new, each ended task's
//! Job had one UID before the wake), no terminal status, result or error changed. Its writes
//! are refused by the lease fence (`operator/src/fence.rs`), whose refusals its log shows, and
//! it exits on its lost Lease.

use std::collections::BTreeMap;

use mcp_task_operator_harness::ensure_crds;
use mcp_task_operator_harness::operator::{
    Operator, TaskRecorder, apply_example_tools, create_task, request_cancel, wait_task,
};

use super::*;

/// Tasks the standby cancels while the leader is frozen (running under the leader before).
const CANCELLED: usize = 6;
/// Tasks that complete under the standby while the leader is frozen.
const COMPLETED: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "fault injection on the shared cluster: run by `make chaos` and `make test`"]
async fn a_frozen_leader_writes_nothing_after_it_wakes() {
    let _alone = CLUSTER.lock().await;
    with_temp_ns("chaos-frozen", |client, ns| async move {
        let begun = Instant::now();
        ensure_crds(&client).await;
        prepare_examples_blocking(&client).await;
        apply_example_tools(&client, &ns, common::CONFORMANCE_TOOLS).await;
        let lease = format!("{ns}-lease");
        let mut leader = Operator::start(&ns, &lease, "operator-a", &[]).await;
        leader.wait_leading().await;
        let standby = Operator::start(&ns, &lease, "operator-b", &[]).await;
        let recorder = TaskRecorder::start(&client, &ns).await;
        let jobs = JobRecorder::start(&client, &ns);

        // Every task runs under the leader: its Job exists and its pod prints progress.
        let mut cancelled = Vec::new();
        for i in 0..CANCELLED {
            let args = json!({"seconds": 3600, "label": format!("cancel-{i}")});
            cancelled.push(
                create_task(&client, &ns, "slow_compute", args)
                    .await
                    .name_any(),
            );
        }
        let mut completed = Vec::new();
        for i in 0..COMPLETED {
            let args = json!({"seconds": 6, "label": format!("done-{i}")});
            completed.push(
                create_task(&client, &ns, "slow_compute", args)
                    .await
                    .name_any(),
            );
        }
        for name in cancelled.iter().chain(&completed) {
            wait_task(&client, &ns, name, PATIENCE, |t| {
                t.status
                    .as_ref()
                    .and_then(|s| s.status_message.as_deref())
                    .is_some_and(|m| m.contains(" of "))
            })
            .await;
        }

        let pid = leader.pid();
        signal("STOP", pid);
        let frozen = Instant::now();
        for name in &cancelled {
            request_cancel(&client, &ns, name).await;
        }
        // The standby takes the Lease over and ends every task.
        wait_until("the standby leads", || standby.is_leading()).await;
        let took_over = frozen.elapsed();
        for name in cancelled.iter().chain(&completed) {
            wait_task(&client, &ns, name, PATIENCE, McpTask::is_terminal).await;
        }
        let before = ended(&client, &ns).await;
        let job_uids: BTreeMap<String, BTreeSet<String>> = before
            .keys()
            .map(|name| (name.clone(), jobs.uids(name)))
            .collect();

        signal("CONT", pid);
        let woken = Instant::now();
        wait_until("the old leader exits", || !leader.is_running()).await;
        let exited = woken.elapsed();
        // Anything it sent before exiting has landed by now.
        tokio::time::sleep(Duration::from_secs(3)).await;

        let log = leader.log();
        assert!(log.contains("lost the leader Lease"), "{log}");
        let refused = log.matches("refused a write").count();
        for (name, uids) in &job_uids {
            assert_eq!(
                &jobs.uids(name),
                uids,
                "task {name} got a Job after the wake"
            );
        }
        assert_eq!(jobs.duplicated(), vec![], "a Job was created twice");
        let after = ended(&client, &ns).await;
        assert_eq!(after, before, "a terminal task changed after the wake");
        recorder.assert_terminal_statuses_never_change();
        for name in &cancelled {
            assert_eq!(before[name]["status"], "cancelled", "{name}");
        }
        for name in &completed {
            assert_eq!(before[name]["status"], "completed", "{name}");
        }
        eprintln!(
            "frozen leader: standby led {:.1} s after the SIGSTOP; the woken leader exited \
             {:.2} s after the SIGCONT with {refused} writes refused; {} tasks unchanged; \
             {:.1} s in all",
            took_over.as_secs_f64(),
            exited.as_secs_f64(),
            after.len(),
            begun.elapsed().as_secs_f64(),
        );
        drop(standby);
    })
    .await;
}

/// The status, result and error of every terminal task of `ns`, by name.
async fn ended(client: &Client, ns: &str) -> BTreeMap<String, Value> {
    let tasks: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let list = tasks
        .list(&ListParams::default())
        .await
        .expect("list tasks");
    list.items
        .iter()
        .filter(|t| t.is_terminal())
        .map(|t| {
            let status = t.status.as_ref().expect("a terminal task has a status");
            let kept = json!({
                "status": status.status,
                "result": status.result,
                "error": status.error,
            });
            (t.name_any(), kept)
        })
        .collect()
}

/// Sends SIG`name` to `pid`.
fn signal(name: &str, pid: u32) {
    let out = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .output()
        .expect("kill runs");
    assert!(
        out.status.success(),
        "kill -{name} {pid}: {}",
        output_text(&out)
    );
}

/// Checks `done` every 100 ms until it holds; panics naming `what` after [`PATIENCE`].
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let waited = Instant::now();
    while !done() {
        assert!(waited.elapsed() < PATIENCE, "{what}: not in {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
