//! What an `McpServer` may not do, run by the real operator: take over an McpTool or a Job it
//! did not create (another user's object of the same name), read a discovery Job it does not
//! control (its log could forge the tool list), or let its image make the operator store an
//! unbounded number or size of McpTools (docs/SECURITY.md, "Tool authors").

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use mcp_task_operator_crds::{McpServer, McpTool};
use mcp_task_operator_harness::mcp_servers::{
    DISCOVERY_WAIT, apply_ready, container_security, ensure_rust_mcp_server_image, pod_security,
    rust_server, start_operator,
};
use mcp_task_operator_harness::operator::{BUSYBOX_IMAGE, Operator, create_tool, shell_tool};
use mcp_task_operator_harness::{ensure_crds, kubectl_ok, with_temp_ns};
use serde_json::{Value, json};
use tokio::task::block_in_place;

async fn start(client: &Client, ns: &str) -> Operator {
    ensure_crds(client).await;
    block_in_place(|| ensure_rust_mcp_server_image(env!("CARGO_BIN_EXE_rust-mcp-server")));
    start_operator(ns).await
}

/// Creates the McpServer `server` in `ns` and waits until its discovery has an outcome
/// (`Ready` with a reason other than `Discovering`).
async fn create_settled(client: &Client, ns: &str, server: Value) -> McpServer {
    let servers: Api<McpServer> = Api::namespaced(client.clone(), ns);
    let server: McpServer = serde_json::from_value(server).expect("an McpServer");
    let name = server.name_any();
    servers
        .create(&PostParams::default(), &server)
        .await
        .expect("create the McpServer");
    settled(&servers, &name).await
}

async fn settled(servers: &Api<McpServer>, name: &str) -> McpServer {
    let done =
        |s: Option<&McpServer>| ready(s).is_some_and(|(_, reason, _)| reason != "Discovering");
    poll(servers, name, done).await
}

/// Reads the McpServer `name` every 500 ms until `done` holds, for at most [`DISCOVERY_WAIT`]
/// (reads, not a watch: under load the API server may expire a watch's resourceVersion).
async fn poll(
    servers: &Api<McpServer>,
    name: &str,
    done: impl Fn(Option<&McpServer>) -> bool,
) -> McpServer {
    let started = std::time::Instant::now();
    loop {
        let server = servers.get_opt(name).await.expect("read the McpServer");
        if done(server.as_ref()) {
            return server.expect("the McpServer exists");
        }
        assert!(
            started.elapsed() < DISCOVERY_WAIT,
            "McpServer {name} never got there: {server:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The server's `Ready` condition: status, reason, message.
fn ready(server: Option<&McpServer>) -> Option<(String, String, String)> {
    let status = server?.status.as_ref()?;
    let c = status.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// The McpTools the operator made for `server` (by their label).
async fn tools_of(client: &Client, ns: &str, server: &str) -> Vec<String> {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("mcptasks.io/server={server}"));
    tools
        .list(&params)
        .await
        .expect("list McpTools")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_the_server_did_not_create_is_left_alone_and_reported() {
    with_temp_ns("mcp-server-foreign-tool", |client, ns| async move {
        let _operator = start(&client, &ns).await;
        // Someone else's McpTools: one named as the server's `work` would be, one carrying the
        // server's label without being offered by it.
        let theirs = shell_tool("srv-work", "echo theirs", json!({"name": "theirs_work"}));
        create_tool(&client, &ns, &theirs).await;
        let mut decoy = shell_tool("srv-decoy", "echo decoy", json!({"name": "decoy"}));
        decoy
            .labels_mut()
            .insert("mcptasks.io/server".into(), "srv".into());
        create_tool(&client, &ns, &decoy).await;

        let server = apply_ready(&client, &ns, rust_server("srv", &[])).await;
        let status = server.status.expect("status");
        let offered: Vec<&str> = status.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["write-file"], "{status:?}");
        let skipped = status
            .skipped
            .iter()
            .find(|s| s.name == "work")
            .expect("work is reported");
        assert_eq!(
            skipped.reason,
            "McpTool srv-work exists and is not owned by this server"
        );

        let tools: Api<McpTool> = Api::namespaced(client.clone(), &ns);
        let work = tools
            .get("srv-work")
            .await
            .expect("their McpTool is still there");
        assert_eq!(
            work.spec.name.as_deref(),
            Some("theirs_work"),
            "{:?}",
            work.spec
        );
        assert!(
            work.owner_references().is_empty(),
            "{:?}",
            work.metadata.owner_references
        );
        // The McpTool controller writes every McpTool's status; nothing else of it is ours.
        let spec_managers: Vec<_> = work
            .managed_fields()
            .iter()
            .filter(|m| m.subresource.as_deref() != Some("status"))
            .filter_map(|m| m.manager.clone())
            .collect();
        assert!(
            !spec_managers.iter().any(|m| m == "mcp-task-operator"),
            "{spec_managers:?}"
        );
        tools
            .get("srv-decoy")
            .await
            .expect("the labelled McpTool it does not own is not deleted");
        let mine = tools
            .get("srv-write-file")
            .await
            .expect("the offered McpTool");
        let server_uid = server.metadata.uid.expect("uid");
        assert_eq!(mine.owner_references()[0].uid, server_uid);

        // Once their McpTool is gone, the server offers `work` under that name as its own.
        tools
            .delete("srv-work", &DeleteParams::default())
            .await
            .expect("delete their McpTool");
        let servers: Api<McpServer> = Api::namespaced(client.clone(), &ns);
        let offers_work = |s: Option<&McpServer>| {
            s.and_then(|s| s.status.as_ref()).is_some_and(|st| {
                st.skipped.is_empty() && st.tools.iter().any(|t| t.name == "work")
            }) && ready(s).is_some_and(|(status, _, _)| status == "True")
        };
        poll(&servers, "srv", offers_work).await;
        let work = tools.get("srv-work").await.expect("the server's McpTool");
        assert_eq!(work.owner_references()[0].uid, server_uid);
        assert_eq!(work.spec.name.as_deref(), Some("work"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_named_like_the_discovery_but_not_the_servers_is_never_read_nor_deleted() {
    with_temp_ns("mcp-server-foreign-job", |client, ns| async move {
        let _operator = start(&client, &ns).await;
        // A namespace user's Job, named as the server's first discovery, printing a forged list.
        let forged = json!({"mcp": "result", "result": {"content": [], "structuredContent": {
            "protocolVersion": "2025-11-25", "serverInfo": {"name": "forged"},
            "tools": [{"name": "evil", "inputSchema": {"type": "object"}}]}}});
        let job: Job = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "srv-discover-1", "labels": {"mcptasks.io/server": "srv"}},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "automountServiceAccountToken": false,
                "securityContext": pod_security(),
                "containers": [{"name": "tool", "image": BUSYBOX_IMAGE, "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", format!("echo '{forged}'")],
                    "securityContext": container_security()}],
            }}},
        }))
        .expect("a Job");
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let job = jobs.create(&PostParams::default(), &job).await.expect("create the Job");
        block_in_place(|| {
            kubectl_ok(&["wait", "-n", &ns, "--for=condition=complete", "job/srv-discover-1", "--timeout=120s"]);
        });

        let server = create_settled(&client, &ns, rust_server("srv", &[])).await;
        let (status, reason, message) = ready(Some(&server)).expect("Ready");
        assert_eq!((status.as_str(), reason.as_str()), ("False", "DiscoveryJobNotOwned"), "{message}");
        assert!(message.contains("Job srv-discover-1 exists and is not owned by this server"), "{message}");
        assert!(tools_of(&client, &ns, "srv").await.is_empty());
        let kept = jobs.get("srv-discover-1").await.expect("their Job is not deleted");
        assert_eq!(kept.uid(), job.uid());

        // Once their Job is gone, the server's own discovery runs.
        jobs.delete("srv-discover-1", &DeleteParams::background()).await.expect("delete their Job");
        let servers: Api<McpServer> = Api::namespaced(client.clone(), &ns);
        let ready_now = |s: Option<&McpServer>| ready(s).is_some_and(|(status, _, _)| status == "True");
        let server = poll(&servers, "srv", ready_now).await;
        let names: Vec<String> = server.status.expect("status").tools.into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["work", "write-file"]);
        let mut made = tools_of(&client, &ns, "srv").await;
        made.sort();
        assert_eq!(made, ["srv-work", "srv-write-file"]);
    })
    .await;
}

/// Every version of McpServer `name` a watch sees: resourceVersion → the Ready reason.
fn record_versions(api: Api<McpServer>, name: &str) -> Arc<Mutex<BTreeMap<String, String>>> {
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let record = seen.clone();
    tokio::spawn(async move {
        let mut stream = watcher(api, config).applied_objects().boxed();
        while let Some(Ok(server)) = stream.next().await {
            let reason = ready(Some(&server))
                .map(|(_, reason, _)| reason)
                .unwrap_or_default();
            let version = server.resource_version().unwrap_or_default();
            record.lock().expect("not poisoned").insert(version, reason);
        }
    });
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_cannot_make_the_operator_store_unbounded_tools() {
    with_temp_ns("mcp-server-limits", |client, ns| async move {
        // The chart's defaults: 256 tools, 64 KiB per tool, 2 MiB per server.
        let _operator = start(&client, &ns).await;
        let servers: Api<McpServer> = Api::namespaced(client.clone(), &ns);
        let wide_versions = record_versions(servers.clone(), "wide");
        let bulky_versions = record_versions(servers.clone(), "bulky");

        // One tool of 100,000 bytes is left out; the others are offered.
        let heavy = rust_server(
            "heavy",
            &[
                ("RUST_MCP_SERVER_EXTRA_TOOLS", "1"),
                ("RUST_MCP_SERVER_EXTRA_SCHEMA_BYTES", "100000"),
            ],
        );
        let heavy = apply_ready(&client, &ns, heavy)
            .await
            .status
            .expect("status");
        let offered: Vec<&str> = heavy.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["work", "write-file"], "{heavy:?}");
        let skipped = heavy
            .skipped
            .iter()
            .find(|s| s.name == "extra-00000")
            .expect("reported");
        assert!(
            skipped.reason.contains("over the limit of 65536"),
            "{}",
            skipped.reason
        );

        // 2,002 tools: refused as a whole, nothing made, one status write.
        let wide = create_settled(
            &client,
            &ns,
            rust_server("wide", &[("RUST_MCP_SERVER_EXTRA_TOOLS", "2000")]),
        )
        .await;
        let (status, reason, message) = ready(Some(&wide)).expect("Ready");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "TooManyTools"),
            "{message}"
        );
        assert!(
            message.contains("2002 tools") && message.contains("limit of 256"),
            "{message}"
        );
        assert!(tools_of(&client, &ns, "wide").await.is_empty());

        // 60 tools of 40,000 bytes each fit one by one, not together.
        let bulky_env = [
            ("RUST_MCP_SERVER_EXTRA_TOOLS", "60"),
            ("RUST_MCP_SERVER_EXTRA_SCHEMA_BYTES", "40000"),
        ];
        let bulky = create_settled(&client, &ns, rust_server("bulky", &bulky_env)).await;
        let (status, reason, message) = ready(Some(&bulky)).expect("Ready");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "ToolsTooLarge"),
            "{message}"
        );
        assert!(message.contains("limit of 2097152 bytes"), "{message}");
        assert!(tools_of(&client, &ns, "bulky").await.is_empty());

        // No retry loop: nothing more is written, and no discovery runs again.
        tokio::time::sleep(Duration::from_secs(20)).await;
        for (name, seen, reason) in [
            ("wide", &wide_versions, "TooManyTools"),
            ("bulky", &bulky_versions, "ToolsTooLarge"),
        ] {
            let now = servers.get(name).await.expect("server");
            let before = if name == "wide" { &wide } else { &bulky };
            assert_eq!(
                now.resource_version(),
                before.resource_version(),
                "{name} was written again"
            );
            let refused = seen
                .lock()
                .expect("not poisoned")
                .values()
                .filter(|r| *r == reason)
                .count();
            assert_eq!(
                refused,
                1,
                "{name}: {:?}",
                seen.lock().expect("not poisoned")
            );
        }
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let left = jobs
            .list(&ListParams::default().labels("mcptasks.io/server"))
            .await
            .expect("jobs");
        let live: Vec<String> = left
            .items
            .iter()
            .filter(|j| j.metadata.deletion_timestamp.is_none())
            .map(ResourceExt::name_any)
            .collect();
        assert!(live.is_empty(), "discovery Jobs left: {live:?}");
    })
    .await;
}
