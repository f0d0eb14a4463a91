//! What the warm-start section runs: the busybox tools with and without a pool, mcp-server-time
//! as two McpServers (one with a pool), and what the section reads of a pool (its waiting Jobs
//! and their readiness).

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_crds::warm_pool::WARM_POOL_LABEL;
use mcp_task_operator_harness::mcp_servers::apply_ready;
use mcp_task_operator_harness::operator::{create_tool, shell_tool};
use serde_json::{Value, json};

/// The trivial native tool with a pool (MCP name).
pub const WARM_ECHO: &str = "warm-echo";
/// The same tool without a pool.
pub const COLD_ECHO: &str = "cold-echo";
/// mcp-server-time's `get_current_time` through the McpServer with a pool.
pub const WARM_TIME: &str = "warm_get_current_time";
/// The same through the McpServer without one.
pub const COLD_TIME: &str = "cold_get_current_time";
/// The tool of the load point (a pool, and `maxConcurrentTasks`).
pub const STEADY: &str = "steady";
/// Longest wait for a pool to have a ready waiting pod.
const READY_WAIT: Duration = Duration::from_secs(120);

/// A busybox script that notes the wall-clock time it started (µs, from `adjtimex`: busybox's
/// `date` has no sub-second format), sleeps `sleep_secs` and prints one result line
/// `started at <unix seconds>`.
pub fn script(sleep_secs: u64) -> String {
    let sleep = if sleep_secs == 0 {
        String::new()
    } else {
        format!("sleep {sleep_secs}; ")
    };
    format!(
        r#"t=$(adjtimex | awk '/tv_sec/{{s=$2}} /tv_usec/{{u=$2}} END{{printf "%d.%06d", s, u}}'); {sleep}printf '{{"mcp":"result","result":{{"content":[{{"type":"text","text":"started at %s"}}]}}}}\n' "$t""#
    )
}

/// The trivial tool twice (with and without a pool of one) and the load point's tool (a pool
/// of up to `limit`, at most `limit` tasks at once, each sleeping `sleep_secs`).
pub async fn register_tools(client: &Client, ns: &str, limit: i64, sleep_secs: u64) {
    let trivial = script(0);
    let pool = json!({"warmPool": {"minReady": 1, "maxReady": 1}});
    create_tool(client, ns, &shell_tool(WARM_ECHO, &trivial, pool)).await;
    create_tool(client, ns, &shell_tool(COLD_ECHO, &trivial, json!({}))).await;
    let steady = json!({
        "maxConcurrentTasks": limit,
        "warmPool": {"minReady": 1, "maxReady": limit},
    });
    create_tool(client, ns, &shell_tool(STEADY, &script(sleep_secs), steady)).await;
}

/// mcp-server-time (`examples/mcp-servers/time.yaml`, as section 6 runs it) as the McpServers
/// `time-warm` (tools prefixed `warm_`, a pool of one for each) and `time-cold` (`cold_`, no
/// pool), both Ready.
pub async fn register_servers(client: &Client, ns: &str) -> Result<(), String> {
    let path = mcp_task_operator_harness::repo_dir().join("examples/mcp-servers/time.yaml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let example: Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{} is not YAML: {e}", path.display()))?;
    let variant = |name: &str, prefix: &str, pool: Option<Value>| {
        let mut server = example.clone();
        server["metadata"]["name"] = json!(name);
        server["spec"]["namePrefix"] = json!(prefix);
        if let Some(pool) = pool {
            server["spec"]["warmPool"] = pool;
        }
        server
    };
    let warm = variant(
        "time-warm",
        "warm_",
        Some(json!({"minReady": 1, "maxReady": 1})),
    );
    let cold = variant("time-cold", "cold_", None);
    futures::join!(apply_ready(client, ns, warm), apply_ready(client, ns, cold));
    Ok(())
}

/// The name of the McpTool whose MCP name is `mcp_name`.
pub async fn tool_object(client: &Client, ns: &str, mcp_name: &str) -> Result<String, String> {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let list = tools
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("cannot list McpTools: {e}"))?;
    list.items
        .iter()
        .find(|t| t.mcp_name() == mcp_name)
        .map(ResourceExt::name_any)
        .ok_or_else(|| format!("no McpTool offers {mcp_name}"))
}

/// A pool's waiting Jobs (owned by their McpTool, not being deleted) at one moment.
#[derive(Clone, Debug, Default)]
pub struct PoolState {
    /// Waiting Jobs, started or not.
    pub waiting: Vec<String>,
    /// Of them, those whose pod is ready (waits for a claim).
    pub ready: Vec<String>,
}

/// The waiting Jobs of the pool of McpTool `tool`, and which have a ready pod.
pub async fn pool_state(client: &Client, ns: &str, tool: &str) -> Result<PoolState, String> {
    let selector = format!("{WARM_POOL_LABEL}={tool}");
    let params = ListParams::default().labels(&selector);
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let jobs = jobs
        .list(&params)
        .await
        .map_err(|e| format!("cannot list the pool's Jobs: {e}"))?;
    let pods = pods
        .list(&params)
        .await
        .map_err(|e| format!("cannot list the pool's pods: {e}"))?;
    let waiting: Vec<String> = jobs
        .items
        .iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter(|j| {
            j.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && o.kind == "McpTool")
        })
        .map(ResourceExt::name_any)
        .collect();
    let ready = pods
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .filter_map(|p| p.labels().get("batch.kubernetes.io/job-name").cloned())
        .filter(|job| waiting.contains(job))
        .collect();
    Ok(PoolState { waiting, ready })
}

/// Waits until the pool of McpTool `tool` has a ready waiting pod.
pub async fn wait_ready(client: &Client, ns: &str, tool: &str) -> Result<(), String> {
    let begun = Instant::now();
    while pool_state(client, ns, tool).await?.ready.is_empty() {
        if begun.elapsed() > READY_WAIT {
            return Err(format!(
                "the pool of {tool} had no ready pod in {READY_WAIT:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_prints_one_result_line_with_its_start_time() {
        let sleeping = script(3);
        assert!(sleeping.starts_with("t=$(adjtimex | awk '/tv_sec/{s=$2}"));
        assert!(sleeping.contains("; sleep 3; printf '{\"mcp\":\"result\""));
        assert!(sleeping.ends_with(r#""text":"started at %s"}]}}\n' "$t""#));
        assert!(!script(0).contains("sleep"));
    }
}
