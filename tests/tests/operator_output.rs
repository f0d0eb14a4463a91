//! Output integrity and failover on the real cluster: a tool whose log the operator cannot read
//! fails `OutputUnavailable` instead of completing with empty text; an operator that takes over
//! a running task resumes from the status's checkpoint (no repeated warning Events, no
//! `input_required` → `working` flip, an answer sent meanwhile reaches the tool); a tool's
//! oversized `error.data` is cut to its bound.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{new_task, prepare_examples, task_error, wait_failed};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_crds::budget::MAX_ERROR_DATA_BYTES;
use mcp_task_operator_harness::operator::{
    Operator, TaskRecorder, answer, create_task, create_tool, events_for, failure_reason,
    result_text, shell_tool, status_message, wait_status, wait_task, wait_task_event,
    wait_terminal,
};
use mcp_task_operator_harness::with_temp_ns;
use serde_json::{Value, json};

/// A ServiceAccount of `ns` with every right the operator's chart Role gives, in `ns`, but
/// `pods/log`; returns a kubeconfig file that authenticates as it.
async fn operator_without_log_access(client: &Client, ns: &str) -> PathBuf {
    let name = "blind-operator";
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": verbs});
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [
            rule(&["mcptasks.io"], &["mcptasks"], &["get", "list", "watch", "delete"]),
            rule(&["mcptasks.io"], &["mcptasks/status", "mcptools/status"], &["patch"]),
            rule(&["mcptasks.io"], &["mcptasks/finalizers"], &["update"]),
            rule(&["mcptasks.io"], &["mcptools"], &["list", "watch"]),
            rule(&["batch"], &["jobs"], &["get", "list", "watch", "create", "patch", "delete"]),
            rule(&[""], &["pods"], &["list", "watch", "patch"]),
            rule(&["events.k8s.io"], &["events"], &["create", "patch", "list"]),
            rule(&["coordination.k8s.io"], &["leases"], &["get", "create", "update"]),
        ],
    }))
    .expect("a Role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
    }))
    .expect("a RoleBinding");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("a ServiceAccount");
    let pp = PostParams::default();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    accounts.create(&pp, &account).await.expect("create SA");
    Api::<Role>::namespaced(client.clone(), ns)
        .create(&pp, &role)
        .await
        .expect("create Role");
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(&pp, &binding)
        .await
        .expect("create RoleBinding");
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let token = accounts
        .create_token_request(name, &pp, &request)
        .await
        .expect("a token")
        .status
        .expect("token status")
        .token;
    // The test's own kubeconfig, with the ServiceAccount's token as its user.
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG is set for the tests");
    let text = std::fs::read_to_string(&path).expect("read KUBECONFIG");
    let mut config: Value = serde_yaml::from_str(&text).expect("kubeconfig YAML");
    config["users"] = json!([{"name": name, "user": {"token": token}}]);
    let contexts = config["contexts"].as_array_mut().expect("contexts");
    for context in contexts {
        context["context"]["user"] = json!(name);
    }
    let out = std::env::temp_dir().join(format!("mto-{ns}-{name}.kubeconfig"));
    std::fs::write(&out, serde_yaml::to_string(&config).expect("YAML")).expect("write");
    out
}

/// Before the fix, a stream that failed was re-read 30 times and the outcome then decided from
/// what was read: `completed` with empty text, about a minute after the exit.
#[tokio::test]
async fn a_log_the_operator_cannot_read_fails_the_task_instead_of_completing_it() {
    with_temp_ns("op-output", |client, ns| async move {
        prepare_examples(&client).await;
        let kubeconfig = operator_without_log_access(&client, &ns).await;
        let operator = Operator::start_as(&ns, &format!("{ns}-lease"), "blind", &kubeconfig).await;
        operator.wait_leading().await;
        let script = "echo 'the whole report'; exit 0";
        create_tool(&client, &ns, &shell_tool("report", script, json!({}))).await;
        let started = Instant::now();
        let task = create_task(&client, &ns, "report", json!({})).await;
        let name = task.name_any();
        // Failed reads are retried for about two minutes (a kubelet coming back).
        let done = wait_task(&client, &ns, &name, Duration::from_secs(240), |t| {
            t.is_terminal()
        })
        .await;
        let took = started.elapsed();
        assert_eq!(
            done.task_status(),
            TaskStatus::Failed,
            "a result must come from a whole read, not an unread log: {done:?}\n{}",
            operator.log()
        );
        assert_eq!(failure_reason(&done), "OutputUnavailable");
        let message = status_message(&done);
        assert!(
            message.contains("could not be read whole")
                && message.contains("could not be read to its end in 60 reads"),
            "{message}"
        );
        let events = wait_task_event(&client, &ns, &name, "Failed").await;
        assert!(
            events
                .iter()
                .any(|e| e.reason == "Failed" && e.type_ == "Warning"),
            "{events:#?}"
        );
        eprintln!("output unavailable: failed {took:?} after the task's creation");
        let metrics = operator.get("/metrics").await.expect("metrics").1;
        assert!(
            metrics.contains(r#"reason="OutputUnavailable""#),
            "a metric label counts it:\n{metrics}"
        );
        // The token dies with the namespace; the file need not outlive the test either.
        let _ = std::fs::remove_file(&kubeconfig);
    })
    .await;
}

/// Prints three malformed messages (three Warning Events), asks for input, waits for the
/// answer in its input-responses file, and completes with it.
const ASKING_SCRIPT: &str = r#"
for i in 1 2 3; do echo '{"mcp":"bogus"}'; done
echo '{"mcp":"status","message":"asking"}'
echo '{"mcp":"input","requests":{"go":{"method":"roots/list"}}}'
until grep -q '"go"' /var/run/mcp/input-responses; do sleep 0.2; done
echo '{"mcp":"result","result":{"content":[{"type":"text","text":"answered"}]}}'
"#;

/// Before the fix, the new operator re-read the log and reported its three warnings again (six
/// in all), and it decided from a partial re-read once one second had passed.
#[tokio::test]
async fn a_new_operator_resumes_from_the_checkpoint_without_repeats_or_flips() {
    with_temp_ns("op-resume", |client, ns| async move {
        prepare_examples(&client).await;
        create_tool(
            &client,
            &ns,
            &shell_tool("asking", ASKING_SCRIPT, json!({})),
        )
        .await;
        let mut first = Operator::start(&ns, &format!("{ns}-a"), "operator-a", &[]).await;
        first.wait_leading().await;
        let recorder = TaskRecorder::start(&client, &ns).await;
        let name = new_task(&client, &ns, "asking").await;
        wait_status(&client, &ns, &name, TaskStatus::InputRequired).await;
        let malformed = || async {
            events_for(&client, &ns, "McpTask", &name)
                .await
                .iter()
                .filter(|e| e.reason == "MalformedMessage")
                .map(|e| e.count)
                .sum::<i32>()
        };
        let started = Instant::now();
        while malformed().await < 3 {
            assert!(started.elapsed() < Duration::from_secs(30), "3 warnings");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // The checkpoint counts the warnings: wait until the status records all three.
        mcp_task_operator_harness::operator::wait_task(
            &client,
            &ns,
            &name,
            Duration::from_secs(30),
            |t| {
                t.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.message.ends_with(", 3 output warnings reported"))
                })
            },
        )
        .await;
        first.kill().await;

        // Another operator (another Lease: no wait for the first one's to expire) takes over,
        // and the answer goes in while it reads the log again.
        let second = Operator::start(&ns, &format!("{ns}-b"), "operator-b", &[]).await;
        second.wait_leading().await;
        let answered = Instant::now();
        answer(&client, &ns, &name, json!({"go": {"roots": []}})).await;
        let done = wait_terminal(&client, &ns, &name).await;
        eprintln!(
            "answer to completed after failover: {:?}",
            answered.elapsed()
        );
        assert_eq!(
            done.task_status(),
            TaskStatus::Completed,
            "{done:?}\n{}",
            second.log()
        );
        assert_eq!(result_text(&done), "answered");
        recorder.wait_seen(&name, TaskStatus::Completed).await;
        assert_eq!(
            recorder.statuses(&name),
            [
                TaskStatus::Working,
                TaskStatus::InputRequired,
                TaskStatus::Working,
                TaskStatus::Completed
            ],
            "input_required never flips to working before the answer"
        );
        assert_eq!(
            malformed().await,
            3,
            "no warning Event is repeated:\n{}",
            second.log()
        );
    })
    .await;
}

/// Before the fix, `error.data` was stored whole.
#[tokio::test]
async fn a_tools_oversized_error_data_is_cut_to_its_bound() {
    with_temp_ns("op-errdata", |client, ns| async move {
        prepare_examples(&client).await;
        // 200,000 bytes of error.data, printed as one line.
        let script = r#"printf '{"mcp":"error","error":{"code":-32000,"message":"boom","data":{"dump":"'
head -c 200000 /dev/zero | tr '\0' 'x'
printf '"}}}\n'"#;
        create_tool(&client, &ns, &shell_tool("dumper", script, json!({}))).await;
        let _operator = Operator::start_leader(&ns).await;
        let name = new_task(&client, &ns, "dumper").await;
        let done = wait_failed(&client, &ns, &name).await;
        let error = task_error(&done);
        assert_eq!(error.code, -32000);
        let data = error.data.expect("data kept, cut");
        assert!(data.to_string().len() <= MAX_ERROR_DATA_BYTES, "{}", data.to_string().len());
        let text = data.as_str().expect("cut data is a string");
        assert!(
            text.ends_with("[… error.data cut: 200011 bytes, at most 16384 are kept]"),
            "{}",
            &text[text.len().saturating_sub(80)..]
        );
    })
    .await;
}

/// Before the fix, the completed status (over etcd's 1.5 MiB with this spec) was refused and
/// retried until the task's TTL: the task stayed `working`.
#[tokio::test]
async fn a_task_over_the_object_budget_fails_instead_of_retrying_its_status() {
    with_temp_ns("op-budget", |client, ns| async move {
        prepare_examples(&client).await;
        // A 450 KB result: within the result bound, but not with this task's 1.15 MB spec
        // (etcd takes at most 1.5 MiB per object).
        let script = r#"printf '{"mcp":"result","result":{"content":[{"type":"text","text":"'
head -c 450000 /dev/zero | tr '\0' 'y'
printf '"}]}}\n'"#;
        create_tool(&client, &ns, &shell_tool("big", script, json!({}))).await;
        let _operator = Operator::start_leader(&ns).await;
        // Written straight to the API (the front end's body limit would refuse it).
        let tasks: Api<mcp_task_operator_crds::McpTask> = Api::namespaced(client.clone(), &ns);
        let name = mcp_task_operator_crds::task_id::generate();
        let task = serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
            "metadata": {"name": name},
            "spec": {"tool": "big", "owner": "tests", "arguments": {}, "ttlMs": 3_600_000,
                     "clientCapabilities": {"blob": "z".repeat(1_150_000)}},
        }))
        .expect("an McpTask");
        let started = Instant::now();
        tasks
            .create(&PostParams::default(), &task)
            .await
            .expect("1.15 MB fits etcd");
        let done = wait_terminal(&client, &ns, &name).await;
        eprintln!("over budget: failed {:?} after creation", started.elapsed());
        assert_eq!(done.task_status(), TaskStatus::Failed, "{:?}", done.status);
        assert_eq!(failure_reason(&done), "StatusTooLarge");
        let message = status_message(&done);
        assert!(
            message.contains("at most 1048576 bytes fit one task object"),
            "{message}"
        );
    })
    .await;
}
