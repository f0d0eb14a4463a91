//! Warm pools (`McpTool.spec.warmPool`) as the tests see them: the pods of a tool's pool.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client};
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;

use crate::operator::WAIT;

/// Whether `pod` is ready (for a pool pod: it waits for a claim).
pub fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Waits until a pod of the pool of the McpTool `tool` in `ns` is ready: its launcher (for a
/// bridged server: once the server answered `initialize`) waits for a claim.
pub async fn wait_ready_pod(client: &Client, ns: &str, tool: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("{WARM_POOL_LABEL}={tool}");
    let begun = Instant::now();
    loop {
        let list = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap_or_else(|e| panic!("cannot list the pool pods of {tool}: {e}"));
        if list.items.iter().any(is_ready) {
            return;
        }
        assert!(begun.elapsed() < WAIT, "no ready pod of the pool of {tool}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
