//! The discovery Job: the server run once with the bridge's `--list`, and its outcome read
//! from the log of the pod the Job controls (the last contract message: the tool list, or the
//! bridge's error).

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use kube::ResourceExt;
use kube::api::{Api, ListParams, LogParams};
use mcp_task_operator_crds::McpServer;
use mcp_task_operator_crds::mcp_server::Discovery;
use serde_json::Value;

use super::offer::{SERVER_LABEL, owner};
use super::reconcile::cut;
use crate::context::Context;
use crate::error::{Error, KubeOp, Result};

/// Most log bytes read from a discovery (a long tool list with schemas fits easily).
const MAX_DISCOVERY_LOG_BYTES: i64 = 4 * 1024 * 1024;

/// Where discovery stands.
pub enum Found {
    /// Still running.
    Running,
    /// The server's tools.
    Tools(Discovery),
    /// Discovery failed: why.
    Failed(String),
}

/// The discovery Job's outcome, from its pod's tool container and log.
pub async fn discovery_result(ctx: &Context, namespace: &str, job: &Job) -> Result<Found> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = format!(
        "{}={}",
        mcp_task_operator_crds::JOB_NAME_LABEL,
        job.name_any()
    );
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| Error::kube(KubeOp::List, "Pod", job.name_any(), e))?;
    let job_uid = job.uid().unwrap_or_default();
    let pod = listed.items.into_iter().find(|p| {
        p.owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == job_uid)
    });
    let terminated = pod.as_ref().and_then(|p| {
        p.status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .iter()
            .find(|c| c.name == "tool")?
            .state
            .as_ref()?
            .terminated
            .clone()
    });
    if terminated.is_none() {
        let failed = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.type_ == "Failed" && c.status == "True")
                    .map(|c| c.message.clone().unwrap_or_default())
            });
        return Ok(match failed {
            Some(message) => Found::Failed(cut(&format!("The discovery Job failed: {message}"))),
            None => Found::Running,
        });
    }
    let Some(pod) = pod else {
        return Ok(Found::Running);
    };
    let params = LogParams {
        container: Some("tool".into()),
        limit_bytes: Some(MAX_DISCOVERY_LOG_BYTES),
        ..LogParams::default()
    };
    let log = pods
        .logs(&pod.name_any(), &params)
        .await
        .map_err(|e| Error::kube(KubeOp::ReadLogs, "Pod", pod.name_any(), e))?;
    Ok(parse_discovery(&log))
}

/// The last contract message of a discovery log: the tool list, or the bridge's error.
pub fn parse_discovery(log: &str) -> Found {
    let last = log
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|m| m.get("mcp").is_some());
    match last {
        Some(m) if m["mcp"] == "result" => {
            match serde_json::from_value::<Discovery>(m["result"]["structuredContent"].clone()) {
                Ok(discovery) => Found::Tools(discovery),
                Err(e) => Found::Failed(cut(&format!(
                    "The bridge printed a tool list the operator cannot read: {e}"
                ))),
            }
        }
        Some(m) if m["mcp"] == "error" => Found::Failed(cut(m["error"]["message"]
            .as_str()
            .unwrap_or("The bridge reported an error"))),
        _ if log.len() as i64 >= MAX_DISCOVERY_LOG_BYTES => Found::Failed(format!(
            "The discovery printed more than {} MiB, the most the operator reads, and no tool \
             list within it",
            MAX_DISCOVERY_LOG_BYTES / (1024 * 1024)
        )),
        _ => {
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            Found::Failed(cut(&format!(
                "The discovery printed no tool list; its last lines: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )))
        }
    }
}

/// The Job that runs the server once with `--list`, owned by the server.
pub fn discovery_job(server: &McpServer, name: &str, mut template: PodTemplateSpec) -> Job {
    if let Some(pod) = template.spec.as_mut() {
        pod.restart_policy = Some("Never".into());
        if pod.automount_service_account_token.is_none() {
            pod.automount_service_account_token = Some(false);
        }
    }
    let mut job = Job {
        spec: Some(JobSpec {
            template,
            backoff_limit: Some(0),
            active_deadline_seconds: Some(server.spec.discovery_timeout_seconds),
            ttl_seconds_after_finished: Some(3600),
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    job.metadata.name = Some(name.to_owned());
    job.metadata.namespace = server.namespace();
    job.metadata.labels = Some([(SERVER_LABEL.to_owned(), server.name_any())].into());
    job.metadata.owner_references = Some(vec![owner(server)]);
    job
}

/// `<server>-discover-<generation>`, at most 63 characters (a Job's pods get a label with its
/// name). A successful discovery deletes its Job, so a rerun (an offered McpTool went missing)
/// reuses the name.
pub fn discovery_job_name(server: &str, generation: i64) -> String {
    let suffix = format!("-discover-{generation}");
    let keep = 63 - suffix.len();
    let mut base: String = server.chars().take(keep).collect();
    while base.ends_with('-') {
        base.pop();
    }
    format!("{base}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_message_of_the_log_decides() {
        let log = "mcp-bridge: server x speaks MCP 2025-11-25\n\
                   {\"mcp\":\"result\",\"result\":{\"content\":[],\"structuredContent\":{\"protocolVersion\":\"2025-11-25\",\"serverInfo\":{\"name\":\"x\"},\"tools\":[{\"name\":\"t\"}]}}}\n";
        match parse_discovery(log) {
            Found::Tools(d) => assert_eq!(d.tools[0]["name"], "t"),
            _ => panic!("tools"),
        }
        let failed = "{\"mcp\":\"error\",\"error\":{\"code\":-32603,\"message\":\"The MCP server exited (exit status: 1) before answering initialize\"}}";
        match parse_discovery(failed) {
            Found::Failed(why) => assert!(why.contains("before answering initialize")),
            _ => panic!("failed"),
        }
        match parse_discovery("boom\nno such file\n") {
            Found::Failed(why) => assert!(why.ends_with("boom | no such file"), "{why}"),
            _ => panic!("failed"),
        }
        let flood = "x".repeat(MAX_DISCOVERY_LOG_BYTES as usize);
        match parse_discovery(&flood) {
            Found::Failed(why) => assert!(why.contains("more than 4 MiB"), "{why}"),
            _ => panic!("failed"),
        }
    }

    #[test]
    fn job_names_fit_a_label_value() {
        assert_eq!(discovery_job_name("time", 3), "time-discover-3");
        let long = discovery_job_name(&"s".repeat(80), 12);
        assert_eq!(long.len(), 63);
        assert!(long.ends_with("-discover-12"));
    }
}
