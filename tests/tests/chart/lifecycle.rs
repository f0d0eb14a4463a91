//! A namespace-scoped release that owns the CRDs installs, upgrades to a changed chart (CRDs
//! included) and uninstalls leaving nothing of ours but the CRDs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use mcp_task_operator_harness::{ensure_crds, kubectl_ok, wait_for, with_temp_ns};

use super::*;

/// Waits until the Deployment has all replicas of its newest template ready.
async fn wait_rolled_out(api: &Api<Deployment>, name: &str) -> Deployment {
    let rolled_out = |d: Option<&Deployment>| {
        d.is_some_and(|d| {
            let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let status = d.status.clone().unwrap_or_default();
            status.observed_generation == d.metadata.generation
                && status.updated_replicas == Some(want)
                && status.available_replicas == Some(want)
                && status.replicas == Some(want)
        })
    };
    wait_for(api, name, rolled_out, Duration::from_secs(180)).await
}

/// Uninstalls the release and removes the changed chart's copy when the test ends, also early,
/// so no cluster-wide object outlives a failed run (`with_temp_ns` deletes the namespace).
struct Release<'a>(&'a str);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(changed_chart_dir(self.0));
        if std::env::var_os("MTO_KEEP_NS").is_none() {
            let _ = helm(&["uninstall", RELEASE, "-n", self.0, "--ignore-not-found"]);
        }
    }
}

/// The status code of `method path` sent to `addr` with `host` as the Host header, or why there
/// is none.
fn http_status(addr: &str, method: &str, path: &str, host: &str) -> Result<u16, String> {
    use std::io::{Read, Write};
    let socket = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&socket, Duration::from_secs(5))
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send to {addr}: {e}"))?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {response:?}"))
}

/// Through the Service (kube-proxy): probes answer, /mcp refuses unknown Hosts and asks for a
/// token (auth mode tokenreview) from an allowed one.
///
/// A rolled-out Deployment says nothing of kube-proxy: it programs a new Service's rules on
/// its next sync, and until then the ClusterIP is routed like any outside address (on CI's
/// machines a gateway answers 404 for it). So `/readyz` is asked until it says 200, for at
/// most a minute; the other answers are asserted once it has.
async fn assert_frontend_serves(ns: &str, service: &str) {
    let ip = kubectl_ok(&[
        "get",
        "service",
        service,
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    let addr = format!("{ip}:8080");
    let mut last = Err(String::from("not asked"));
    for _ in 0..240 {
        last = http_status(&addr, "GET", "/readyz", &addr);
        if last == Ok(200) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(last, Ok(200), "GET /readyz through {addr} for a minute");
    let status = |host: &str| http_status(&addr, "POST", "/mcp", host);
    assert_eq!(status(&addr), Ok(403), "ClusterIP is no allowed Host");
    let host = format!("{service}.{ns}.svc:8080");
    assert_eq!(status(&host), Ok(401), "no bearer token");
}

/// Waits until a replica of the operator holds the chart's Lease (named like the Deployment).
async fn assert_leader(ns: &str, operator: &str) {
    let path = "jsonpath={.spec.holderIdentity}";
    let mut holder = String::new();
    for _ in 0..60 {
        holder = kubectl_ok(&["get", "lease", operator, "-n", ns, "-o", path]);
        if holder.starts_with(operator) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("no operator replica holds Lease {operator}: {holder:?}");
}

fn changed_chart_dir(ns: &str) -> PathBuf {
    std::env::temp_dir().join(format!("chart-{ns}"))
}

/// A copy of the chart with a new version, for the upgrade.
fn changed_chart(ns: &str) -> PathBuf {
    let dir = changed_chart_dir(ns);
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&chart_dir(), &dir);
    let path = dir.join("Chart.yaml");
    let text = std::fs::read_to_string(&path).expect("Chart.yaml");
    let text: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.starts_with("version:") {
                "version: 99.0.0"
            } else {
                l
            }
        })
        .collect();
    std::fs::write(&path, text.join("\n")).expect("write Chart.yaml");
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read chart dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// Both CRDs belong to the release in `ns`, carry the labels of chart version `chart` and are
/// kept on uninstall.
fn assert_crds_owned_by(ns: &str, chart: &str) {
    for crd in ["mcptasks.mcptasks.io", "mcptools.mcptasks.io"] {
        let json = kubectl_ok(&["get", "crd", crd, "-o", "json"]);
        let crd: Value = serde_json::from_str(&json).expect("CRD JSON");
        let meta = &crd["metadata"];
        assert_eq!(meta["labels"]["helm.sh/chart"], chart, "{meta}");
        let annotations = &meta["annotations"];
        assert_eq!(annotations["meta.helm.sh/release-namespace"], ns, "{meta}");
        assert_eq!(annotations["helm.sh/resource-policy"], "keep", "{meta}");
    }
}

/// Every namespaced object in `ns` that the release (or its pods) could have left behind.
fn leftovers(ns: &str) -> Vec<String> {
    const KINDS: &str = "deployments,replicasets,pods,services,endpointslices,serviceaccounts,\
        roles,rolebindings,poddisruptionbudgets,networkpolicies,leases,configmaps,secrets,jobs";
    kubectl_ok(&["get", KINDS, "-n", ns, "-o", "name"])
        .lines()
        .filter(|l| !matches!(*l, "serviceaccount/default" | "configmap/kube-root-ca.crt"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn chart_installs_upgrades_and_uninstalls_leaving_only_the_crds() {
    with_temp_ns("chart", |client, ns| async move {
        ensure_crds(&client).await;
        // Pods that break the "restricted" Pod Security Standard are refused outright.
        kubectl_ok(&[
            "label",
            "ns",
            &ns,
            "pod-security.kubernetes.io/enforce=restricted",
        ]);
        let chart = chart_dir();
        let chart = chart.to_str().expect("UTF-8 path");
        let tag = mcp_task_operator_harness::stack::image_tag();
        let (operator_tag, frontend_tag) = (
            format!("operator.image.tag={tag}"),
            format!("frontend.image.tag={tag}"),
        );
        let images = ["--set", &operator_tag, "--set", &frontend_tag];
        // This release owns the CRDs (`crds.install`). They exist already (every test applies
        // them), so it takes them over, as a release does after an older chart's `crds/`.
        let mut install = vec![
            "install",
            RELEASE,
            chart,
            "-n",
            &ns,
            "--take-ownership",
            "--set",
            "rbac.scope=namespace",
            "--set",
            "crds.install=true",
        ];
        install.extend(images);
        helm_ok(&install);
        assert_crds_owned_by(&ns, "mcp-task-operator-0.1.0");
        let _release = Release(&ns);

        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
        let operator = "mto-mcp-task-operator-operator";
        let frontend = "mto-mcp-task-operator-mcp-frontend";
        // Available means both binaries start with the chart's RBAC and serve /readyz.
        wait_rolled_out(&deployments, frontend).await;
        assert_frontend_serves(&ns, frontend).await;
        wait_rolled_out(&deployments, operator).await;
        assert_leader(&ns, operator).await;

        // Upgrade to a changed chart with a changed value: it applies and rolls out.
        let changed = changed_chart(&ns);
        let changed = changed.to_str().expect("UTF-8 path");
        let mut upgrade = vec!["upgrade", RELEASE, changed, "-n", &ns, "--reuse-values"];
        upgrade.extend(["--set", "frontend.config.maxSubscriptions=7"]);
        helm_ok(&upgrade);
        let d = wait_rolled_out(&deployments, frontend).await;
        let labels = d.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["helm.sh/chart"], "mcp-task-operator-99.0.0");
        let container = &d.spec.expect("spec").template.spec.expect("pod").containers[0];
        let var = container
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "MCP_FRONTEND_MAX_SUBSCRIPTIONS");
        assert_eq!(var.and_then(|e| e.value.as_deref()), Some("7"));
        wait_rolled_out(&deployments, operator).await;
        assert_leader(&ns, operator).await;
        // `helm upgrade` upgraded the CRDs with the rest of the release.
        assert_crds_owned_by(&ns, "mcp-task-operator-99.0.0");
        let history = helm_ok(&["history", RELEASE, "-n", &ns, "-o", "json"]);
        assert!(history.contains("\"revision\":2"), "{history}");

        helm_ok(&["uninstall", RELEASE, "-n", &ns, "--wait", "--timeout", "3m"]);
        let mut left = leftovers(&ns);
        for _ in 0..120 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            left = leftovers(&ns);
        }
        assert!(left.is_empty(), "left after uninstall: {left:?}");
        let cluster_wide = kubectl_ok(&[
            "get",
            "clusterroles,clusterrolebindings",
            "-l",
            &format!("app.kubernetes.io/instance={RELEASE}"),
            "-o",
            "name",
        ]);
        assert!(
            !cluster_wide.contains(&ns),
            "left cluster-wide: {cluster_wide}"
        );
        // The CRDs stay, as documented (`crds.keep`: helm.sh/resource-policy: keep).
        kubectl_ok(&["get", "crd", "mcptasks.mcptasks.io", "mcptools.mcptasks.io"]);
    })
    .await;
}
