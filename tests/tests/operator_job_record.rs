//! The record of a task's one Job across a failover: a leader that recorded the Job
//! (`status.jobName`) and ended before creating it leaves a half-done record; the next leader
//! creates the Job (once) and the task completes, where it used to fail `JobDeleted`. A Job
//! whose creation was confirmed (the `JobCreated` condition) and that someone deletes still
//! fails the task `JobDeleted` (`operator_lifetimes.rs`).

mod common;

use std::time::Instant;

use common::prepare_conformance_tools;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_harness::operator::{
    Operator, assert_completed, create_task, result_text, wait_task_event, wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

#[tokio::test]
async fn a_job_recorded_by_a_leader_that_died_before_creating_it_is_created_once() {
    with_temp_ns("op-job-record", |client, ns| async move {
        prepare_conformance_tools(&client, &ns).await;
        // No operator runs: the task and the half-done record a dying leader leaves.
        let args = json!({"seconds": 1, "label": "after-failover"});
        let task = create_task(&client, &ns, "slow_compute", args).await;
        let name = task.name_any();
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        let record = json!({"status": {"status": "working", "jobName": name}});
        tasks
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&record))
            .await
            .expect("record the Job as a dying leader did");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        assert!(jobs.get_opt(&name).await.expect("get job").is_none());

        // The next leader.
        let started = Instant::now();
        let _operator = Operator::start_leader(&ns).await;
        let done = wait_terminal(&client, &ns, &name).await;
        eprintln!(
            "completed {:.1} s after the new operator started",
            started.elapsed().as_secs_f64()
        );
        assert_completed(&done);
        assert!(
            result_text(&done).contains("after-failover"),
            "{:?}",
            done.status
        );

        // Exactly one Job, this task's, confirmed in the task's status.
        let job = jobs.get(&name).await.expect("the task's Job");
        let owners = job.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(owners.len(), 1, "{owners:?}");
        assert_eq!(Some(&owners[0].uid), task.metadata.uid.as_ref());
        let events = wait_task_event(&client, &ns, &name, "JobCreated").await;
        let created = events.iter().filter(|e| e.reason == "JobCreated").count();
        assert_eq!(created, 1, "{events:#?}");
        let conditions = done.status.as_ref().map(|s| s.conditions.clone());
        let confirmation = conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "JobCreated")
            .unwrap_or_else(|| panic!("a JobCreated condition: {conditions:?}"));
        let job_uid = job.uid().expect("uid");
        assert!(
            confirmation.message.contains(&job_uid),
            "{confirmation:?} names Job {job_uid}"
        );
    })
    .await;
}
