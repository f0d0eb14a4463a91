//! The operator's tool policy end to end: McpTools whose pod template would borrow the
//! operator's power (its ServiceAccount, privileged, hostPath, hostNetwork) are not Ready; the
//! allow switches let the same templates through; a task of such a tool fails and no Job exists.

mod common;

use common::{start_leader_with, wait_failed};
use k8s_openapi::api::batch::v1::Job;
use kube::{Api, Client};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_harness::operator::{
    BUSYBOX_IMAGE, Operator, WAIT, create_task, create_tool, failure_reason, shell_tool,
    status_message, tool, tool_event, tool_ready, wait_completed, wait_task_event,
};
use mcp_task_operator_harness::{ensure_crds, wait_for, with_temp_ns};
use serde_json::{Value, json};

/// The operator's and the front end's ServiceAccount names, as the chart would pass them.
const FORBIDDEN: &str = "mto-operator,mto-mcp-frontend";
const REFUSED: &str = "TemplateNotAllowed";

/// Tools that break the default policy and the field path each message must name.
fn offending_tools() -> Vec<(McpTool, &'static str)> {
    let with_spec = |name: &str, spec: Value| shell_tool(name, "echo ok", spec);
    vec![
        (
            with_spec(
                "operator-sa",
                json!({"template": {"spec": {"serviceAccountName": "mto-operator"}}}),
            ),
            "spec.template.spec.serviceAccountName \"mto-operator\" is not allowed",
        ),
        (
            with_spec(
                "frontend-sa",
                json!({"template": {"spec": {"serviceAccount": "mto-mcp-frontend"}}}),
            ),
            "spec.template.spec.serviceAccount \"mto-mcp-frontend\" is not allowed",
        ),
        (
            tool(
                "privileged",
                BUSYBOX_IMAGE,
                &["true"],
                json!({}),
                json!({"securityContext": {"privileged": true}}),
            ),
            "spec.template.spec.containers[0].securityContext.privileged is not allowed",
        ),
        (
            with_spec(
                "host-path",
                json!({"template": {"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}}),
            ),
            "spec.template.spec.volumes[0].hostPath is not allowed",
        ),
        (
            with_spec(
                "host-network",
                json!({"template": {"spec": {"hostNetwork": true}}}),
            ),
            "spec.template.spec.hostNetwork is not allowed",
        ),
        // The rest of the Pod Security baseline profile (the old policy let these through).
        (
            with_spec(
                "seccomp-unconfined",
                json!({"template": {"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}}}),
            ),
            "spec.template.spec.securityContext.seccompProfile.type \"Unconfined\" is not allowed",
        ),
        (
            with_spec(
                "unsafe-sysctl",
                json!({"template": {"spec": {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]}}}}),
            ),
            "spec.template.spec.securityContext.sysctls[0].name \"kernel.msgmax\" is not allowed",
        ),
        (
            tool(
                "proc-unmasked",
                BUSYBOX_IMAGE,
                &["true"],
                json!({}),
                json!({"securityContext": {"procMount": "Unmasked"}}),
            ),
            "spec.template.spec.containers[0].securityContext.procMount \"Unmasked\" is not allowed",
        ),
        (
            tool(
                "selinux-type",
                BUSYBOX_IMAGE,
                &["true"],
                json!({}),
                json!({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
            ),
            "spec.template.spec.containers[0].securityContext.seLinuxOptions.type \"spc_t\" is not allowed",
        ),
    ]
}

/// The tools of [`offending_tools`] that the privileged switch permits.
const PRIVILEGED: [&str; 5] = [
    "privileged",
    "seccomp-unconfined",
    "unsafe-sysctl",
    "proc-unmasked",
    "selinux-type",
];

/// Waits until the tool's Ready condition has `status`; returns its reason and message.
async fn wait_ready_status(client: &Client, ns: &str, name: &str, status: &str) -> String {
    let tools: Api<McpTool> = Api::namespaced(client.clone(), ns);
    let want = status.to_owned();
    let has = move |t: Option<&McpTool>| {
        t.and_then(|t| t.status.as_ref()).is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == want)
        })
    };
    let tool = wait_for(&tools, name, has, WAIT).await;
    let status = tool.status.expect("status");
    let c = status.conditions.iter().find(|c| c.type_ == "Ready");
    c.map(|c| format!("{}: {}", c.reason, c.message))
        .unwrap_or_default()
}

#[tokio::test]
async fn tools_that_would_borrow_the_operators_power_are_not_ready() {
    with_temp_ns("policy-tools", |client, ns| async move {
        ensure_crds(&client).await;
        let _operator = start_leader_with(&ns, &[("FORBIDDEN_SERVICE_ACCOUNTS", FORBIDDEN)]).await;

        let plain = shell_tool("plain", "echo ok", json!({}));
        create_tool(&client, &ns, &plain).await;
        let offending = offending_tools();
        for (tool, _) in &offending {
            create_tool(&client, &ns, tool).await;
        }
        let (status, reason, message) = tool_ready(&client, &ns, "plain").await;
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "Valid"),
            "{message}"
        );
        // A tool the policy allows still runs.
        let task = create_task(&client, &ns, "plain", json!({})).await;
        let id = task.metadata.name.clone().expect("name");
        wait_completed(&client, &ns, &id).await;
        for (tool, path) in &offending {
            let name = tool.metadata.name.clone().expect("name");
            let (status, reason, message) = tool_ready(&client, &ns, &name).await;
            assert_eq!(
                (status.as_str(), reason.as_str()),
                ("False", REFUSED),
                "{name}: {message}"
            );
            assert!(message.starts_with(path), "{name}: {message}");
            assert!(
                message.contains("(operator tool policy"),
                "{name}: {message}"
            );
            let (kind, note) = tool_event(&client, &ns, &name, REFUSED).await;
            assert_eq!(
                (kind.as_str(), note.as_str()),
                ("Warning", message.as_str())
            );
        }
    })
    .await;
}

#[tokio::test]
async fn the_allow_switches_let_the_same_templates_through_but_never_the_service_accounts() {
    with_temp_ns("policy-allow", |client, ns| async move {
        ensure_crds(&client).await;
        let _operator = start_leader_with(
            &ns,
            &[
                ("FORBIDDEN_SERVICE_ACCOUNTS", FORBIDDEN),
                ("TOOL_POLICY_ALLOW_PRIVILEGED", "true"),
                ("TOOL_POLICY_ALLOW_HOST_NAMESPACES", "true"),
                ("TOOL_POLICY_ALLOW_HOST_PATH", "true"),
            ],
        )
        .await;
        for (tool, _) in offending_tools() {
            create_tool(&client, &ns, &tool).await;
        }
        for name in PRIVILEGED.into_iter().chain(["host-path", "host-network"]) {
            let (status, reason, message) = tool_ready(&client, &ns, name).await;
            assert_eq!(
                (status.as_str(), reason.as_str()),
                ("True", "Valid"),
                "{name}: {message}"
            );
        }
        for name in ["operator-sa", "frontend-sa"] {
            let (status, reason, message) = tool_ready(&client, &ns, name).await;
            assert_eq!(
                (status.as_str(), reason.as_str()),
                ("False", REFUSED),
                "{name}: {message}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_task_of_a_tool_the_policy_refuses_fails_and_gets_no_job() {
    with_temp_ns("policy-task", |client, ns| async move {
        ensure_crds(&client).await;
        // Validated Ready under a looser policy...
        let mut loose = Operator::start(
            &ns,
            &format!("{ns}-loose"),
            "operator-loose",
            &[("TOOL_POLICY_ALLOW_PRIVILEGED", "true")],
        )
        .await;
        loose.wait_leading().await;
        let (privileged, path) = offending_tools().swap_remove(2);
        create_tool(&client, &ns, &privileged).await;
        assert_eq!(tool_ready(&client, &ns, "privileged").await.0, "True");
        loose.kill().await;
        drop(loose);

        // ...then the policy tightens: whatever the tool's Ready says when the task is
        // reconciled, the Job is checked as built.
        let operator = Operator::start(&ns, &format!("{ns}-strict"), "operator-strict", &[]).await;
        operator.wait_leading().await;
        let task = create_task(&client, &ns, "privileged", json!({})).await;
        let id = task.metadata.name.clone().expect("name");
        let done = wait_failed(&client, &ns, &id).await;
        assert_eq!(failure_reason(&done), REFUSED, "{:?}", done.status);
        let message = status_message(&done);
        assert!(message.contains(path), "{message}");
        let detail = done
            .status
            .as_ref()
            .and_then(|s| s.error.as_ref())
            .and_then(|e| e.data.as_ref())
            .and_then(|d| d["detail"].as_str().map(str::to_owned))
            .unwrap_or_default();
        assert!(detail.starts_with(path), "{detail}");
        assert!(done.status.as_ref().is_some_and(|s| s.job_name.is_none()));
        let events = wait_task_event(&client, &ns, &id, "Failed").await;
        assert!(
            events
                .iter()
                .any(|e| e.reason == "Failed" && e.type_ == "Warning" && e.message.contains(path)),
            "{events:#?}"
        );
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let job = jobs.get_opt(&id).await.expect("read the task's Job");
        assert!(job.is_none(), "a Job was created: {job:?}");
        let all = jobs.list(&Default::default()).await.expect("list Jobs");
        assert!(all.items.is_empty(), "Jobs exist: {:?}", all.items);

        // The tool itself is marked too, once the strict operator has looked at it.
        let why = wait_ready_status(&client, &ns, "privileged", "False").await;
        assert!(why.starts_with(REFUSED), "{why}");
    })
    .await;
}
