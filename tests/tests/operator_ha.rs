//! Two operator processes elect a leader on one Lease; the leader is SIGKILLed while several
//! tasks run, and the standby finishes them: no Job is duplicated and no terminal status ever
//! changes (every status transition is recorded by a watch throughout).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{accept_confirm, prepare_conformance_tools};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    Operator, TaskRecorder, WAIT, create_task, result_text, status_message, task_pods,
    wait_pod_phase, wait_status, wait_task, wait_task_event, wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

#[tokio::test]
async fn the_standby_finishes_the_tasks_of_a_killed_leader_without_duplicating_anything() {
    with_temp_ns("op-ha", |client, ns| async move {
        prepare_conformance_tools(&client, &ns).await;
        let lease = format!("{ns}-ha");
        let env = [("LEASE_DURATION_SECONDS", "4")];
        let mut leader = Operator::start(&ns, &lease, "operator-a", &env).await;
        leader.wait_leading().await;
        let standby = Operator::start(&ns, &lease, "operator-b", &env).await;
        let recorder = TaskRecorder::start(&client, &ns).await;

        // Four tasks that outlive the failover, one that ends during it, one waiting for input.
        let mut long = Vec::new();
        for i in 0..4 {
            let args = json!({"seconds": 14, "label": format!("long-{i}")});
            long.push(
                create_task(&client, &ns, "slow_compute", args)
                    .await
                    .name_any(),
            );
        }
        let short_args = json!({"seconds": 5, "label": "short"});
        let short = create_task(&client, &ns, "slow_compute", short_args)
            .await
            .name_any();
        let asking = create_task(
            &client,
            &ns,
            "confirm_delete",
            json!({"filename": "ha.txt"}),
        )
        .await
        .name_any();
        let mut all = long.clone();
        all.extend([short.clone(), asking.clone()]);

        for name in long.iter().chain([&short]) {
            wait_task(&client, &ns, name, WAIT, |t| {
                status_message(t).contains(": ")
            })
            .await;
        }
        wait_status(&client, &ns, &asking, TaskStatus::InputRequired).await;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let mut job_uids = BTreeMap::new();
        for name in &all {
            let job = jobs.get(name).await.expect("the leader made the Job");
            job_uids.insert(name.clone(), job.uid().expect("uid"));
        }
        assert!(
            !standby.is_leading(),
            "the standby stands by:\n{}",
            standby.log()
        );

        // SIGKILL the leader by the PID this test spawned.
        let pid = leader.pid();
        let killed = Instant::now();
        leader.kill().await;
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "operator {pid} still running"
        );
        standby.wait_leading().await;
        let failover = killed.elapsed();
        let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
        let held = leases.get(&lease).await.expect("lease");
        let spec = held.spec.expect("lease spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("operator-b"));
        assert_eq!(spec.lease_transitions, Some(1));
        println!(
            "failover: the standby led {:.2} s after the leader was SIGKILLed",
            failover.as_secs_f64()
        );
        assert!(failover < Duration::from_secs(15), "{failover:?}");

        accept_confirm(&client, &ns, &asking).await;
        let mut finished: BTreeMap<String, McpTask> = BTreeMap::new();
        for name in &all {
            finished.insert(name.clone(), wait_terminal(&client, &ns, name).await);
        }
        for (i, name) in long.iter().enumerate() {
            assert_eq!(finished[name].task_status(), TaskStatus::Completed);
            assert_eq!(
                result_text(&finished[name]),
                format!("Computed long-{i} in 14 s")
            );
        }
        assert_eq!(result_text(&finished[&short]), "Computed short in 5 s");
        assert_eq!(result_text(&finished[&asking]), "Deleted ha.txt");

        // Exactly one Job per task, the one the first leader made, and one pod each.
        for name in &all {
            let selector = format!("mcptasks.io/task={name}");
            let found = jobs
                .list(&ListParams::default().labels(&selector))
                .await
                .expect("list jobs");
            let uids: Vec<String> = found.items.iter().filter_map(ResourceExt::uid).collect();
            assert_eq!(uids, [job_uids[name].clone()], "Jobs of {name}");
            let ran = task_pods(&client, &ns, name).await;
            assert_eq!(ran.len(), 1, "pods of {name}: {ran:?}");
            let events = wait_task_event(&client, &ns, name, "JobCreated").await;
            let created = events.iter().filter(|e| e.reason == "JobCreated").count();
            assert_eq!(created, 1, "{events:#?}");
        }

        // Watch the tasks a little longer: nothing moves after a terminal status.
        tokio::time::sleep(Duration::from_secs(3)).await;
        recorder.assert_terminal_statuses_never_change();
        for name in &all {
            let statuses = recorder.statuses(name);
            let terminal = statuses.iter().filter(|s| s.is_terminal()).count();
            assert_eq!(terminal, 1, "{name}: {statuses:?}");
            println!("{name}: {statuses:?}");
        }
        println!(
            "{} status transitions recorded for {} tasks",
            recorder.transitions().len(),
            all.len()
        );
    })
    .await;
}

#[tokio::test]
async fn a_restarted_operator_resumes_every_task_from_the_cluster() {
    with_temp_ns("op-restart", |client, ns| async move {
        prepare_conformance_tools(&client, &ns).await;
        let mut first = Operator::start_leader(&ns).await;
        let recorder = TaskRecorder::start(&client, &ns).await;

        let asking = create_task(&client, &ns, "confirm_delete", json!({"filename": "r.txt"}))
            .await
            .name_any();
        let args = |seconds: u64, label: &str| json!({"seconds": seconds, "label": label});
        // Ends while no operator runs; outlives the restart.
        let during = create_task(&client, &ns, "slow_compute", args(4, "during"))
            .await
            .name_any();
        let after = create_task(&client, &ns, "slow_compute", args(10, "after"))
            .await
            .name_any();
        wait_status(&client, &ns, &asking, TaskStatus::InputRequired).await;
        // `during` last, and the kill at once: under load its container may start late, and a
        // fixed wait could let the first operator see it finish (the test used to flake so).
        for name in [&after, &during] {
            wait_task(&client, &ns, name, WAIT, |t| {
                status_message(t).contains(": ")
            })
            .await;
        }
        first.kill().await;
        // Until its container has exited: then the second operator finds it finished.
        wait_pod_phase(&client, &ns, &during, "Succeeded").await;
        let still = wait_status(&client, &ns, &during, TaskStatus::Working).await;
        assert!(
            !still.is_terminal(),
            "nobody finished it while the operator was down"
        );

        // Same Lease, same identity: it leads again at once and rebuilds everything from the
        // cluster (Jobs, pods, logs).
        let second = Operator::start_leader(&ns).await;
        let done = wait_terminal(&client, &ns, &during).await;
        assert_eq!(result_text(&done), "Computed during in 4 s");
        // The task waiting for input stays input_required across the restart until answered.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let answered_at = std::time::SystemTime::now();
        accept_confirm(&client, &ns, &asking).await;
        assert_eq!(
            result_text(&wait_terminal(&client, &ns, &asking).await),
            "Deleted r.txt"
        );
        assert_eq!(
            result_text(&wait_terminal(&client, &ns, &after).await),
            "Computed after in 10 s"
        );
        let before_answer: Vec<_> = recorder
            .of(&asking)
            .into_iter()
            .filter(|t| t.seen_at < answered_at)
            .filter_map(|t| t.status)
            .collect();
        assert_eq!(
            before_answer.last(),
            Some(&TaskStatus::InputRequired),
            "{:#?}",
            recorder.of(&asking)
        );
        let flickers = before_answer
            .windows(2)
            .filter(|w| w[0] == TaskStatus::InputRequired && w[1] != TaskStatus::InputRequired)
            .count();
        assert_eq!(flickers, 0, "{:#?}", recorder.of(&asking));

        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        for name in [&asking, &during, &after] {
            let selector = format!("mcptasks.io/task={name}");
            let found = jobs
                .list(&ListParams::default().labels(&selector))
                .await
                .expect("list jobs");
            assert_eq!(found.items.len(), 1, "Jobs of {name}");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        recorder.assert_terminal_statuses_never_change();
        drop(second);
    })
    .await;
}
