//! Real Kueue (`hack/kueue.sh start`, which `make integration` runs) admits the Jobs of a tool
//! that names a LocalQueue (`McpTool.spec.queueName`): a ClusterQueue with a quota of one
//! task's CPU, three calls: the 2nd and 3rd wait ("Waiting for admission by queue tasks") with
//! suspended Jobs, then run in turn, each ending with its own result; a waiting task can be
//! cancelled.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_tests::operator::{
    BUSYBOX_IMAGE, Operator, WAIT, assert_completed, create_task, create_tool, poll_task,
    request_cancel, result_text, status_message, tool, wait_terminal,
};
use mcp_task_operator_tests::{ensure_crds, with_temp_ns};
use serde_json::{Value, json};

const QUEUE: &str = "tasks";
const WAITING: &str = "Waiting for admission by queue tasks";
/// Runs about two seconds, then returns its task ID.
const BRIEF: &str = r#"sleep 2; echo "{\"mcp\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done $MCP_TASK_ID\"}]}}""#;

async fn apply(client: &Client, kind: &str, namespace: Option<&str>, object: Value) {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
    let resource = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let name = object["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let mut object = object;
    object["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
    object["kind"] = json!(kind);
    api.patch(
        &name,
        &PatchParams::apply("mto-tests").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("cannot apply {kind} {name}: {e}"));
}

async fn delete(client: &Client, kind: &str, name: &str) {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk));
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// A ResourceFlavor, a ClusterQueue of 100m CPU (one task) for `ns` only, and the LocalQueue
/// [`QUEUE`] in `ns`.
async fn queues(client: &Client, ns: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    assert!(
        crds.get_opt("clusterqueues.kueue.x-k8s.io")
            .await
            .expect("get CRD")
            .is_some(),
        "Kueue is not installed: run hack/kueue.sh start (make integration does)"
    );
    apply(
        client,
        "ResourceFlavor",
        None,
        json!({"metadata": {"name": ns}}),
    )
    .await;
    apply(
        client,
        "ClusterQueue",
        None,
        json!({
            "metadata": {"name": ns},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "resourceGroups": [{
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": ns, "resources": [
                        {"name": "cpu", "nominalQuota": "100m"},
                        {"name": "memory", "nominalQuota": "1Gi"},
                    ]}],
                }],
            },
        }),
    )
    .await;
    apply(
        client,
        "LocalQueue",
        Some(ns),
        json!({
            "metadata": {"name": QUEUE}, "spec": {"clusterQueue": ns},
        }),
    )
    .await;
}

async fn cleanup(client: &Client, ns: &str) {
    delete(client, "ClusterQueue", ns).await;
    delete(client, "ResourceFlavor", ns).await;
}

/// A tool of [`BRIEF`] whose container asks for the whole quota, admitted by [`QUEUE`].
fn queued_tool(name: &str, script: &str) -> mcp_task_operator_crds::McpTool {
    let container = json!({"resources": {
        "requests": {"cpu": "100m", "memory": "16Mi"}, "limits": {"memory": "128Mi"}}});
    let spec = json!({"queueName": QUEUE, "jobLabels": {"team": "tests"}});
    tool(name, BUSYBOX_IMAGE, &["sh", "-c", script], spec, container)
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

fn complete(job: &Job) -> bool {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| {
        c.iter()
            .any(|c| c.type_ == "Complete" && c.status == "True")
    })
}

#[tokio::test]
async fn kueue_admits_three_calls_in_turn_each_with_its_own_result() {
    with_temp_ns("kueue-order", |client, ns| async move {
        ensure_crds(&client).await;
        queues(&client, &ns).await;
        let _operator = Operator::start_leader(&ns).await;
        create_tool(&client, &ns, &queued_tool("kueued", BRIEF)).await;
        let mut names = Vec::new();
        for _ in 0..3 {
            names.push(
                create_task(&client, &ns, "kueued", json!({}))
                    .await
                    .name_any(),
            );
        }
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);

        // Two of them wait for admission, their Jobs suspended, labelled for the queue.
        let begun = Instant::now();
        loop {
            let list = jobs.list(&ListParams::default()).await.expect("Jobs").items;
            let waiting = list.iter().filter(|j| suspended(j)).count();
            if list.len() == 3 && waiting >= 2 {
                for job in &list {
                    assert_eq!(
                        job.labels()
                            .get("kueue.x-k8s.io/queue-name")
                            .map(String::as_str),
                        Some(QUEUE)
                    );
                    assert_eq!(job.labels().get("team").map(String::as_str), Some("tests"));
                }
                break;
            }
            assert!(
                begun.elapsed() < WAIT,
                "not queued: {} Jobs, {waiting} suspended",
                list.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut seen_waiting = 0;
        for name in &names {
            let job = jobs.get(name).await.expect("Job");
            if suspended(&job) {
                poll_task(&client, &ns, name, WAIT, |t| status_message(t) == WAITING).await;
                seen_waiting += 1;
            }
        }
        assert!(seen_waiting >= 2, "{seen_waiting} tasks said they wait");

        // In turn: never two admitted Jobs running at once; the time from one Job's end to
        // the next Job's pod.
        let mut slot_to_pod = Vec::new();
        let mut freed: Option<Instant> = None;
        let mut done_jobs = BTreeMap::new();
        let mut with_pod = std::collections::BTreeSet::new();
        let begun = Instant::now();
        while done_jobs.len() < 3 {
            assert!(begun.elapsed() < 3 * WAIT, "not all ran: {done_jobs:?}");
            let list = jobs.list(&ListParams::default()).await.expect("Jobs").items;
            let running = list
                .iter()
                .filter(|j| !suspended(j) && !complete(j))
                .count();
            assert!(running <= 1, "{running} admitted Jobs run at once");
            for job in &list {
                if complete(job) && done_jobs.insert(job.name_any(), ()).is_none() {
                    freed = Some(Instant::now());
                }
            }
            let pod_list = pods.list(&ListParams::default()).await.expect("pods").items;
            for pod in pod_list {
                let job = pod
                    .labels()
                    .get("batch.kubernetes.io/job-name")
                    .cloned()
                    .unwrap_or_default();
                if with_pod.insert(job)
                    && let Some(at) = freed.take()
                {
                    slot_to_pod.push(at.elapsed());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for name in &names {
            let done = wait_terminal(&client, &ns, name).await;
            assert_completed(&done);
            assert_eq!(result_text(&done), format!("done {name}"));
        }
        eprintln!("Kueue: Job complete -> next Job's pod (polled every 50 ms): {slot_to_pod:?}");
        cleanup(&client, &ns).await;
    })
    .await;
}

#[tokio::test]
async fn a_task_waiting_for_admission_can_be_cancelled() {
    with_temp_ns("kueue-cancel", |client, ns| async move {
        ensure_crds(&client).await;
        queues(&client, &ns).await;
        let _operator = Operator::start_leader(&ns).await;
        let until_cancelled = r#"echo '{"mcp":"status","message":"started"}'; while [ ! -s /var/run/mcp/cancel-requested ]; do sleep 0.2; done"#;
        create_tool(&client, &ns, &queued_tool("held", until_cancelled)).await;
        let first = create_task(&client, &ns, "held", json!({})).await.name_any();
        poll_task(&client, &ns, &first, WAIT, |t| status_message(t) == "started").await;
        let waiting = create_task(&client, &ns, "held", json!({})).await.name_any();
        poll_task(&client, &ns, &waiting, WAIT, |t| status_message(t) == WAITING).await;

        request_cancel(&client, &ns, &waiting).await;
        let done = wait_terminal(&client, &ns, &waiting).await;
        assert_eq!(done.task_status(), TaskStatus::Cancelled, "{:?}", done.status);
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let begun = Instant::now();
        while jobs.get_opt(&waiting).await.expect("get Job").is_some() {
            assert!(begun.elapsed() < WAIT, "the waiting task's Job was not deleted");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        request_cancel(&client, &ns, &first).await;
        let done = wait_terminal(&client, &ns, &first).await;
        assert_eq!(done.task_status(), TaskStatus::Cancelled, "{:?}", done.status);
        cleanup(&client, &ns).await;
    })
    .await;
}
