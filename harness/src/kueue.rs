//! Real Kueue in the local cluster (`hack/kueue.sh start`, which `make integration` runs): the
//! queues a test needs, made for its namespace alone and removed after it.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use mcp_task_operator_crds::McpTool;
use serde_json::{Value, json};

use crate::operator::{BUSYBOX_IMAGE, tool};

/// The LocalQueue every Kueue test's tools name.
pub const QUEUE: &str = "tasks";
/// A task's status message while its Job waits for [`QUEUE`].
pub const WAITING: &str = "Waiting for admission by queue tasks";

fn api(client: &Client, kind: &str, namespace: Option<&str>) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
    let resource = ApiResource::from_gvk(&gvk);
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Server-side applies a Kueue object of `kind` (its `metadata.name` set in `object`).
pub async fn apply(client: &Client, kind: &str, namespace: Option<&str>, mut object: Value) {
    let name = object["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    object["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
    object["kind"] = json!(kind);
    api(client, kind, namespace)
        .patch(
            &name,
            &PatchParams::apply("mto-tests").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap_or_else(|e| panic!("cannot apply {kind} {name}: {e}"));
}

/// A ResourceFlavor and a ClusterQueue named `ns` with a quota of 100m CPU (one task), for `ns`
/// only, with `preemption` (Kueue's `spec.preemption`, `{}` for none), and the LocalQueue
/// [`QUEUE`] in `ns`. Remove them with [`cleanup`].
pub async fn queues(client: &Client, ns: &str, preemption: Value) {
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
    let quota = json!([
        {"name": "cpu", "nominalQuota": "100m"},
        {"name": "memory", "nominalQuota": "1Gi"},
    ]);
    let spec = json!({
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "preemption": preemption,
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": ns, "resources": quota}],
        }],
    });
    let queue = json!({"metadata": {"name": ns}, "spec": spec});
    apply(client, "ClusterQueue", None, queue).await;
    let local = json!({"metadata": {"name": QUEUE}, "spec": {"clusterQueue": ns}});
    apply(client, "LocalQueue", Some(ns), local).await;
}

/// Deletes the cluster-scoped Kueue object `name` of `kind`, if it exists.
pub async fn delete(client: &Client, kind: &str, name: &str) {
    let _ = api(client, kind, None)
        .delete(name, &DeleteParams::default())
        .await;
}

/// Deletes the cluster-scoped objects [`queues`] made for `ns` (the namespace takes its own).
pub async fn cleanup(client: &Client, ns: &str) {
    delete(client, "ClusterQueue", ns).await;
    delete(client, "ResourceFlavor", ns).await;
}

/// A busybox tool running `script` whose container asks for the whole quota of [`queues`],
/// admitted by [`QUEUE`]; `spec` adds to its spec (`queueName` is set).
pub fn queued_tool(name: &str, script: &str, mut spec: Value) -> McpTool {
    let container = json!({"resources": {
        "requests": {"cpu": "100m", "memory": "16Mi"}, "limits": {"memory": "128Mi"}}});
    spec["queueName"] = json!(QUEUE);
    tool(name, BUSYBOX_IMAGE, &["sh", "-c", script], spec, container)
}

/// Whether `job` is suspended (waiting for admission).
pub fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// Whether `job` has completed.
pub fn complete(job: &Job) -> bool {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| {
        c.iter()
            .any(|c| c.type_ == "Complete" && c.status == "True")
    })
}
