use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{reflector, watcher};
use serde_json::json;

use super::*;

fn pod(name: &str, job: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "tools",
                     "labels": {JOB_NAME_LABEL: job},
                     "managedFields": [{"manager": "kube-controller-manager"}]},
        "spec": {"containers": [{"name": "main", "image": "i",
                                  "env": [{"name": "MCP_ARGUMENTS", "value": "{}"}]}]},
    }))
    .unwrap()
}

#[test]
fn the_pod_index_finds_a_jobs_pods_and_forgets_deleted_ones() {
    let (store, mut writer) = reflector::store::<Pod>();
    let index = PodIndex::default();
    for event in [
        watcher::Event::Apply(pod("a-1", "a")),
        watcher::Event::Apply(pod("a-2", "a")),
        watcher::Event::Apply(pod("b-1", "b")),
    ] {
        index.observe(&event);
        writer.apply_watcher_event(&event);
    }
    let names = |job| -> Vec<String> {
        index
            .pods(&store, "tools", job)
            .iter()
            .map(ResourceExt::name_any)
            .collect()
    };
    assert_eq!(names("a"), ["a-1", "a-2"]);
    assert_eq!(names("b"), ["b-1"]);
    assert!(index.pods(&store, "other", "a").is_empty());
    let gone = watcher::Event::Delete(pod("a-1", "a"));
    index.observe(&gone);
    writer.apply_watcher_event(&gone);
    assert_eq!(names("a"), ["a-2"]);
    // A delete the index missed (a relist): the store decides, and the entry goes.
    writer.apply_watcher_event(&watcher::Event::Delete(pod("b-1", "b")));
    assert!(names("b").is_empty());
    assert_eq!(index.len(), 1);
}

#[test]
fn cached_copies_keep_no_managed_fields_and_no_arguments() {
    let mut p = pod("a-1", "a");
    slim_pod(&mut p);
    assert!(p.metadata.managed_fields.is_none());
    let spec = p.spec.as_ref().unwrap();
    assert!(spec.containers[0].env.is_none());
    assert_eq!(spec.containers[0].name, "main");
}

#[test]
fn slimmed_copies_still_answer_what_their_readers_ask() {
    let mut p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "a"},
        "spec": {"nodeName": "n1", "containers": [
            {"name": "sidecar", "image": "s", "env": [{"name": "A", "value": "1"}]},
            {"name": "tool", "image": "t", "args": ["--x"], "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
            "volumes": [{"name": "v", "emptyDir": {}}]},
        "status": {"containerStatuses": [{"name": "tool", "image": "t", "imageID": "", "ready": true,
            "restartCount": 0, "state": {"running": {}}}]}
    }))
    .unwrap();
    slim_pod(&mut p);
    assert_eq!(
        crate::controller::mcp_task::observe::tool_container_name(&p),
        "tool"
    );
    assert!(crate::controller::mcp_task::observe::tool_container_started(&p));
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("n1"));
    assert!(spec.volumes.is_none() && spec.containers[1].args.is_none());

    let mut j: Job = serde_json::from_value(json!({
        "metadata": {"name": "j", "namespace": "a"},
        "spec": {"suspend": true, "backoffLimit": 2, "template": {
            "metadata": {"annotations": {crate::contract::POD_MESSAGE_NONCE_ANNOTATION: "n0nce"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "tool", "image": "t"}]}}}
    }))
    .unwrap();
    slim_job(&mut j);
    let spec = j.spec.as_ref().unwrap();
    assert!(spec.template.spec.is_none());
    assert_eq!((spec.suspend, spec.backoff_limit), (Some(true), Some(2)));
    assert_eq!(
        crate::controller::mcp_task::nonce::of_job(&j),
        Some("n0nce")
    );
}
