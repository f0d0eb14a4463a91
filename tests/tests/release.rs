//! The release as users install it (`make release-test`, hack/release-test.sh). The script runs
//! README's "On an existing cluster" block as it stands but for the registry: the images built
//! from the repository's Dockerfile and the chart packaged as an OCI artifact, both pushed to the
//! local registry (hack/registry.sh, TLS), then `helm install mto oci://…` into `mcp-system`
//! with every image pinned by digest, and a caller. Here: the pods pull from the registry
//! (`imagePullPolicy: IfNotPresent`, and the images were never imported into the node: only the
//! registry has them) and run the pushed digests, `helm test` passes, and the caller's
//! `tools/call` through the Service runs to completion in a real Job. Then, once the script has
//! uninstalled that release: a wrong digest keeps the pod from starting
//! (`ErrImagePull`/`ImagePullBackOff`).
//!
//! Ignored in `make integration`: hack/release-test.sh runs these with `--ignored` and the
//! `MTO_RELEASE_*` variables set.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::CONFORMANCE_TOOLS;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::ensure_example_images;
use mcp_task_operator_harness::release::Pushed;
use mcp_task_operator_harness::stack::{Release, apply_examples, install_unready, output_text};
use mcp_task_operator_harness::{client, ensure_crds, helm, kubectl_ok, with_temp_ns};
use serde_json::{Value, json};
use tokio::task::block_in_place;

/// `--set` values of these tests' releases: the operator works in the release namespace only,
/// one replica each.
const SETS: &[&str] = &[
    "rbac.scope=namespace",
    "operator.replicaCount=1",
    "frontend.replicaCount=1",
];

/// The pods of `component` (`operator` or `mcp-frontend`) in `ns`, as JSON.
fn pods(ns: &str, component: &str) -> Vec<Value> {
    let selector = format!("app.kubernetes.io/component={component}");
    let out = kubectl_ok(&["get", "pods", "-n", ns, "-l", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("pod list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Every container of every pod of `component` runs `image` (`REGISTRY/name@digest`) with
/// `IfNotPresent`, and the kubelet reports that digest as what it runs.
fn assert_runs_pinned(ns: &str, component: &str, image: &str) {
    let pods = pods(ns, component);
    assert!(!pods.is_empty(), "no {component} pods in {ns}");
    for pod in &pods {
        let name = &pod["metadata"]["name"];
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["image"], image, "{name}: spec image");
        assert_eq!(container["imagePullPolicy"], "IfNotPresent", "{name}");
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(
            status["imageID"], image,
            "{name}: the image the kubelet runs"
        );
        assert_eq!(status["ready"], true, "{name} is not ready: {status}");
    }
}

/// The release and namespace of README's "On an existing cluster", which hack/release-test.sh
/// ran before this test.
const README_RELEASE: &str = "mto";
const README_NS: &str = "mcp-system";

/// A `kubectl port-forward` to a Service, stopped on drop: how a user reaches a ClusterIP
/// front end from their machine.
struct PortForward {
    child: Child,
    port: u16,
}

impl PortForward {
    /// Forwards a free local port to `service`'s `port` in `ns`.
    fn start(ns: &str, service: &str, port: u16) -> Self {
        let mut child = Command::new("kubectl")
            .args(["port-forward", "-n", ns])
            .arg(format!("svc/{service}"))
            .arg(format!(":{port}"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("kubectl port-forward starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        // "Forwarding from 127.0.0.1:41234 -> 8080"
        let line = lines.next().and_then(Result::ok).unwrap_or_default();
        // It prints a line per connection: keep reading, or its next write kills it (SIGPIPE).
        std::thread::spawn(move || lines.for_each(drop));
        let local = line
            .strip_prefix("Forwarding from 127.0.0.1:")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("kubectl port-forward said {line:?}"));
        Self { child, port: local }
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs README's install: make release-test"]
async fn the_readme_install_runs_the_pushed_digests_passes_helm_test_and_completes_a_tool_call() {
    let pushed = Pushed::required();
    let client = client().await;
    let ns = README_NS;

    // What runs is what was pushed, pulled by digest.
    let operator = pushed.pinned("mcp-task-operator", &pushed.operator_digest);
    let frontend = pushed.pinned("mcp-task-frontend", &pushed.frontend_digest);
    assert_runs_pinned(ns, "operator", &operator);
    assert_runs_pinned(ns, "mcp-frontend", &frontend);
    let env = kubectl_ok(&[
        "get",
        "deployment",
        "-n",
        ns,
        "-l",
        "app.kubernetes.io/component=operator",
        "-o",
        "jsonpath={.items[0].spec.template.spec.containers[0].env[?(@.name==\"MCP_OPERATOR_BRIDGE_IMAGE\")].value}",
    ]);
    assert_eq!(
        env,
        pushed.pinned("mcp-bridge", &pushed.bridge_digest),
        "bridge image"
    );

    // README's check: `helm test mto -n mcp-system --logs`, the chart's default test pod.
    let out = block_in_place(|| {
        helm(&[
            "test",
            README_RELEASE,
            "-n",
            ns,
            "--logs",
            "--timeout",
            "4m",
        ])
    });
    let text = output_text(&out);
    println!("{text}");
    assert!(out.status.success(), "helm test failed:\n{text}");
    assert!(text.contains("PASS: the front end answers"), "{text}");

    // A tool, then the agent README made calls it through the Service with its token.
    block_in_place(ensure_example_images);
    apply_examples(&client, ns, &[CONFORMANCE_TOOLS]).await;
    let token = kubectl_ok(&[
        "create",
        "token",
        "agent",
        "-n",
        ns,
        "--audience",
        "mcp-task-operator.mcp-system.mto-mcp-task-operator",
    ]);
    let forward =
        block_in_place(|| PortForward::start(ns, "mto-mcp-task-operator-mcp-frontend", 8080));
    let mcp = Mcp::new(&format!("http://127.0.0.1:{}/mcp", forward.port)).with_token(token.trim());
    mcp.wait_for_tools(&["slow_compute"]).await;
    let id = mcp
        .start_task(
            "slow_compute",
            json!({ "seconds": 1, "label": "from-registry" }),
        )
        .await;
    let done = mcp.wait_status(&id, "completed").await;
    assert!(done.to_string().contains("from-registry"), "result: {done}");
    kubectl_ok(&["delete", "mcptools", "--all", "-n", ns]);
}

/// The release name of the tests in namespaces of their own.
const RELEASE: &str = "rel";

/// The reason the first container of a pod of `component` waits, if it waits.
fn waiting_reasons(ns: &str, component: &str) -> Vec<String> {
    pods(ns, component)
        .iter()
        .filter_map(|p| {
            p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the pushed release: make release-test"]
async fn a_digest_the_registry_does_not_have_keeps_the_pod_from_starting() {
    with_temp_ns("release-bad-digest", |client, ns| async move {
        ensure_crds(&client).await;
        let _release = Release::new(&ns, RELEASE);
        let pushed = Pushed::required();
        // A well-formed digest of no image: the registry answers 404 for its manifest.
        let missing = format!("sha256:{}", "0".repeat(64));
        let operator = format!("operator.image.digest={missing}");
        let mut sets = SETS.to_vec();
        sets.push(&operator);
        block_in_place(|| install_unready(&ns, RELEASE, &sets));

        let deadline = Instant::now() + Duration::from_secs(180);
        let reasons = loop {
            let reasons = waiting_reasons(&ns, "operator");
            if reasons
                .iter()
                .any(|r| r == "ErrImagePull" || r == "ImagePullBackOff")
            {
                break reasons;
            }
            assert!(
                Instant::now() < deadline,
                "the operator pod did not report ErrImagePull or ImagePullBackOff in 180 s: {reasons:?}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        eprintln!("operator pod waits: {reasons:?}");
        for pod in pods(&ns, "operator") {
            let status = &pod["status"]["containerStatuses"][0];
            assert!(status["state"]["running"].is_null(), "it runs: {status}");
            assert_eq!(status["ready"], false, "{status}");
            assert_eq!(
                pod["spec"]["containers"][0]["image"],
                pushed.pinned("mcp-task-operator", &missing)
            );
        }
        // The front end, pinned to the pushed digest, starts all the same.
        kubectl_ok(&[
            "wait",
            "-n",
            &ns,
            "--for=condition=Available",
            "deployment",
            "-l",
            "app.kubernetes.io/component=mcp-frontend",
            "--timeout=180s",
        ]);
    })
    .await;
}
