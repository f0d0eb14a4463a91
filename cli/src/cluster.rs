//! What `kubectl mcp` reads from the Kubernetes API with the user's kubeconfig: the task
//! table, one task with its Events, the tool's log, the front end's address and a token for
//! its audience.

use std::fmt::Write as _;

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Event, Pod, Service, ServiceAccount};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, LogParams, PostParams};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::mcp_tool::TOOL_CONTAINER_NAME;
use mcp_task_operator_crds::{JOB_NAME_LABEL, McpTask, RawJson};
use serde_json::Value;

use crate::Error;
use crate::service::{self, FRONTEND_SELECTOR};
use crate::term::{self, inert, inert_line};

/// Widest status message shown in the task table.
const MESSAGE_WIDTH: usize = 48;

/// A Kubernetes client and the namespace to work in.
pub struct Cluster {
    pub client: Client,
    pub namespace: String,
}

impl Cluster {
    /// The kubeconfig's current context; `namespace` overrides its namespace.
    pub async fn connect(namespace: Option<String>) -> Result<Self, Error> {
        let config = kube::Config::infer()
            .await
            .map_err(|e| Error::Kube(format!("no usable kubeconfig: {e}")))?;
        let namespace = namespace.unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config).map_err(|e| Error::Kube(e.to_string()))?;
        Ok(Self { client, namespace })
    }

    /// The front end's Service in the namespace, by the chart's label: its URL at the cluster
    /// IP, the Host to send (its DNS name, which the front end's Host check always allows) and
    /// the token audience it publishes. That address answers only where the cluster network
    /// reaches (a node, a pod, a local cluster); elsewhere pass `--url`.
    /// [`service::pick_frontend`] says which Service, and when none is taken.
    pub async fn frontend(&self, release: Option<&str>) -> Result<service::Frontend, Error> {
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.namespace);
        let list = services
            .list(&ListParams::default().labels(FRONTEND_SELECTOR))
            .await
            .map_err(|e| Error::Kube(format!("cannot list Services: {e}")))?;
        service::pick_frontend(&list.items, &self.namespace, release)
    }

    /// A token of ServiceAccount `account` for `audience`, valid ten minutes.
    pub async fn token(&self, account: &str, audience: &str) -> Result<String, Error> {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &self.namespace);
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: vec![audience.to_owned()],
                expiration_seconds: Some(600),
                ..Default::default()
            },
            ..Default::default()
        };
        let made = accounts
            .create_token_request(account, &PostParams::default(), &request)
            .await
            .map_err(|e| Error::Kube(format!("cannot make a token of {account}: {e}")))?;
        made.status
            .map(|s| s.token)
            .ok_or_else(|| Error::Kube(format!("the token request of {account} has no token")))
    }

    /// The task table, oldest first.
    pub async fn tasks(&self, all_namespaces: bool) -> Result<String, Error> {
        let api: Api<McpTask> = if all_namespaces {
            Api::all(self.client.clone())
        } else {
            Api::namespaced(self.client.clone(), &self.namespace)
        };
        let mut tasks = api
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::Kube(format!("cannot list McpTasks: {e}")))?
            .items;
        tasks.sort_by_key(|t| t.creation_timestamp());
        let now = Timestamp::now();
        let mut rows = vec![
            [
                "NAMESPACE",
                "TASK",
                "TOOL",
                "STATUS",
                "MESSAGE",
                "AGE",
                "OWNER",
            ]
            .map(str::to_owned),
        ];
        for task in &tasks {
            let message = task
                .status
                .as_ref()
                .and_then(|s| s.status_message.clone())
                .unwrap_or_default();
            rows.push([
                task.namespace().unwrap_or_default(),
                task.name_any(),
                task.spec.tool.clone(),
                task.task_status().as_str().to_owned(),
                cut(&message, MESSAGE_WIDTH),
                task.created_at().map(|t| age(now, t)).unwrap_or_default(),
                task.spec.owner.clone(),
            ]);
        }
        let skip = usize::from(!all_namespaces);
        Ok(table(&rows, skip))
    }

    /// One task as `kubectl describe` would show it, with the tool's result or error and
    /// the task's Events.
    pub async fn describe(&self, id: &str) -> Result<String, Error> {
        let task = self.task(id).await?;
        let status = task.status.clone().unwrap_or_default();
        let mut out = String::new();
        // Every value came from the cluster or a tool: printed inert, on one line but the
        // result's text.
        let mut line = |k: &str, v: &str| {
            let v = if k == "Result:" {
                inert(v)
            } else {
                inert_line(v)
            };
            let _ = writeln!(out, "{k:<16}{v}");
        };
        line("Task:", id);
        line("Namespace:", &self.namespace);
        line("Tool:", &task.spec.tool);
        line("Owner:", &task.spec.owner);
        line("Status:", task.task_status().as_str());
        line("Message:", status.status_message.as_deref().unwrap_or(""));
        let time = |t: Option<Timestamp>| t.map(|t| t.to_string()).unwrap_or_default();
        line("Created:", &time(task.created_at()));
        line("Updated:", &time(task.last_updated_at()));
        line("Expires:", &time(task.expires_at()));
        line("Job:", status.job_name.as_deref().unwrap_or(""));
        let arguments = task.spec.arguments.as_ref().map(RawJson::to_value);
        line("Arguments:", &compact(arguments.as_ref()));
        let outstanding = task.outstanding_input_requests();
        if !outstanding.is_empty() {
            let keys: Vec<&str> = outstanding.keys().copied().collect();
            line("Waiting for:", &keys.join(", "));
        }
        if let Some(result) = status.result {
            line("Result:", &result_text(&result.to_value()));
        }
        if let Some(error) = status.error {
            line("Error:", &format!("{} {}", error.code, error.message));
        }
        let _ = writeln!(out, "Events:");
        for event in self.events(id).await? {
            let _ = writeln!(out, "  {}", inert_line(&event));
        }
        Ok(out)
    }

    /// Prints the tool container's log of task `id`; follows it while it runs when `follow`.
    pub async fn logs(&self, id: &str, follow: bool) -> Result<(), Error> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        // A task's Job is named after it, unless it claimed a warm pod's Job (status.jobName).
        let task = self.task(id).await?;
        let job = task
            .status
            .as_ref()
            .and_then(|s| s.job_name.clone())
            .unwrap_or_else(|| id.to_owned());
        let selector = format!("{JOB_NAME_LABEL}={job}");
        let list = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| Error::Kube(format!("cannot list the pods of task {id}: {e}")))?;
        let Some(pod) = list
            .items
            .into_iter()
            .max_by_key(ResourceExt::creation_timestamp)
        else {
            return Err(Error::Usage(format!(
                "task {id} has no pod (not started yet, or its Job is gone)"
            )));
        };
        let params = LogParams {
            container: Some(TOOL_CONTAINER_NAME.to_owned()),
            follow,
            ..LogParams::default()
        };
        let mut lines = pods
            .log_stream(&pod.name_any(), &params)
            .await
            .map_err(|e| Error::Kube(format!("cannot read the log of {}: {e}", pod.name_any())))?
            .lines();
        while let Some(line) = lines
            .try_next()
            .await
            .map_err(|e| Error::Kube(format!("reading the log: {e}")))?
        {
            term::say(&inert_line(&line));
        }
        Ok(())
    }

    async fn task(&self, id: &str) -> Result<McpTask, Error> {
        let api: Api<McpTask> = Api::namespaced(self.client.clone(), &self.namespace);
        api.get_opt(id)
            .await
            .map_err(|e| Error::Kube(format!("cannot read McpTask {id}: {e}")))?
            .ok_or_else(|| Error::Usage(format!("no task {id} in namespace {}", self.namespace)))
    }

    /// The task's Events, oldest first, one line each.
    async fn events(&self, id: &str) -> Result<Vec<String>, Error> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let selector = format!("involvedObject.kind=McpTask,involvedObject.name={id}");
        let mut events = api
            .list(&ListParams::default().fields(&selector))
            .await
            .map_err(|e| Error::Kube(format!("cannot list the Events of {id}: {e}")))?
            .items;
        let when = |e: &Event| {
            e.event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.first_timestamp.as_ref().map(|t| t.0))
        };
        events.sort_by_key(when);
        Ok(events
            .iter()
            .map(|e| {
                format!(
                    "{:<8}{:<22}{}",
                    e.type_.as_deref().unwrap_or(""),
                    e.reason.as_deref().unwrap_or(""),
                    e.message.as_deref().unwrap_or("")
                )
            })
            .collect())
    }
}

/// The text of an MCP `CallToolResult`: its text content, other content as JSON, and the
/// structured content when there is no text.
pub fn result_text(result: &Value) -> String {
    let mut parts: Vec<String> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| match item["text"].as_str() {
            Some(text) if item["type"] == "text" => text.to_owned(),
            _ => item.to_string(),
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

fn compact(value: Option<&Value>) -> String {
    value.map(Value::to_string).unwrap_or_default()
}

/// `text` cut to `width` characters, with an ellipsis when cut.
fn cut(text: &str, width: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= width {
        return one_line;
    }
    let kept: String = one_line.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// How long ago `then` was, the way kubectl writes ages (`45s`, `12m`, `3h`, `2d`).
fn age(now: Timestamp, then: Timestamp) -> String {
    let seconds = now.duration_since(then).as_secs().max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Rows as aligned columns, leaving out the first `skip` columns; each cell printed inert on
/// one line.
fn table<const N: usize>(rows: &[[String; N]], skip: usize) -> String {
    let rows: Vec<[String; N]> = rows
        .iter()
        .map(|row| row.clone().map(|cell| inert_line(&cell).into_owned()))
        .collect();
    let mut widths = [0; N];
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, cell)| format!("{cell:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(out, "{}", cells.join("   ").trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        let now: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
        let ago = |s: i64| age(now, now - k8s_openapi::jiff::SignedDuration::from_secs(s));
        assert_eq!(ago(5), "5s");
        assert_eq!(ago(600), "10m");
        assert_eq!(ago(3 * 3600), "3h");
        assert_eq!(ago(3 * 86_400), "3d");
    }

    #[test]
    fn the_table_aligns_columns_and_can_leave_the_first_out() {
        let rows = [
            ["NS", "TASK", "STATUS"].map(str::to_owned),
            ["a", "t1", "working"].map(str::to_owned),
            ["bbb", "task-two", "completed"].map(str::to_owned),
        ];
        assert_eq!(
            table(&rows, 1),
            "TASK       STATUS\nt1         working\ntask-two   completed\n"
        );
    }

    #[test]
    fn results_read_as_their_text() {
        let result =
            json!({"content": [{"type": "text", "text": "done"}, {"type": "image", "data": "x"}]});
        assert_eq!(
            result_text(&result),
            "done\n{\"data\":\"x\",\"type\":\"image\"}"
        );
        assert_eq!(
            result_text(&json!({"content": [], "structuredContent": {"n": 1}})),
            "{\"n\":1}"
        );
    }

    #[test]
    fn table_cells_from_the_cluster_are_printed_inert() {
        let rows = [
            ["TOOL", "MESSAGE"].map(str::to_owned),
            [
                "x\u{202e}",
                "\u{1b}[2J\u{1b}]8;;https://evil.example/\u{7}ok\nfaked",
            ]
            .map(str::to_owned),
        ];
        let shown = table(&rows, 0);
        assert!(
            !shown
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}')
        );
        assert!(shown.contains("\\u{1b}[2J\\u{1b}]8;;https://evil.example/\\u{7}ok\\u{a}faked"));
        assert_eq!(shown.lines().count(), 2, "{shown}");
        assert!(shown.contains("x\\u{202e}"));
    }

    #[test]
    fn long_messages_are_cut_on_one_line() {
        assert_eq!(cut("a\nb", 10), "a b");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
    }
}
