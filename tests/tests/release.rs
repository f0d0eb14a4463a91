//! The release as users install it (`make release-test`, hack/release-test.sh): the images built
//! from the repository's Dockerfile and the chart packaged as an OCI artifact, both pushed to the
//! local registry (hack/registry.sh), then `helm install oci://…` with every image pinned by
//! digest. The pods pull from the registry (`imagePullPolicy: IfNotPresent`, and the images were
//! never imported into the node: only the registry has them), `helm test` calls a tool through
//! the front end Service, and a client's `tools/call` runs to completion in a real Job. A wrong
//! digest keeps the pod from starting (`ErrImagePull`/`ImagePullBackOff`).
//!
//! Ignored in `make integration`: hack/release-test.sh builds and pushes first, then runs these
//! with `--ignored` and the `MTO_RELEASE_*` variables set.

use std::time::{Duration, Instant};

use mcp_task_operator_harness::callers::caller_token;
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::ensure_example_images;
use mcp_task_operator_harness::stack::{NODE_IP, Release, apply_examples, mcp_url, output_text};
use mcp_task_operator_harness::{ensure_crds, helm, kubectl_ok, with_temp_ns};
use rand::Rng;
use serde_json::{Value, json};
use tokio::task::block_in_place;

/// A variable hack/release-test.sh sets.
fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run `make release-test` (hack/release-test.sh), which builds and pushes the release first")
    })
}

/// The registry the release was pushed to, e.g. `localhost:5000`.
fn registry() -> String {
    var("MTO_RELEASE_REGISTRY")
}

/// `REGISTRY/name@digest` of one of our images, as the chart renders it and the kubelet
/// reports it in `imageID`.
fn pinned(name: &str, digest_var: &str) -> String {
    format!("{}/{name}@{}", registry(), var(digest_var))
}

/// `--set` values that pin our three images to the pushed digests; `operator_digest` replaces
/// the operator's.
fn image_sets(operator_digest: &str) -> Vec<String> {
    let reg = registry();
    vec![
        format!("operator.image.repository={reg}/mcp-task-operator"),
        format!("operator.image.digest={operator_digest}"),
        format!("frontend.image.repository={reg}/mcp-task-frontend"),
        format!(
            "frontend.image.digest={}",
            var("MTO_RELEASE_FRONTEND_DIGEST")
        ),
        format!("operator.bridgeImage.repository={reg}/mcp-bridge"),
        format!(
            "operator.bridgeImage.digest={}",
            var("MTO_RELEASE_BRIDGE_DIGEST")
        ),
    ]
}

/// `helm install RELEASE oci://REGISTRY/charts/mcp-task-operator --version V` into `ns`, the
/// front end on a random free NodePort of the bridge address, with `sets`. The test cluster is
/// shared: the chart does not install the CRDs (`ensure_crds` applies them) and the operator
/// works in the release namespace only. `wait` waits for every Deployment. Returns the port.
fn install_from_registry(ns: &str, release: &str, sets: &[String], wait: bool) -> u16 {
    let chart = format!("oci://{}/charts/mcp-task-operator", registry());
    let version = var("MTO_RELEASE_CHART_VERSION");
    for _ in 0..10 {
        let port: u16 = rand::rng().random_range(30100..=32700);
        let mut all = vec![
            "crds.install=false".to_owned(),
            "rbac.scope=namespace".to_owned(),
            "operator.replicaCount=1".to_owned(),
            "frontend.replicaCount=1".to_owned(),
            "frontend.service.type=NodePort".to_owned(),
            format!("frontend.service.nodePort={port}"),
            format!("frontend.config.allowedHosts={{{NODE_IP}}}"),
        ];
        all.extend(sets.iter().cloned());
        let mut args = vec![
            "install",
            release,
            &chart,
            "--version",
            &version,
            "--plain-http",
            "-n",
            ns,
            "--timeout",
            "5m",
        ];
        if wait {
            args.push("--wait");
        }
        for set in &all {
            args.extend(["--set", set]);
        }
        let out = helm(&args);
        if out.status.success() {
            return port;
        }
        let text = output_text(&out);
        if text.contains("already allocated") {
            let _ = helm(&[
                "uninstall",
                release,
                "-n",
                ns,
                "--ignore-not-found",
                "--wait",
            ]);
            continue;
        }
        panic!("helm install {chart} --version {version} into {ns} failed:\n{text}");
    }
    panic!("no free node port found in 10 tries");
}

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

const RELEASE: &str = "rel";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the pushed release: make release-test"]
async fn chart_from_the_registry_runs_images_by_digest_passes_helm_test_and_completes_a_tool_call()
{
    with_temp_ns("release", |client, ns| async move {
        ensure_crds(&client).await;
        block_in_place(ensure_example_images);
        let _release = Release::new(&ns, RELEASE);
        let mut sets = image_sets(&var("MTO_RELEASE_OPERATOR_DIGEST"));
        sets.extend(
            [
                "test.image=localhost/toolbox:v1",
                "test.imagePullPolicy=Never",
                "test.tool=slow_compute",
                r#"test.arguments=\{"seconds":1\,"label":"release"\}"#,
                "test.timeoutSeconds=90",
            ]
            .map(str::to_owned),
        );
        let started = Instant::now();
        let port = block_in_place(|| install_from_registry(&ns, RELEASE, &sets, true));
        eprintln!(
            "installed from the registry in {:.1} s",
            started.elapsed().as_secs_f64()
        );

        // What runs is what was pushed, pulled by digest.
        let operator = pinned("mcp-task-operator", "MTO_RELEASE_OPERATOR_DIGEST");
        let frontend = pinned("mcp-task-frontend", "MTO_RELEASE_FRONTEND_DIGEST");
        assert_runs_pinned(&ns, "operator", &operator);
        assert_runs_pinned(&ns, "mcp-frontend", &frontend);
        let env = kubectl_ok(&[
            "get",
            "deployment",
            "-n",
            &ns,
            "-l",
            "app.kubernetes.io/component=operator",
            "-o",
            "jsonpath={.items[0].spec.template.spec.containers[0].env[?(@.name==\"MCP_OPERATOR_BRIDGE_IMAGE\")].value}",
        ]);
        assert_eq!(
            env,
            pinned("mcp-bridge", "MTO_RELEASE_BRIDGE_DIGEST"),
            "bridge image"
        );

        // helm test: the chart's test pod calls slow_compute through the Service.
        apply_examples(&client, &ns, &["examples/conformance/mcptools.yaml"]).await;
        let out = block_in_place(|| {
            helm(&["test", RELEASE, "-n", &ns, "--logs", "--timeout", "4m"])
        });
        let text = output_text(&out);
        println!("{text}");
        assert!(out.status.success(), "helm test failed:\n{text}");
        assert!(text.contains("PASS: slow_compute completed"), "{text}");

        // A client's tools/call, through the NodePort, to completion in a real Job.
        let token = caller_token(&client, &ns, RELEASE, "release-client").await;
        let mcp = Mcp::new(&mcp_url(port)).with_token(&token);
        mcp.wait_for_tools(&["slow_compute"]).await;
        let id = mcp
            .start_task("slow_compute", json!({ "seconds": 1, "label": "from-registry" }))
            .await;
        let done = mcp.wait_status(&id, "completed").await;
        let text = done.to_string();
        assert!(text.contains("from-registry"), "result: {done}");
    })
    .await;
}

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
        // A well-formed digest of no image: the registry answers 404 for its manifest.
        let missing = format!("sha256:{}", "0".repeat(64));
        let sets = image_sets(&missing);
        block_in_place(|| install_from_registry(&ns, RELEASE, &sets, false));

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
                format!("{}/mcp-task-operator@{missing}", registry())
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
