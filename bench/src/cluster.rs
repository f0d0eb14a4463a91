//! What the harness reads from the cluster and from processes: the API server's request
//! counters, resident memory from `/proc`, and terminal McpTasks made in bulk.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::{McpTask, task_id};
use serde_json::json;

/// Field manager of every status the harness writes.
pub const BENCH_FIELD_MANAGER: &str = "mto-bench";
/// Owner of tasks the harness makes for the front end with `AUTH_MODE=none`.
pub const ANONYMOUS: &str = "system:anonymous";
/// The text result of every terminal task the harness makes.
pub const RESULT_TEXT: &str = "restocked 64 SKUs";

/// Sum of `apiserver_request_total` over the series whose labels include every `key="value"`
/// pair in `labels`, from the API server's `/metrics` (read with the cluster's kubectl).
pub fn apiserver_requests(labels: &[(&str, &str)]) -> Result<f64, String> {
    let out = mcp_task_operator_harness::kubectl(&["get", "--raw", "/metrics"]);
    if !out.status.success() {
        return Err(format!(
            "kubectl get --raw /metrics failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(sum_counter(
        &String::from_utf8_lossy(&out.stdout),
        "apiserver_request_total",
        labels,
    ))
}

/// Sum of the samples of `metric` (Prometheus text format) whose labels include `labels`.
pub fn sum_counter(text: &str, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let prefix = format!("{metric}{{");
    text.lines()
        .filter(|line| line.starts_with(&prefix) || line.starts_with(&format!("{metric} ")))
        .filter(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Resident memory (`VmRSS`) and its peak (`VmHWM`) of process `pid`, in MiB.
pub fn resident_mib(pid: u32) -> Result<(f64, f64), String> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
            .map(|kib| kib / 1024.0)
            .ok_or_else(|| format!("{path} has no {name}"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// An McpTask of `tool` owned by `owner`, named by a fresh task ID, with a one-hour TTL.
pub fn task_manifest(tool: &str, owner: &str) -> McpTask {
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "metadata": {"name": task_id::generate()},
        "spec": {"tool": tool, "owner": owner, "arguments": {}, "ttlMs": 3_600_000},
    }))
    .expect("task manifest is an McpTask")
}

/// Creates a task of `tool` owned by [`ANONYMOUS`] and makes it `completed` at once (status
/// subresource, as the operator would), so no operator ever starts a Job for it.
pub async fn create_completed_task(api: &Api<McpTask>, tool: &str) -> Result<String, String> {
    create_completed_task_as(api, tool, ANONYMOUS, RESULT_TEXT).await
}

/// [`create_completed_task`] owned by `owner`, with `text` as its result's text.
pub async fn create_completed_task_as(
    api: &Api<McpTask>,
    tool: &str,
    owner: &str,
    text: &str,
) -> Result<String, String> {
    create_completed_task_with(api, task_manifest(tool, owner), text).await
}

/// Creates `task` and makes it `completed` at once with a text result `text`, as
/// [`create_completed_task_as`] does.
pub async fn create_completed_task_with(
    api: &Api<McpTask>,
    task: McpTask,
    text: &str,
) -> Result<String, String> {
    let params = PostParams {
        field_manager: Some(BENCH_FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let created = api
        .create(&params, &task)
        .await
        .map_err(|e| format!("cannot create McpTask: {e}"))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let now = Timestamp::now();
    let expires = now
        .checked_add(SignedDuration::from_hours(1))
        .unwrap_or(now);
    let status = json!({
        "apiVersion": "mcptasks.io/v1alpha1",
        "kind": "McpTask",
        "status": {
            "status": "completed",
            "createdAt": now.to_string(),
            "lastUpdatedAt": now.to_string(),
            "expiresAt": expires.to_string(),
            "result": {"content": [{"type": "text", "text": text}], "isError": false},
            "observedGeneration": created.metadata.generation,
        },
    });
    api.patch_status(
        &name,
        &PatchParams::apply(BENCH_FIELD_MANAGER).force(),
        &Patch::Apply(&status),
    )
    .await
    .map_err(|e| format!("cannot complete McpTask {name}: {e}"))?;
    Ok(name)
}

/// Makes `count` completed tasks of `tool` in `ns`, `concurrency` at a time; returns their IDs.
pub async fn create_completed_tasks(
    client: &Client,
    ns: &str,
    tool: &str,
    count: usize,
    concurrency: usize,
) -> Result<Vec<String>, String> {
    let api: Api<McpTask> = Api::namespaced(client.clone(), ns);
    futures::stream::iter(0..count)
        .map(|_| create_completed_task(&api, tool))
        .buffer_unordered(concurrency)
        .try_collect()
        .await
}

/// How many objects each field manager has written to, over every task in `ns` (from
/// `managedFields`): shows whether anyone but the harness touched them.
pub async fn task_writers(client: &Client, ns: &str) -> Result<BTreeMap<String, usize>, String> {
    let api: Api<McpTask> = Api::namespaced(client.clone(), ns);
    let list = api
        .list(&Default::default())
        .await
        .map_err(|e| format!("cannot list McpTasks in {ns}: {e}"))?;
    let mut writers = BTreeMap::new();
    for task in list {
        for entry in task.metadata.managed_fields.unwrap_or_default() {
            *writers
                .entry(entry.manager.unwrap_or_default())
                .or_default() += 1;
        }
    }
    Ok(writers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_summed_over_matching_series() {
        let text = "\
# HELP apiserver_request_total x
apiserver_request_total{code=\"200\",resource=\"mcptasks\",verb=\"GET\"} 3
apiserver_request_total{code=\"404\",resource=\"mcptasks\",verb=\"GET\"} 2
apiserver_request_total{code=\"200\",resource=\"mcptasks\",verb=\"LIST\"} 7
apiserver_request_total_other{resource=\"mcptasks\",verb=\"GET\"} 100
";
        let get = [("resource", "mcptasks"), ("verb", "GET")];
        assert_eq!(sum_counter(text, "apiserver_request_total", &get), 5.0);
        assert_eq!(sum_counter(text, "apiserver_request_total", &[]), 12.0);
    }

    #[test]
    fn own_process_memory_is_readable() {
        let (rss, peak) = resident_mib(std::process::id()).expect("own /proc status");
        assert!(rss > 0.0 && peak >= rss);
    }
}
