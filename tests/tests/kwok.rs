//! Fake nodes (KWOK) on the local cluster: a Job on a fake node completes with no container
//! run; a pod that does not tolerate their taint never lands there; a fake pod's log (a script,
//! `hack/kwok/logs/`) streams through the API server and ends when the fake container exits; a
//! pod on a lost fake node is evicted; the operator's whole path runs on fake nodes; and a task
//! whose node is lost fails as `NodeLost`. Every
//! test starts kwok itself (`hack/kwok.sh start`, idempotent).

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, LogParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::kwok::{
    DEFAULT_LOG, DEFAULT_RESULT_TEXT, FakeNode, HOLD_CONTAINER, HOLD_LOG_FIRST, NO_SUCH_IMAGE,
    RUN_FOR_ANNOTATION, SHARED_TYPE, ensure_fake_nodes, fake_pod_template, place_on_fake_node,
};
use mcp_task_operator_harness::operator::{
    WAIT, create_task, create_tool, failure_reason, poll_task, result_text, status_message, tool,
    wait_completed, wait_job_stopped, wait_task_event, with_operator,
};
use mcp_task_operator_harness::{wait_for, with_temp_ns};
use serde_json::{Value, json};

/// Creates a Job (no retries) running `template` and returns its name.
async fn create_job(client: &Client, ns: &str, name: &str, template: Value) {
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": template},
    }))
    .expect("a Job");
    Api::<Job>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &job)
        .await
        .unwrap_or_else(|e| panic!("cannot create Job {name}: {e}"));
}

/// Whether the pod's first container runs or ran.
fn started(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
}

/// Waits until the Job's pod has started its container; returns the pod.
async fn started_job_pod(client: &Client, ns: &str, job: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let by_job = ListParams::default().labels(&format!("job-name={job}"));
    let begun = Instant::now();
    loop {
        let list = pods.list(&by_job).await.expect("list pods");
        if let Some(pod) = list.items.into_iter().find(started) {
            return pod;
        }
        assert!(
            begun.elapsed() < WAIT,
            "no started pod of Job {job} in {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Follows the pod's log through the API server until the stream ends; returns its lines.
async fn follow_log(client: &Client, ns: &str, pod: &str, container: &str) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = LogParams {
        container: Some(container.to_owned()),
        follow: true,
        ..LogParams::default()
    };
    let read = async {
        let stream = pods
            .log_stream(pod, &params)
            .await
            .expect("log stream opens");
        stream
            .lines()
            .try_collect::<Vec<_>>()
            .await
            .expect("log stream reads")
    };
    tokio::time::timeout(WAIT, read)
        .await
        .unwrap_or_else(|_| panic!("the log stream of {pod} did not end in {WAIT:?}"))
}

/// The exit code of the pod's first container, if it terminated.
fn exit_code(pod: &Pod) -> Option<i32> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code)
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_job_on_a_fake_node_completes_without_a_container() {
    ensure_fake_nodes().await;
    with_temp_ns("kwok-job", |client, ns| async move {
        // NO_SUCH_IMAGE exists nowhere: on node1 this pod could only fail to pull.
        create_job(&client, &ns, "fake", fake_pod_template("tool", json!({}))).await;
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let complete = |j: Option<&Job>| {
            j.and_then(|j| j.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Complete" && c.status == "True")
                })
        };
        wait_for(&jobs, "fake", complete, WAIT).await;
        let pod = started_job_pod(&client, &ns, "fake").await;
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        assert!(
            node.as_deref().is_some_and(|n| n.starts_with("kwok-node-")),
            "the pod ran on {node:?}, not on a fake node"
        );
        assert_eq!(exit_code(&pod), Some(0));
    })
    .await;
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_pod_that_does_not_tolerate_the_taint_never_lands_on_a_fake_node() {
    ensure_fake_nodes().await;
    with_temp_ns("kwok-taint", |client, ns| async move {
        // It selects the fake nodes but lacks the toleration: the scheduler must refuse it.
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "intolerant"},
            "spec": {"restartPolicy": "Never", "nodeSelector": {"type": SHARED_TYPE},
                     "containers": [{"name": "tool", "image": NO_SUCH_IMAGE}]},
        }))
        .expect("a Pod");
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
        let unschedulable = |p: Option<&Pod>| {
            p.and_then(|p| p.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter().any(|c| {
                        c.type_ == "PodScheduled"
                            && c.reason.as_deref() == Some("Unschedulable")
                            && c.message
                                .as_deref()
                                .is_some_and(|m| m.contains("untolerated taint"))
                    })
                })
        };
        let refused = wait_for(&pods, "intolerant", unschedulable, WAIT).await;
        let node = refused.spec.as_ref().and_then(|s| s.node_name.clone());
        assert_eq!(node, None, "bound to {node:?}");
    })
    .await;
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_fake_pod_log_streams_its_script_and_ends_when_the_container_exits() {
    ensure_fake_nodes().await;
    with_temp_ns("kwok-log", |client, ns| async move {
        let run_for = json!({RUN_FOR_ANNOTATION: "4s"});
        create_job(&client, &ns, "logs", fake_pod_template("tool", run_for)).await;
        let pod = started_job_pod(&client, &ns, "logs").await;
        let name = pod.metadata.name.clone().expect("pod name");
        // As the operator reads it: follow=true through the API server's pod log endpoint.
        let lines = follow_log(&client, &ns, &name, "tool").await;
        assert_eq!(lines, DEFAULT_LOG, "the scripted lines, in order");
        // The stream ended because the container exited, not before.
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let after = pods.get(&name).await.expect("pod");
        assert_eq!(
            exit_code(&after),
            Some(0),
            "stream ended with the container"
        );
    })
    .await;
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_line_due_after_the_fake_container_exits_is_never_printed() {
    ensure_fake_nodes().await;
    with_temp_ns("kwok-cut", |client, ns| async move {
        // hold.log prints its result an hour in; this container exits after 2 s.
        let run_for = json!({RUN_FOR_ANNOTATION: "2s"});
        create_job(
            &client,
            &ns,
            "cut",
            fake_pod_template(HOLD_CONTAINER, run_for),
        )
        .await;
        let pod = started_job_pod(&client, &ns, "cut").await;
        let name = pod.metadata.name.clone().expect("pod name");
        let lines = follow_log(&client, &ns, &name, HOLD_CONTAINER).await;
        assert_eq!(lines, [HOLD_LOG_FIRST]);
    })
    .await;
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_pod_on_a_lost_fake_node_is_evicted_and_goes_when_the_node_returns() {
    with_temp_ns("kwok-lost", |client, ns| async move {
        let node = FakeNode::add(&format!("kwok-{ns}")).await;
        let mut spec = json!({
            "restartPolicy": "Never",
            "containers": [{"name": HOLD_CONTAINER, "image": NO_SUCH_IMAGE}],
            // Evicted 1 s after the node is found unreachable (the default is 300 s).
            "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 1}],
        });
        place_on_fake_node(&mut spec, &node.name);
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "stranded", "annotations": {RUN_FOR_ANNOTATION: "1h"}},
            "spec": spec,
        }))
        .expect("a Pod");
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
        wait_for(
            &pods,
            "stranded",
            |p: Option<&Pod>| p.is_some_and(started),
            WAIT,
        )
        .await;

        let lost_at = Instant::now();
        node.lose().await;
        let nodes: Api<Node> = Api::all(client.clone());
        let unreachable = |n: Option<&Node>| {
            n.and_then(|n| n.spec.as_ref())
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| t.iter().any(|t| t.key == "node.kubernetes.io/unreachable"))
        };
        // Measured on this cluster: tainted ~52 s after the loss (node-monitor-grace-period
        // 50 s), the pod terminating 53-71 s after (docs/local-cluster.md).
        let limit = Duration::from_secs(120);
        wait_for(&nodes, &node.name, unreachable, limit).await;
        let terminating =
            |p: Option<&Pod>| p.is_some_and(|p| p.metadata.deletion_timestamp.is_some());
        let evicted = wait_for(&pods, "stranded", terminating, limit).await;
        eprintln!(
            "pod terminating {:.1} s after its node was lost",
            lost_at.elapsed().as_secs_f64()
        );
        // No kubelet confirms the deletion: the pod stays, still Running, while the node is lost.
        let phase = evicted.status.as_ref().and_then(|s| s.phase.clone());
        assert_eq!(phase.as_deref(), Some("Running"));
        assert!(pods.get_opt("stranded").await.expect("get pod").is_some());

        // The node comes back: its kubelet finishes the deletion.
        node.restore().await;
        let restored_at = Instant::now();
        while pods.get_opt("stranded").await.expect("get pod").is_some() {
            assert!(
                restored_at.elapsed() < WAIT,
                "pod still there {WAIT:?} after the node returned"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_task_on_a_fake_node_completes_with_the_scripted_result() {
    ensure_fake_nodes().await;
    with_operator("kwok-task", async |client, ns, _| {
        let mut pod_spec = json!({});
        place_on_fake_node(&mut pod_spec, SHARED_TYPE);
        let spec = json!({"template": {
            "metadata": {"annotations": {RUN_FOR_ANNOTATION: "3s"}},
            "spec": pod_spec,
        }});
        create_tool(
            &client,
            &ns,
            &tool("fake", NO_SUCH_IMAGE, &[], spec, json!({})),
        )
        .await;
        let task = create_task(&client, &ns, "fake", json!({})).await;
        let name = task.metadata.name.clone().expect("task name");
        let done = wait_completed(&client, &ns, &name).await;
        // Only kwok's script prints this (NO_SUCH_IMAGE runs nowhere): the operator followed
        // a fake pod's log through the API server to the result line.
        assert_eq!(result_text(&done), DEFAULT_RESULT_TEXT);
    })
    .await;
}

#[tokio::test]
#[ignore = "needs KWOK fake nodes (built cold in ~10 min): run by `make kwok-test`"]
async fn a_task_whose_node_is_lost_fails_as_node_lost() {
    with_operator("kwok-node-lost", async |client, ns, _| {
        let node = FakeNode::add(&format!("kwok-{ns}")).await;
        // No toleration of an unreachable node of the tool's own: the operator's (60 s by
        // default, where Kubernetes gives 300 s) bounds how long the pod stays on a lost node.
        let mut pod_spec = json!({});
        place_on_fake_node(&mut pod_spec, &node.name);
        let spec = json!({"template": {
            "metadata": {"annotations": {RUN_FOR_ANNOTATION: "1h"}},
            "spec": pod_spec,
        }});
        let container = json!({"name": HOLD_CONTAINER});
        create_tool(
            &client,
            &ns,
            &tool("held", NO_SUCH_IMAGE, &[], spec, container),
        )
        .await;
        let task = create_task(&client, &ns, "held", json!({})).await;
        let name = task.metadata.name.clone().expect("task name");
        // Running on the fake node: the script's first line is the task's status.
        poll_task(&client, &ns, &name, WAIT, |t| {
            status_message(t) == "kwok: holding"
        })
        .await;

        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let listed = pods
            .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}")))
            .await
            .expect("list the task's pod");
        let tolerations = listed.items[0]
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default();
        assert!(
            tolerations.iter().any(|t| {
                t.key.as_deref() == Some("node.kubernetes.io/unreachable")
                    && t.toleration_seconds == Some(60)
            }),
            "{tolerations:?}"
        );

        let lost_at = Instant::now();
        node.lose().await;
        // The node is tainted unreachable ~52 s after the loss, the pod evicted 60 s later.
        let limit = Duration::from_secs(180);
        let done = poll_task(&client, &ns, &name, limit, McpTask::is_terminal).await;
        let took = lost_at.elapsed();
        eprintln!(
            "task failed {:.1} s after its node was lost",
            took.as_secs_f64()
        );
        assert_eq!(done.task_status(), TaskStatus::Failed, "{:?}", done.status);
        assert_eq!(failure_reason(&done), "NodeLost", "{:?}", done.status);
        assert!(
            status_message(&done).contains("node was lost"),
            "{:?}",
            done.status
        );
        let events = wait_task_event(&client, &ns, &name, "Failed").await;
        assert!(
            events
                .iter()
                .any(|e| e.reason == "Failed" && e.message.contains("node was lost")),
            "{events:#?}"
        );
        // The Job is stopped: nothing runs the call again elsewhere.
        wait_job_stopped(&client, &ns, &name).await;
    })
    .await;
}
