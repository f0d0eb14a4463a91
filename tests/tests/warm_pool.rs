//! Warm pools (issue 38): a tool with `spec.warmPool` keeps pods waiting, each claimed by one
//! task, which then runs there exactly as in a pod of its own; real operator, real Jobs and
//! pods, the real launcher (`mcp-bridge --launch`) from the bridge image of this build.

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;
use mcp_task_operator_harness::faults::{container_pid, signal};
use mcp_task_operator_harness::mcp_servers::bridge_image;
use mcp_task_operator_harness::operator::{
    Operator, WAIT, create_task, create_tool, failure_reason, poll_task, request_cancel,
    result_text, shell_tool, wait_status, wait_task_event, wait_terminal,
};
use serde_json::json;

/// Prints its task ID and arguments as its result.
const ECHO: &str = r#"printf '{"mcp":"result","result":{"content":[{"type":"text","text":"%s %s"}]}}\n' "$MCP_TASK_ID" "$(echo "$MCP_TOOL_ARGUMENTS" | sed 's/"/\\"/g')""#;
/// Says it started, then runs until cancelled.
const UNTIL_CANCELLED: &str = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done; echo '{"mcp":"status","message":"stopping"}'"#;

/// An operator for `ns` with this build's bridge image (the launcher comes from it) and
/// `env` besides, leading.
async fn start_operator(ns: &str, identity: &str, env: &[(&str, &str)]) -> Operator {
    let bridge = bridge_image();
    let mut all = vec![("BRIDGE_IMAGE", bridge.as_str())];
    all.extend_from_slice(env);
    let operator = Operator::start(ns, &format!("{ns}-lease"), identity, &all).await;
    operator.wait_leading().await;
    operator
}

fn pooled(name: &str, script: &str, extra: serde_json::Value) -> mcp_task_operator_crds::McpTool {
    let mut spec =
        json!({"warmPool": {"minReady": 1, "maxReady": 1}, "cancelGracePeriodSeconds": 5});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    shell_tool(name, script, spec)
}

/// The pool's Jobs that still wait (owned by their tool), with their pods' readiness.
async fn waiting_jobs(client: &Client, ns: &str, tool: &str) -> Vec<(Job, bool)> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("{WARM_POOL_LABEL}={tool}");
    let listed = jobs
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("list Jobs");
    let mut out = Vec::new();
    for job in listed.items {
        let by_tool = job
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.kind == "McpTool");
        if !by_tool || job.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let selector = format!("batch.kubernetes.io/job-name={}", job.name_any());
        let ready = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .expect("list pods")
            .items
            .iter()
            .any(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.status
                        .iter()
                        .flat_map(|s| s.conditions.iter().flatten())
                        .any(|c| c.type_ == "Ready" && c.status == "True")
            });
        out.push((job, ready));
    }
    out
}

/// Waits until the pool has a ready waiting pod that is not one of `not`; returns its Job's name.
async fn ready_warm_job(client: &Client, ns: &str, tool: &str, not: &[String]) -> String {
    let begun = Instant::now();
    loop {
        let ready = waiting_jobs(client, ns, tool)
            .await
            .into_iter()
            .find(|(j, ready)| *ready && !not.contains(&j.name_any()));
        if let Some((job, _)) = ready {
            return job.name_any();
        }
        assert!(
            begun.elapsed() < WAIT,
            "no ready warm pod of {tool} besides {not:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An operator for `ns` and the echo tool's pool (one pod); returns the operator and the Job
/// of the pool's ready pod.
async fn echo_pool(client: &Client, ns: &str) -> (Operator, String) {
    let operator = start_operator(ns, "operator-0", &[]).await;
    create_tool(client, ns, &pooled("echo", ECHO, json!({}))).await;
    let warm = ready_warm_job(client, ns, "echo", &[]).await;
    (operator, warm)
}

/// The pods of the Job `name`.
async fn pods_of(client: &Client, ns: &str, name: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("batch.kubernetes.io/job-name={name}");
    let listed = pods.list(&ListParams::default().labels(&selector)).await;
    listed.expect("list pods").items
}

/// Waits until the Job `name` is gone or being deleted.
async fn wait_job_deleted(client: &Client, ns: &str, name: &str) {
    let begun = Instant::now();
    while job(client, ns, name)
        .await
        .is_some_and(|j| j.metadata.deletion_timestamp.is_none())
    {
        assert!(
            begun.elapsed() < WAIT,
            "the claimed Job {name} was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn job(client: &Client, ns: &str, name: &str) -> Option<Job> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    jobs.get_opt(name).await.expect("get Job")
}

/// Waits until the task's tool said it started; returns the task.
async fn started(client: &Client, ns: &str, id: &str) -> mcp_task_operator_crds::McpTask {
    poll_task(client, ns, id, WAIT, |t| {
        t.status.as_ref().and_then(|s| s.status_message.as_deref()) == Some("started")
    })
    .await
}

fn job_name_of(task: &mcp_task_operator_crds::McpTask) -> String {
    task.status
        .as_ref()
        .and_then(|s| s.job_name.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_call_claims_a_waiting_pod_that_held_no_task_data_and_runs_there_alone() {
    mcp_task_operator_harness::with_temp_ns("warm-claim", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let (_operator, warm) = echo_pool(&client, &ns).await;
        // The waiting pod knows nothing of any task.
        let waiting = job(&client, &ns, &warm).await.expect("the warm Job");
        let pod = waiting
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("a pod");
        let env: Vec<&str> = pod.containers[0]
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .collect();
        for task_var in ["MCP_TASK_ID", "MCP_TOOL_ARGUMENTS", "MCP_MESSAGE_NONCE"] {
            assert!(
                !env.contains(&task_var),
                "a waiting pod has {task_var}: {env:?}"
            );
        }

        let created = Instant::now();
        let task = create_task(&client, &ns, "echo", json!({"greeting": "$(HOME) hi"})).await;
        let id = task.name_any();
        let done = wait_terminal(&client, &ns, &id).await;
        let took = created.elapsed();
        assert_eq!(
            done.task_status(),
            TaskStatus::Completed,
            "{:?}",
            done.status
        );
        // The call's own task ID and arguments, as the client sent them ($(HOME) unexpanded).
        assert_eq!(
            result_text(&done),
            format!(r#"{id} {{"greeting":"$(HOME) hi"}}"#)
        );
        assert_eq!(
            job_name_of(&done),
            warm,
            "the task ran in the waiting pod's Job"
        );
        let claimed = job(&client, &ns, &warm).await.expect("the claimed Job");
        let controller = claimed
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
            .expect("a controller");
        assert_eq!(
            (controller.kind.as_str(), controller.name.as_str()),
            ("McpTask", id.as_str())
        );
        wait_task_event(&client, &ns, &id, "JobClaimed").await;
        eprintln!("warm call: created -> completed in {took:?}");

        // The pod served that call alone: the next call claims another pod.
        let next = ready_warm_job(&client, &ns, "echo", std::slice::from_ref(&warm)).await;
        let second = create_task(&client, &ns, "echo", json!({})).await;
        let second = wait_terminal(&client, &ns, &second.name_any()).await;
        assert_eq!(second.task_status(), TaskStatus::Completed);
        assert_eq!(job_name_of(&second), next);
    })
    .await;
}

#[tokio::test]
async fn a_claimed_task_is_cancelled_as_any_other() {
    mcp_task_operator_harness::with_temp_ns("warm-cancel", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let _operator = start_operator(&ns, "operator-0", &[]).await;
        create_tool(&client, &ns, &pooled("waits", UNTIL_CANCELLED, json!({}))).await;
        let warm = ready_warm_job(&client, &ns, "waits", &[]).await;
        let task = create_task(&client, &ns, "waits", json!({})).await;
        let id = task.name_any();
        let running = started(&client, &ns, &id).await;
        assert_eq!(job_name_of(&running), warm);
        request_cancel(&client, &ns, &id).await;
        let ended = wait_status(&client, &ns, &id, TaskStatus::Cancelled).await;
        // The tool saw the cancel through the same file as in a pod of its own.
        assert_eq!(
            ended
                .status
                .as_ref()
                .and_then(|s| s.status_message.as_deref()),
            Some("stopping")
        );
    })
    .await;
}

/// Ignores the cancel file: runs until its pod is deleted.
const IGNORES_CANCEL: &str =
    r#"echo '{"mcp":"status","message":"started"}'; while true; do sleep 0.2; done"#;

#[tokio::test]
async fn a_claimed_tool_that_ignores_its_cancel_is_stopped_after_the_grace() {
    mcp_task_operator_harness::with_temp_ns("warm-grace", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let _operator = start_operator(&ns, "operator-0", &[]).await;
        let tool = pooled(
            "stubborn",
            IGNORES_CANCEL,
            json!({"cancelGracePeriodSeconds": 1}),
        );
        create_tool(&client, &ns, &tool).await;
        let warm = ready_warm_job(&client, &ns, "stubborn", &[]).await;
        let id = create_task(&client, &ns, "stubborn", json!({}))
            .await
            .name_any();
        let running = started(&client, &ns, &id).await;
        assert_eq!(job_name_of(&running), warm);
        request_cancel(&client, &ns, &id).await;
        // The claimed Job (not one named after the task) is deleted once the grace is over.
        let ended = wait_status(&client, &ns, &id, TaskStatus::Cancelled).await;
        assert_eq!(job_name_of(&ended), warm);
        wait_job_deleted(&client, &ns, &warm).await;
    })
    .await;
}

#[tokio::test]
async fn a_call_that_finds_the_pools_pod_starting_waits_for_it_instead_of_starting_cold() {
    mcp_task_operator_harness::with_temp_ns("warm-starting", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let _operator = start_operator(&ns, "operator-0", &[]).await;
        create_tool(&client, &ns, &pooled("echo", ECHO, json!({}))).await;
        // The pool's first Job, seen before its pod can be ready.
        let begun = Instant::now();
        let starting = loop {
            if let Some((job, ready)) = waiting_jobs(&client, &ns, "echo").await.first() {
                assert!(
                    !ready,
                    "the pod was ready before the call: nothing to wait for"
                );
                break job.name_any();
            }
            assert!(begun.elapsed() < WAIT, "the pool made no Job");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let task = create_task(&client, &ns, "echo", json!({})).await;
        let done = wait_terminal(&client, &ns, &task.name_any()).await;
        eprintln!(
            "the pool's Job seen → the call completed: {:?}",
            begun.elapsed()
        );
        assert_eq!(
            done.task_status(),
            TaskStatus::Completed,
            "{:?}",
            done.status
        );
        // Before, the call started cold in a Job of its own name.
        assert_eq!(job_name_of(&done), starting, "{:?}", done.status);
    })
    .await;
}

#[tokio::test]
async fn a_waiting_pod_that_dies_is_replaced_and_never_handed_to_a_task() {
    mcp_task_operator_harness::with_temp_ns("warm-dies", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let (_operator, warm) = echo_pool(&client, &ns).await;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        for pod in pods_of(&client, &ns, &warm).await {
            pods.delete(&pod.name_any(), &DeleteParams::default().grace_period(0))
                .await
                .expect("delete the waiting pod");
        }
        let replacement = ready_warm_job(&client, &ns, "echo", std::slice::from_ref(&warm)).await;
        let task = create_task(&client, &ns, "echo", json!({})).await;
        let done = wait_terminal(&client, &ns, &task.name_any()).await;
        assert_eq!(
            done.task_status(),
            TaskStatus::Completed,
            "{:?}",
            done.status
        );
        assert_eq!(job_name_of(&done), replacement);
        assert!(
            job(&client, &ns, &warm)
                .await
                .is_none_or(|j| j.metadata.deletion_timestamp.is_some())
        );
    })
    .await;
}

#[tokio::test]
async fn a_pool_never_holds_a_slot_a_call_could_use() {
    mcp_task_operator_harness::with_temp_ns("warm-slots", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let _operator = start_operator(&ns, "operator-0", &[]).await;
        let tool = pooled("waits", UNTIL_CANCELLED, json!({"maxConcurrentTasks": 1}));
        create_tool(&client, &ns, &tool).await;
        let warm = ready_warm_job(&client, &ns, "waits", &[]).await;
        let task = create_task(&client, &ns, "waits", json!({})).await;
        let id = task.name_any();
        poll_task(&client, &ns, &id, WAIT, |t| job_name_of(t) == warm).await;
        // The one slot is the task's: no pod waits beside it.
        let begun = Instant::now();
        while begun.elapsed() < Duration::from_secs(5) {
            let waiting = waiting_jobs(&client, &ns, "waits").await;
            assert!(
                waiting.is_empty(),
                "a pod waits beside the running task: {:?}",
                waiting
                    .iter()
                    .map(|(j, _)| j.name_any())
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // Once the slot is free, the pool fills again.
        request_cancel(&client, &ns, &id).await;
        wait_terminal(&client, &ns, &id).await;
        ready_warm_job(&client, &ns, "waits", &[warm]).await;
    })
    .await;
}

#[tokio::test]
async fn a_new_leader_with_the_shared_key_keeps_claimed_and_waiting_pods() {
    mcp_task_operator_harness::with_temp_ns("warm-failover", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let key = std::env::temp_dir().join(format!("{ns}-warm-key"));
        std::fs::write(&key, [42u8; 32]).expect("write the key file");
        let key_path = key.to_string_lossy().into_owned();
        let env = [
            ("WARM_KEY_FILE", key_path.as_str()),
            ("LEASE_DURATION_SECONDS", "4"),
            ("LEASE_RENEW_DEADLINE_SECONDS", "3"),
            ("LEASE_RETRY_PERIOD_SECONDS", "1"),
        ];
        let mut first = start_operator(&ns, "operator-0", &env).await;
        let tool = pooled(
            "waits",
            UNTIL_CANCELLED,
            json!({"warmPool": {"minReady": 2, "maxReady": 2}}),
        );
        create_tool(&client, &ns, &tool).await;
        let a = ready_warm_job(&client, &ns, "waits", &[]).await;
        let b = ready_warm_job(&client, &ns, "waits", std::slice::from_ref(&a)).await;
        let task = create_task(&client, &ns, "waits", json!({})).await;
        let id = task.name_any();
        let running = started(&client, &ns, &id).await;
        let claimed = job_name_of(&running);
        assert!(
            [&a, &b].contains(&&claimed),
            "{claimed} is not a pod of the pool"
        );
        // The pool fills again: two pods wait beside the claimed one.
        let other = if claimed == a { b } else { a };
        let third = ready_warm_job(&client, &ns, "waits", &[claimed.clone(), other.clone()]).await;
        let before = [other, third];
        first.kill().await;
        let _second = start_operator(&ns, "operator-1", &env).await;
        // The new leader's pool rounds keep them: it claims with the same key.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let waiting: Vec<String> = waiting_jobs(&client, &ns, "waits")
            .await
            .into_iter()
            .map(|(j, _)| j.name_any())
            .collect();
        for name in &before {
            assert!(
                waiting.contains(name),
                "{name} was replaced after the failover: {waiting:?}"
            );
        }
        // The claimed task goes on under the new leader; a new call claims a pod that waited
        // across the failover.
        let next = create_task(&client, &ns, "waits", json!({})).await;
        let next_running = started(&client, &ns, &next.name_any()).await;
        assert!(
            before.contains(&job_name_of(&next_running)),
            "{:?}",
            next_running.status
        );
        request_cancel(&client, &ns, &id).await;
        let ended = wait_terminal(&client, &ns, &id).await;
        assert_eq!(ended.task_status(), TaskStatus::Cancelled);
        request_cancel(&client, &ns, &next.name_any()).await;
        std::fs::remove_file(&key).ok();
    })
    .await;
}

#[tokio::test]
async fn a_claimed_pod_that_never_answers_fails_its_task_within_the_claim_timeout() {
    mcp_task_operator_harness::with_temp_ns("warm-mute", |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        let (_operator, warm) = echo_pool(&client, &ns).await;
        let pod = pods_of(&client, &ns, &warm).await.remove(0);
        // The launcher stops: its port still takes connections (the kernel's backlog), and
        // nothing answers them, the claim nor the readiness probe. The call comes before the
        // kubelet's next probe (1 s) marks the pod unready, so it claims that pod.
        let launcher = container_pid(&pod, "tool");
        signal("STOP", launcher);
        let begun = Instant::now();
        let id = create_task(&client, &ns, "echo", json!({}))
            .await
            .name_any();
        // Before the fix the task stayed `working`, trying to hand itself over every 300 ms.
        let limit = Duration::from_secs(30) + WAIT;
        let done = poll_task(&client, &ns, &id, limit, |t| t.is_terminal()).await;
        eprintln!("ClaimUnanswered after {:?}", begun.elapsed());
        signal("CONT", launcher);
        assert_eq!(job_name_of(&done), warm, "{:?}", done.status);
        assert_eq!(done.task_status(), TaskStatus::Failed, "{:?}", done.status);
        assert_eq!(
            failure_reason(&done),
            "ClaimUnanswered",
            "{:?}",
            done.status
        );
        // Whether the tool started is unknown: its Job is deleted, the call never runs again.
        wait_job_deleted(&client, &ns, &warm).await;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let of_task = format!("{}={id}", mcp_task_operator_crds::TASK_LABEL);
        let listed = jobs.list(&ListParams::default().labels(&of_task)).await;
        let others: Vec<String> = listed
            .expect("list Jobs")
            .items
            .iter()
            .map(ResourceExt::name_any)
            .filter(|n| *n != warm)
            .collect();
        assert!(others.is_empty(), "the call started again in {others:?}");
    })
    .await;
}
