//! The chart's admission policies on a real cluster (issue 36): someone with `edit` in a tool
//! namespace can read a task's Job, so they can copy its UID into an owner reference of their
//! own. Before the policies, a pod of theirs claiming the Job as its controller, created as soon
//! as the Job existed, was read as the task's pod: the task completed with the forged result
//! (this test, with `admissionPolicy.enabled=false`). With them, only the Job controller makes
//! such pods and only the operator makes Jobs for McpTasks, and the task keeps its own result.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::prepare_examples;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::JOB_NAME_LABEL;
use mcp_task_operator_harness::access::impersonating;
use mcp_task_operator_harness::callers::service_account;
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, WAIT, create_task, create_tool, result_text, shell_tool, status_message,
    wait_completed, wait_terminal,
};
use mcp_task_operator_harness::stack::{Release, install};
use mcp_task_operator_harness::{TEST_FIELD_MANAGER, with_temp_ns};
use serde_json::{Value, json};
use tokio::task::block_in_place;

/// The release of these tests: its operator (the chart's, as its own ServiceAccount) and the
/// policies, bound to its namespace; no front end is needed.
const SETS: &[&str] = &[
    "rbac.scope=namespace",
    "operator.replicaCount=1",
    "frontend.replicaCount=0",
];

/// A forged result line, as the tool would print its own.
const FORGED: &str = r#"{"mcp":"result","result":{"content":[{"type":"text","text":"forged"}]}}"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_editor_cannot_make_a_pod_or_job_that_speaks_for_a_task() {
    with_temp_ns("sec-vap", |client, ns| async move {
        prepare_examples(&client).await;
        let _release = Release::new(&ns, "vap");
        block_in_place(|| install(&ns, "vap", SETS));
        let mallory = editor(&client, &ns, "mallory").await;

        let script = r#"sleep 10; printf '%s\n' '{"mcp":"result","result":{"content":[{"type":"text","text":"real"}]}}'"#;
        create_tool(&client, &ns, &shell_tool("slow", script, json!({}))).await;
        let task = create_task(&client, &ns, "slow", json!({})).await;
        let name = task.name_any();
        let job = the_job(&client, &ns, &name).await;

        // As soon as the Job exists, a pod with the labels and the controller reference the
        // Job controller gives its pods (everything copied from the Job, which `edit` may
        // read), printing a forged result at once.
        let uid = job.uid().expect("the Job's UID");
        let mut labels = job
            .spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        for key in [JOB_NAME_LABEL, "job-name"] {
            labels.insert(key.to_owned(), name.clone());
        }
        for key in ["batch.kubernetes.io/controller-uid", "controller-uid"] {
            labels.insert(key.to_owned(), uid.clone());
        }
        let claim = json!([{
            "apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
            "controller": true, "blockOwnerDeletion": true,
        }]);
        let forged = pod("forger", &labels, Some(&claim));
        let pods: Api<Pod> = Api::namespaced(mallory.clone(), &ns);
        let refused = pods.create(&PostParams::default(), &forged).await;
        if refused.is_ok() {
            // What the forger achieved (the old chart): the task's end, for the failure.
            let done = wait_terminal(&client, &ns, &name).await;
            panic!(
                "an editor could create a pod claiming the task's Job; the task then ended {:?}: \
                 {}, result {:?}, error {:?}",
                done.task_status(),
                status_message(&done),
                result_text(&done),
                done.status.as_ref().and_then(|s| s.error.as_ref()),
            );
        }
        assert_refused_by(refused, "task-pods", "create a pod claiming the task's Job");

        // `edit` may create pods: a plain one is admitted, so the refusal is the policy's.
        let plain = pod("plain", &BTreeMap::new(), None);
        pods.create(&PostParams::default(), &plain)
            .await
            .expect("an editor creates a plain pod");
        // ... but may not give it the Job as controller, nor the operator's labels, later.
        let claim_later = json!({"metadata": {"ownerReferences": claim}});
        let refused = pods
            .patch("plain", &PatchParams::default(), &Patch::Merge(&claim_later))
            .await;
        assert_refused_by(refused, "task-pods", "make a plain pod claim the task's Job");
        let label_later = json!({"metadata": {"labels": {"mcptasks.io/task": task.task_id()}}});
        let refused = pods
            .patch("plain", &PatchParams::default(), &Patch::Merge(&label_later))
            .await;
        assert_refused_by(refused, "task-pods", "label a plain pod as the task's");
        // Labels that are not the operator's are the editor's to change.
        let own_label = json!({"metadata": {"labels": {"team": "search"}}});
        pods.patch("plain", &PatchParams::default(), &Patch::Merge(&own_label))
            .await
            .expect("an editor labels a plain pod");

        // A Job for the task (the McpTask as owner) or with the operator's labels.
        let jobs: Api<Job> = Api::namespaced(mallory.clone(), &ns);
        let owned_by_task = json!([{
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask", "name": name,
            "uid": task.uid().expect("the task's UID"), "controller": true,
        }]);
        let refused = jobs
            .create(
                &PostParams::default(),
                &job_of("forged-job", &BTreeMap::new(), Some(&owned_by_task)),
            )
            .await;
        assert_refused_by(refused, "task-jobs", "create a Job owned by the McpTask");
        let labels = BTreeMap::from([("mcptasks.io/task".to_owned(), task.task_id().to_owned())]);
        let refused = jobs
            .create(&PostParams::default(), &job_of("labelled-job", &labels, None))
            .await;
        assert_refused_by(refused, "task-jobs", "create a Job with the task's label");
        jobs.create(
            &PostParams::default(),
            &job_of("plain-job", &BTreeMap::new(), None),
        )
        .await
        .expect("an editor creates a plain Job");

        // The operator's own Job ran, and the task has its tool's result.
        let done = wait_completed(&client, &ns, &name).await;
        assert_eq!(result_text(&done), "real");
    })
    .await;
}

/// ServiceAccount `name` of `ns` bound to the `edit` ClusterRole there (what a team member of
/// a tool namespace typically holds), and a client acting as it.
async fn editor(client: &Client, ns: &str, name: &str) -> Client {
    service_account(client, ns, name).await;
    let binding = RoleBinding {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{name}-edit")),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: "edit".to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: name.to_owned(),
            namespace: Some(ns.to_owned()),
            ..Default::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .patch(
            &format!("{name}-edit"),
            &PatchParams::apply(TEST_FIELD_MANAGER),
            &Patch::Apply(&binding),
        )
        .await
        .expect("bind edit");
    impersonating(ns, name).await
}

/// Task `name`'s Job, as soon as the operator has created it.
async fn the_job(client: &Client, ns: &str, name: &str) -> Job {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let started = Instant::now();
    loop {
        if let Some(job) = jobs.get_opt(name).await.expect("read the task's Job") {
            return job;
        }
        assert!(
            started.elapsed() < WAIT,
            "the operator never created the task's Job"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A busybox pod `name` printing [`FORGED`], with `labels` and `owners`.
fn pod(name: &str, labels: &BTreeMap<String, String>, owners: Option<&Value>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "ownerReferences": owners},
        "spec": pod_spec(),
    }))
    .expect("a Pod")
}

/// A Job `name` of the same pod, with `labels` and `owners`.
fn job_of(name: &str, labels: &BTreeMap<String, String>, owners: Option<&Value>) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "ownerReferences": owners},
        "spec": {"backoffLimit": 0, "template": {"spec": pod_spec()}},
    }))
    .expect("a Job")
}

fn pod_spec() -> Value {
    json!({
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "tool", "image": BUSYBOX_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", format!("printf '%s\\n' '{FORGED}'; sleep 30")]}],
    })
}

/// Asserts that `what` was refused by the release's admission policy `<…>-<policy>`, with a
/// message that names the policy (and not by RBAC, which would say `forbidden: User … cannot`).
fn assert_refused_by<T: std::fmt::Debug>(answer: kube::Result<T>, policy: &str, what: &str) {
    match answer {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{what}: {status:?}");
            assert!(
                status.message.contains("ValidatingAdmissionPolicy")
                    && status.message.contains(policy),
                "{what} was refused, but not by the {policy} policy: {}",
                status.message
            );
        }
        Err(other) => panic!("{what} failed, but not by admission: {other}"),
        Ok(_) => panic!("an editor could {what}"),
    }
}
