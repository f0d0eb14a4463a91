//! Security checks on the real cluster (issue 8, item 5), most through the Helm-installed stack:
//!
//! 1. static-token callers reach only their own tasks through the front end Service, and a
//!    missing or wrong token gets 401;
//! 2. (the chart's TokenReview audience and RBAC on tools are in `chart_authz.rs`);
//! 3. the chart's ServiceAccounts, in both RBAC scopes, hold exactly the rules the code needs;
//! 4. tool pods get no API token unless their tool's template asks for one;
//! 5. every pod of ours (operator, front end, example tools) runs at the "restricted" Pod
//!    Security level.

mod common;

use common::{
    CONFORMANCE_TOOLS, accept_confirm, error_detail, prepare_examples, start_confirm_owned_by,
    start_leader_with, static_tokens_secret, wait_failed,
};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::callers::{assert_unauthorized, random_token};
use mcp_task_operator_harness::chart_access::check_release_access;
use mcp_task_operator_harness::mcp_client::{Mcp, assert_foreign_task_looks_unknown};
use mcp_task_operator_harness::operator::{
    create_task, create_tool, ensure_example_images, failure_reason, result_is_error, result_text,
    shell_tool, wait_status, wait_terminal, with_operator,
};
use mcp_task_operator_harness::stack::{
    Release, apply_examples, install, mcp_url, wait_tools_ready,
};
use mcp_task_operator_harness::{ensure_crds, kubectl_ok, with_temp_ns};
use serde_json::json;

const RESTOCK_TOOL: &str = "examples/restock-report/mcptool.yaml";
const WRAP_CLI_TOOL: &str = "examples/wrap-cli/mcptool.yaml";
/// Where the kubelet mounts a ServiceAccount token.
const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

#[tokio::test]
async fn static_token_callers_reach_only_their_own_tasks_through_the_installed_chart() {
    with_temp_ns("sec-static", |client, ns| async move {
        ensure_crds(&client).await;
        let (alice_token, bob_token) = (random_token(), random_token());
        let file = format!("{alice_token},alice\n{bob_token},bob\n");
        static_tokens_secret(&client, &ns, file).await;
        let release = Release::new(&ns, "sec");
        let port = install(
            &ns,
            "sec",
            &[
                "rbac.scope=namespace",
                "operator.replicaCount=1",
                "frontend.replicaCount=1",
                "frontend.auth.mode=static",
                "frontend.auth.static.existingSecret=mcp-tokens",
                "frontend.authorization.callers[0].kind=User",
                "frontend.authorization.callers[0].name=alice",
                "frontend.authorization.callers[1].kind=User",
                "frontend.authorization.callers[1].name=bob",
            ],
        );
        // Static tokens need no TokenReview: cluster-wide there are only the front end's
        // subjectaccessreviews grant (ClusterRole and binding), the caller ClusterRole and the
        // two admission policies with their bindings.
        assert_eq!(
            release.cluster_objects().len(),
            7,
            "{:?}",
            release.cluster_objects()
        );
        apply_examples(&client, &ns, &[CONFORMANCE_TOOLS]).await;
        let url = mcp_url(port);
        let alice = Mcp::new(&url).with_token(&alice_token);
        let bob = Mcp::new(&url).with_token(&bob_token);
        alice
            .wait_for_tools(&["confirm_delete", "slow_compute"])
            .await;

        // No token, an unknown token and another scheme are refused before any MCP handling.
        let anonymous = Mcp::new(&url);
        let tools_list = json!({});
        let none = anonymous
            .request("tools/list", tools_list.clone(), false)
            .await;
        assert_unauthorized(&none, None);
        let wrong = anonymous
            .clone()
            .with_token(&random_token())
            .request("tools/list", tools_list.clone(), false)
            .await;
        assert_unauthorized(&wrong, Some("invalid_token"));
        let basic = anonymous
            .send(
                &[("authorization", format!("Basic {alice_token}"))],
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            )
            .await;
        assert_unauthorized(&basic, None);

        // Alice's task belongs to her; Bob cannot tell it from an unknown one nor touch it.
        let id = start_confirm_owned_by(&client, &ns, &alice, "a.txt", "alice").await;
        let tasks: Api<McpTask> = Api::namespaced(client.clone(), &ns);
        assert_foreign_task_looks_unknown(&bob, &alice, &tasks, &id).await;
        // Bob's listen for her task is acknowledged exactly like one for an unknown ID.
        let unknown = mcp_task_operator_crds::task_id::generate();
        let foreign_ack = bob.listen("l", &[&id]).await.next().await;
        let unknown_ack = bob.listen("l", &[&unknown]).await.next().await;
        assert_eq!(foreign_ack, unknown_ack);

        // Alice can do all of it: listen, update, get, cancel.
        let mut listen = alice.listen("alice", &[&id]).await;
        let ack = listen.next().await;
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
        let confirm =
            json!({ "confirm-1": { "action": "accept", "content": { "confirm": true } } });
        let ack = alice.update_task(&id, confirm).await;
        assert_eq!(ack.result()["resultType"], "complete", "{}", ack.body);
        listen.wait_status(&id, "completed").await;
        let got = alice.get_task(&id).await;
        assert_eq!(got.result()["status"], "completed");
        assert_eq!(
            got.result()["result"]["content"][0]["text"],
            "Deleted a.txt"
        );

        let slow = alice
            .start_task("slow_compute", json!({ "seconds": 600, "label": "s" }))
            .await;
        alice.wait_status(&slow, "working").await;
        let refused = bob.cancel_task(&slow).await;
        assert_eq!(refused.error_code(), Some(-32602), "{}", refused.body);
        assert!(!tasks.get(&slow).await.expect("task").is_cancel_requested());
        let cancel = alice.cancel_task(&slow).await;
        cancel.result();
        alice.wait_status(&slow, "cancelled").await;

        // Bob's own task is his, and Alice cannot see it.
        let own = bob
            .start_task("slow_compute", json!({ "seconds": 0, "label": "b" }))
            .await;
        bob.wait_status(&own, "completed").await;
        assert_eq!(tasks.get(&own).await.expect("task").spec.owner, "bob");
        let hidden = alice.get_task(&own).await;
        let nobody = alice.get_task(&unknown).await;
        assert_eq!(hidden.body["error"], nobody.body["error"]);
        // A listen naming both callers' tasks accepts only the listener's own.
        let mut mixed = bob.listen("mixed", &[&own, &id]).await;
        let ack = mixed.next().await;
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([own]));
    })
    .await;
}

#[tokio::test]
async fn chart_service_accounts_hold_exactly_the_access_the_code_needs_in_both_scopes() {
    with_temp_ns("sec-rbac", |client, ns| async move {
        ensure_crds(&client).await;
        // No pods: a cluster-scoped operator would reconcile every namespace's tasks.
        let no_pods = ["operator.replicaCount=0", "frontend.replicaCount=0"];
        let mut failures = Vec::new();
        for (release, scope) in [("mxns", "namespace"), ("mxcl", "cluster")] {
            let guard = Release::new(&ns, release);
            let scope_set = format!("rbac.scope={scope}");
            let mut sets = vec![scope_set.as_str()];
            sets.extend(no_pods);
            install(&ns, release, &sets);
            let (mut found, checks) =
                check_release_access(&client, &ns, release, scope == "cluster").await;
            eprintln!(
                "rbac.scope={scope}: {checks} access checks, {} failed",
                found.len()
            );
            failures.append(&mut found);
            drop(guard);
            assert!(
                Release::new(&ns, release).cluster_objects().is_empty(),
                "{release} left cluster-wide objects"
            );
        }
        assert!(
            failures.is_empty(),
            "access matrix:\n{}",
            failures.join("\n")
        );
    })
    .await;
}

/// The tool pod of task `id`.
async fn task_pod(client: &Client, ns: &str, id: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods
        .list(&ListParams::default().labels(&format!("mcptasks.io/task={id}")))
        .await
        .expect("list the task's pods");
    assert_eq!(list.items.len(), 1, "pods of task {id}: {:?}", list.items);
    list.items.into_iter().next().expect("one pod")
}

/// Whether `pod` has a ServiceAccount token volume mounted into any container.
fn mounts_api_token(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref().expect("pod spec");
    let token_volumes: Vec<&str> = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| {
            v.projected.as_ref().is_some_and(|p| {
                p.sources
                    .iter()
                    .flatten()
                    .any(|s| s.service_account_token.is_some())
            })
        })
        .map(|v| v.name.as_str())
        .collect();
    spec.containers.iter().any(|c| {
        c.volume_mounts.iter().flatten().any(|m| {
            token_volumes.contains(&m.name.as_str())
                || m.mount_path.starts_with("/var/run/secrets/kubernetes.io")
        })
    })
}

#[tokio::test]
async fn tool_pods_get_an_api_token_only_when_their_tool_asks_for_one() {
    with_operator("sec-token", async |client, ns, _| {
        ensure_example_images();
        // A ServiceAccount that would mount a token by default (automount unset).
        let mut account = ServiceAccount::default();
        account.metadata.name = Some("tool-identity".to_owned());
        Api::<ServiceAccount>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &account)
            .await
            .expect("create ServiceAccount tool-identity");
        let script = format!(
            "if [ -e {TOKEN_PATH} ]; then echo \"token for $(cat \
             /var/run/secrets/kubernetes.io/serviceaccount/namespace)\"; else echo no-token; fi"
        );
        let asks = json!({ "template": { "spec": {
            "serviceAccountName": "tool-identity", "automountServiceAccountToken": true } } });
        let identity_only = json!({ "template": { "spec": {
            "serviceAccountName": "tool-identity" } } });
        for (name, spec) in [
            ("plain", json!({})),
            ("identity-only", identity_only),
            ("asks-for-token", asks),
        ] {
            create_tool(&client, &ns, &shell_tool(name, &script, spec)).await;
        }
        wait_tools_ready(&ns);

        for (tool, wants_token) in [
            ("plain", false),
            ("identity-only", false),
            ("asks-for-token", true),
        ] {
            let task = create_task(&client, &ns, tool, json!({})).await;
            let id = task.metadata.name.clone().expect("name");
            let done = wait_terminal(&client, &ns, &id).await;
            let text = result_text(&done);
            let pod = task_pod(&client, &ns, &id).await;
            let automount = pod
                .spec
                .as_ref()
                .and_then(|s| s.automount_service_account_token);
            if wants_token {
                assert_eq!(text.trim(), format!("token for {ns}"), "{tool}");
                assert!(mounts_api_token(&pod), "{tool}: no token volume");
                assert_eq!(automount, Some(true), "{tool}");
            } else {
                assert_eq!(text.trim(), "no-token", "{tool}");
                assert!(!mounts_api_token(&pod), "{tool}: a token volume is mounted");
                assert_eq!(automount, Some(false), "{tool}");
            }
        }
    })
    .await;
}

const ENFORCE_RESTRICTED: &str = "pod-security.kubernetes.io/enforce=restricted";

/// Applies the CRDs, imports the example images and gives `ns` the Pod Security `labels`.
async fn restricted_ns(client: &Client, ns: &str, labels: &[&str]) {
    prepare_examples(client).await;
    let mut args = vec!["label", "ns", ns];
    args.extend(labels);
    kubectl_ok(&args);
}

#[tokio::test]
async fn every_pod_of_ours_runs_at_the_restricted_pod_security_level() {
    with_temp_ns("sec-pss", |client, ns| async move {
        restricted_ns(
            &client,
            &ns,
            &[
                ENFORCE_RESTRICTED,
                "pod-security.kubernetes.io/warn=restricted",
            ],
        )
        .await;
        // The PodSecurity admission plugin enforces the label: a privileged pod is refused.
        let privileged: Pod = serde_json::from_value(json!({
            "metadata": { "name": "privileged" },
            "spec": { "containers": [{
                "name": "c", "image": "localhost/busybox:1.35",
                "securityContext": { "privileged": true } }] },
        }))
        .expect("a Pod");
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        match pods.create(&dry_run, &privileged).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 403, "{status:?}");
                assert!(
                    status
                        .message
                        .contains("violates PodSecurity \"restricted:"),
                    "{status:?}"
                );
            }
            other => panic!("a privileged pod was not refused: {other:?}"),
        }

        let _release = Release::new(&ns, "sec");
        install(
            &ns,
            "sec",
            &[
                "rbac.scope=namespace",
                "frontend.auth.mode=none",
                "frontend.auth.allowUnauthenticated=true",
                "frontend.authorization.mode=none",
            ],
        );
        // --wait returned: every operator and front end replica is available.
        let ours = pods
            .list(&ListParams::default().labels("app.kubernetes.io/instance=sec"))
            .await
            .expect("list the release's pods");
        assert_eq!(ours.items.len(), 4, "2 operator and 2 front end pods");
        for pod in &ours.items {
            let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
            assert_eq!(phase.as_deref(), Some("Running"), "{:?}", pod.metadata.name);
        }

        apply_examples(
            &client,
            &ns,
            &[CONFORMANCE_TOOLS, RESTOCK_TOOL, WRAP_CLI_TOOL],
        )
        .await;
        let runs = [
            ("greet", json!({ "name": "pss" }), TaskStatus::Completed),
            (
                "slow_compute",
                json!({ "seconds": 0 }),
                TaskStatus::Completed,
            ),
            ("failing_job", json!({}), TaskStatus::Completed),
            ("protocol_error_job", json!({}), TaskStatus::Failed),
            (
                "confirm_delete",
                json!({ "filename": "f" }),
                TaskStatus::Completed,
            ),
            (
                "restock_report",
                json!({ "delayMs": 0 }),
                TaskStatus::Completed,
            ),
            (
                "text_stats",
                json!({ "text": "a b" }),
                TaskStatus::Completed,
            ),
        ];
        let mut ids = Vec::new();
        for (tool, arguments, _) in &runs {
            let task = create_task(&client, &ns, tool, arguments.clone()).await;
            ids.push(task.metadata.name.clone().expect("name"));
        }
        let confirm = ids[4].clone();
        wait_status(&client, &ns, &confirm, TaskStatus::InputRequired).await;
        accept_confirm(&client, &ns, &confirm).await;
        for ((tool, _, want), id) in runs.iter().zip(&ids) {
            let done = wait_terminal(&client, &ns, id).await;
            assert_eq!(done.task_status(), *want, "{tool}: {:?}", done.status);
            // No pod-level failure: the pod was admitted, started and ran the tool.
            assert_eq!(failure_reason(&done), "", "{tool}: {:?}", done.status);
            if *tool == "failing_job" {
                assert!(result_is_error(&done), "{tool}");
            }
            let pod = task_pod(&client, &ns, id).await;
            let ran = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|c| c.first())
                .and_then(|c| c.state.as_ref())
                // A result message settles the task while the container may still be exiting.
                .is_some_and(|s| s.running.is_some() || s.terminated.is_some());
            assert!(
                ran,
                "{tool}: the tool container did not run: {:?}",
                pod.status
            );
        }
        // Nothing was refused on the way: no FailedCreate on any Job.
        let events = kubectl_ok(&[
            "get",
            "events",
            "-n",
            &ns,
            "-o",
            "jsonpath={.items[*].reason}",
        ]);
        assert!(!events.contains("FailedCreate"), "{events}");
    })
    .await;
}

#[tokio::test]
async fn a_tool_pod_the_pod_security_level_refuses_fails_its_task_as_refused() {
    with_temp_ns("sec-refused", |client, ns| async move {
        restricted_ns(&client, &ns, &[ENFORCE_RESTRICTED]).await;
        let _operator = start_leader_with(&ns, &[("POD_REFUSED_GRACE_SECONDS", "2")]).await;
        // No securityContext at all: the Job controller's pods are refused. No deadline
        // either: the refusal itself ends the task.
        create_tool(
            &client,
            &ns,
            &shell_tool("unrestricted", "echo hi", json!({})),
        )
        .await;
        wait_tools_ready(&ns);
        let task = create_task(&client, &ns, "unrestricted", json!({})).await;
        let id = task.metadata.name.clone().expect("name");
        let done = wait_failed(&client, &ns, &id).await;
        assert_eq!(failure_reason(&done), "PodRefused", "{:?}", done.status);
        // The API server's refusal names the Pod Security level, in the task's error too.
        let detail = error_detail(&done);
        assert!(detail.contains("violates PodSecurity"), "{detail}");
        // Why is visible on the Job: the refusal names the Pod Security level.
        let selector = format!("involvedObject.name={id},reason=FailedCreate");
        let events = kubectl_ok(&[
            "get",
            "events",
            "-n",
            &ns,
            "--field-selector",
            &selector,
            "-o",
            "jsonpath={.items[*].message}",
        ]);
        assert!(events.contains("violates PodSecurity"), "{events}");
    })
    .await;
}
