//! A task's lifetime against its work and its one Job: a task still running when its TTL ends
//! is never deleted (its expiry moves ahead while it runs, and its reported `ttlMs` grows), so a
//! tool longer than its TTL completes and its result can be read, and once it has ended it
//! expires as usual; a task whose Job someone deletes fails as `JobDeleted` and gets no second
//! Job; a task re-created under the name of a deleted one waits for the old Job to go, then runs.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::start_operator_with_conformance_tools;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::wire::build_task;
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::operator::{
    WAIT, assert_completed, create_task, create_task_with, failure_reason, poll_task, result_text,
    status_message, wait_completed, wait_task_event,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::json;

#[tokio::test]
async fn a_tool_longer_than_its_ttl_completes_and_its_result_stays_readable() {
    with_temp_ns("op-lifetime", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let ttl_ms = 10_000;
        let args = json!({"seconds": 25, "label": "outlives"});
        let task = create_task_with(
            &client,
            &ns,
            "slow_compute",
            args,
            Some(ttl_ms),
            BTreeMap::new(),
        )
        .await;
        let name = task.metadata.name.clone().expect("name");
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);

        // Poll it as a client would: at every look it exists and is not expired (what the
        // front end checks before it answers), until it has ended.
        let started = Instant::now();
        let mut longest_ttl = 0;
        let done = loop {
            let now = Timestamp::now();
            let task = tasks
                .get_opt(&name)
                .await
                .expect("get task")
                .unwrap_or_else(|| {
                    panic!(
                        "the running task was deleted {:?} after its creation",
                        started.elapsed()
                    )
                });
            assert!(
                !task.is_expired(now),
                "the running task shows as expired at {now}: {:?}",
                task.status
            );
            let reported = build_task(&task).expect("wire task").ttl_ms.expect("a TTL");
            assert!(
                reported >= ttl_ms,
                "ttlMs {reported} below the requested {ttl_ms}"
            );
            longest_ttl = longest_ttl.max(reported);
            if task.is_terminal() {
                break task;
            }
            assert!(
                started.elapsed() < Duration::from_secs(25) + WAIT,
                "never ended"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        eprintln!(
            "completed {:.1} s after creation with ttlMs {longest_ttl} (requested {ttl_ms})",
            started.elapsed().as_secs_f64()
        );
        assert_completed(&done);
        assert!(result_text(&done).contains("outlives"), "{:?}", done.status);
        // Its lifetime grew past the request, and covers more than the run.
        assert!(longest_ttl > 25_000, "ttlMs {longest_ttl}");
        let events = wait_task_event(&client, &ns, &name, "TTLExtended").await;
        assert!(
            events.iter().any(|e| e.reason == "TTLExtended"),
            "{events:#?}"
        );
        assert!(!events.iter().any(|e| e.reason == "Expired"), "{events:#?}");

        // Once ended, it expires at its (extended) expiry, and not before.
        let expires = done.expires_at().expect("an expiry");
        let ended_at = Timestamp::now();
        assert!(
            expires > ended_at,
            "expired at {expires}, ended by {ended_at}"
        );
        let begun = Instant::now();
        while let Some(task) = tasks.get_opt(&name).await.expect("get task") {
            assert!(begun.elapsed() < WAIT, "never deleted: {:?}", task.status);
            assert_eq!(task.task_status(), TaskStatus::Completed);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(Timestamp::now() >= expires, "deleted before {expires}");
        let events = wait_task_event(&client, &ns, &name, "Expired").await;
        assert!(events.iter().any(|e| e.reason == "Expired"), "{events:#?}");
    })
    .await;
}

/// Waits until the task has ended and returns it.
async fn wait_terminal(client: &Client, ns: &str, name: &str) -> McpTask {
    poll_task(client, ns, name, WAIT, McpTask::is_terminal).await
}

/// Waits until the task's Job exists and its tool runs (the task says so), then returns it.
async fn running_job(client: &Client, ns: &str, name: &str) -> Job {
    poll_task(client, ns, name, WAIT, |t| {
        // slow_compute says "<label>: <n> of <seconds> s" every second.
        status_message(t).contains(" of ")
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    jobs.get(name).await.expect("the task's Job")
}

#[tokio::test]
async fn a_task_whose_job_someone_deletes_fails_as_job_deleted_and_gets_no_second_job() {
    with_temp_ns("op-job-deleted", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let name = create_task(&client, &ns, "slow_compute", json!({"seconds": 600}))
            .await
            .name_any();
        running_job(&client, &ns, &name).await;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let deleted_at = Instant::now();
        jobs.delete(&name, &DeleteParams::background())
            .await
            .expect("delete the Job");
        let done = wait_terminal(&client, &ns, &name).await;
        eprintln!(
            "failed {:.1} s after its Job was deleted",
            deleted_at.elapsed().as_secs_f64()
        );
        assert_eq!(done.task_status(), TaskStatus::Failed, "{:?}", done.status);
        assert_eq!(failure_reason(&done), "JobDeleted", "{:?}", done.status);
        let events = wait_task_event(&client, &ns, &name, "Failed").await;
        assert!(events.iter().any(|e| e.reason == "Failed"), "{events:#?}");
        // Exactly one Job, ever: one JobCreated Event, and no Job of the name now.
        let created = events.iter().filter(|e| e.reason == "JobCreated").count();
        assert_eq!(created, 1, "{events:#?}");
        assert!(jobs.get_opt(&name).await.expect("get job").is_none());
    })
    .await;
}

/// A finalizer of the tests' own that keeps a deleted Job in place until removed.
const HOLD_FINALIZER: &str = "mcptasks.io/tests-hold";

/// Removes the tests' finalizer from a Job when dropped, so that a failed test never leaves a
/// Job (and its namespace) stuck in deletion.
struct Release {
    ns: String,
    job: String,
}

impl Drop for Release {
    fn drop(&mut self) {
        let patch = r#"{"metadata":{"finalizers":null}}"#;
        let job = format!("job/{}", self.job);
        let args = [
            "-n", &self.ns, "patch", &job, "--type", "merge", "-p", patch,
        ];
        let _ = mcp_task_operator_harness::kubectl(&args);
    }
}

#[tokio::test]
async fn a_task_recreated_under_a_deleted_tasks_name_waits_for_its_job_then_runs() {
    with_temp_ns("op-recreated", |client, ns| async move {
        let _operator = start_operator_with_conformance_tools(&client, &ns).await;
        let first = create_task(&client, &ns, "slow_compute", json!({"seconds": 600})).await;
        let name = first.metadata.name.clone().expect("name");
        running_job(&client, &ns, &name).await;

        // The first task goes; its Job stays, being deleted, while the tests' finalizer holds it.
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let hold = json!({"metadata": {"finalizers": [HOLD_FINALIZER]}});
        jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&hold))
            .await
            .expect("hold the Job");
        let _release = Release {
            ns: ns.clone(),
            job: name.clone(),
        };
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        tasks
            .delete(&name, &DeleteParams::background())
            .await
            .expect("delete the first task");
        while tasks.get_opt(&name).await.expect("get task").is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // A new task of the same name: it waits for the old Job, neither adopting it nor failing.
        let mut second = first.clone();
        second.metadata = kube::api::ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        };
        second.spec.arguments = json!({"seconds": 1, "label": "second"})
            .as_object()
            .map(mcp_task_operator_crds::RawJson::from_map);
        second.status = None;
        let second = tasks
            .create(&PostParams::default(), &second)
            .await
            .expect("re-create the task");
        let waiting = poll_task(&client, &ns, &name, WAIT, |t| {
            status_message(t).contains("of an earlier task")
        })
        .await;
        assert_eq!(waiting.task_status(), TaskStatus::Working);
        assert_eq!(waiting.metadata.uid, second.metadata.uid);

        // The old Job goes: the new task gets a Job of its own and completes.
        let release = json!({"metadata": {"finalizers": null}});
        jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&release))
            .await
            .expect("release the Job");
        let done = wait_completed(&client, &ns, &name).await;
        assert!(result_text(&done).contains("second"), "{:?}", done.status);
        let job = jobs.get(&name).await.expect("the new Job");
        let owner = job.metadata.owner_references.unwrap_or_default();
        assert_eq!(
            owner.first().map(|r| Some(&r.uid)),
            Some(second.metadata.uid.as_ref())
        );
    })
    .await;
}
