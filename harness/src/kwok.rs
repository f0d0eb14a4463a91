//! Fake nodes (KWOK) beside the real one, for tests that need many nodes or a node that dies:
//! starting them through `hack/kwok.sh`, a pod template that lands on them, and a fake node of a
//! test's own that can be lost and restored.
//!
//! A pod on a fake node runs no container: kwok plays its lifecycle (Running, then the
//! containers exit after `kwok.mcptasks.io/run-for`) and serves a scripted log through the API
//! server, `hack/kwok/logs/<container>.log` or `default.log` (docs/local-cluster.md, "Fake nodes
//! (KWOK)").

use std::path::PathBuf;

use serde_json::{Value, json};

/// Label every fake node carries, and that pods select to land on the shared fake nodes.
pub const FAKE_NODE_TYPE_LABEL: &str = "type";
/// The `type` of the shared fake nodes `kwok-node-<i>`.
pub const SHARED_TYPE: &str = "kwok";
/// Key of the NoSchedule taint on every fake node (value `fake`).
pub const FAKE_NODE_TAINT: &str = "kwok.x-k8s.io/node";
/// Pod annotation: how long the fake containers run before they exit (Go duration, default 2s).
pub const RUN_FOR_ANNOTATION: &str = "kwok.mcptasks.io/run-for";
/// Pod annotation: the fake containers' exit code (default 0).
pub const EXIT_CODE_ANNOTATION: &str = "kwok.mcptasks.io/exit-code";
/// How many shared fake nodes [`ensure_fake_nodes`] makes sure of.
pub const SHARED_NODES: usize = 2;
/// Lines of `hack/kwok/logs/default.log`, the log of any fake container without a script of
/// its own, in order: printed 0 s, 1 s and 2 s after the container started.
pub const DEFAULT_LOG: [&str; 3] = [
    r#"{"mcp":"status","message":"kwok: started"}"#,
    r#"{"mcp":"status","message":"kwok: halfway"}"#,
    r#"{"mcp":"result","result":{"content":[{"type":"text","text":"kwok: done"}]}}"#,
];
/// Text of the result in [`DEFAULT_LOG`].
pub const DEFAULT_RESULT_TEXT: &str = "kwok: done";
/// Container name whose script (`hold.log`) prints one status line at once and its result only
/// after an hour: a task of it stays `working`.
pub const HOLD_CONTAINER: &str = "hold";
/// The one line `hold.log` prints within its first hour.
pub const HOLD_LOG_FIRST: &str = r#"{"mcp":"status","message":"kwok: holding"}"#;
/// An image no node has: a pod of it could only run on a fake node.
pub const NO_SUCH_IMAGE: &str = "localhost/kwok-no-such-image:v1";

fn script() -> PathBuf {
    crate::repo_dir().join("hack/kwok.sh")
}

/// Runs `hack/kwok.sh` with `args`; panics with its output when it fails.
pub async fn kwok_sh(args: &[&str]) -> String {
    let out = tokio::process::Command::new(script())
        .args(args)
        .output()
        .await
        .expect("hack/kwok.sh runs");
    assert!(
        out.status.success(),
        "hack/kwok.sh {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes sure kwok runs and the shared fake nodes `kwok-node-1..` are Ready (idempotent; the
/// script serialises parallel callers). `make integration` runs it before the tests too.
pub async fn ensure_fake_nodes() {
    kwok_sh(&["start", &SHARED_NODES.to_string()]).await;
}

/// Adds what sends a pod to a fake node of `node_type` to a pod spec (JSON): the nodeSelector
/// `type=<node_type>` and a toleration of the fake nodes' taint.
pub fn place_on_fake_node(pod_spec: &mut Value, node_type: &str) {
    pod_spec["nodeSelector"][FAKE_NODE_TYPE_LABEL] = json!(node_type);
    let toleration = json!({"key": FAKE_NODE_TAINT, "operator": "Exists", "effect": "NoSchedule"});
    match pod_spec["tolerations"].as_array_mut() {
        Some(list) => list.push(toleration),
        None => pod_spec["tolerations"] = json!([toleration]),
    }
}

/// A pod template (JSON) for the shared fake nodes: one container `container` of
/// [`NO_SUCH_IMAGE`], `restartPolicy: Never`, with `annotations` (say [`RUN_FOR_ANNOTATION`]).
pub fn fake_pod_template(container: &str, annotations: Value) -> Value {
    let mut spec = json!({
        "restartPolicy": "Never",
        "containers": [{"name": container, "image": NO_SUCH_IMAGE}],
    });
    place_on_fake_node(&mut spec, SHARED_TYPE);
    json!({"metadata": {"annotations": annotations}, "spec": spec})
}

/// A fake node of one test's own (`type=<name>`, so only that test's pods land there), removed
/// with its pods when dropped.
pub struct FakeNode {
    /// The node's name, which is also its `type` label.
    pub name: String,
}

impl FakeNode {
    /// Adds the fake node `name` (a DNS label) and waits until it is Ready.
    pub async fn add(name: &str) -> Self {
        kwok_sh(&["add", name, name]).await;
        Self {
            name: name.to_owned(),
        }
    }

    /// The node's kubelet is gone: no more heartbeats or Lease renewals. The node lifecycle
    /// controller marks it `Unknown` and taints it `node.kubernetes.io/unreachable` about 52 s
    /// later, and evicts each pod when its toleration of that taint runs out (300 s by default).
    pub async fn lose(&self) {
        kwok_sh(&["lose", &self.name]).await;
    }

    /// kwok takes the node back; waits until it is Ready.
    pub async fn restore(&self) {
        kwok_sh(&["restore", &self.name]).await;
    }
}

impl Drop for FakeNode {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script())
            .args(["remove", &self.name])
            .output();
    }
}
