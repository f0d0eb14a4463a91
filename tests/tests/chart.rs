//! The Helm chart: `helm lint` is clean, both RBAC scopes render restricted pods with least
//! privilege, and a namespace-scoped release that owns the CRDs installs, upgrades to a changed
//! chart (CRDs included) and uninstalls leaving nothing of ours but the CRDs. The exact access
//! of each ServiceAccount in both scopes is `security.rs`'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use mcp_task_operator_tests::{chart_dir, ensure_crds, helm, kubectl_ok, wait_for, with_temp_ns};
use serde::Deserialize;
use serde_json::Value;

const RELEASE: &str = "mto";

/// Runs helm and panics with its output when it fails; returns stdout.
fn helm_ok(args: &[&str]) -> String {
    let out = helm(args);
    assert!(
        out.status.success(),
        "helm {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `helm template` of the chart in namespace `ns` with `--set` values, as JSON documents.
fn render(ns: &str, sets: &[&str]) -> Vec<Value> {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        RELEASE,
        chart.to_str().expect("UTF-8 path"),
        "-n",
        ns,
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let text = helm_ok(&args);
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).expect("helm renders YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn named<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    of_kind(docs, kind)
        .into_iter()
        .find(|d| d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
}

/// Every Deployment runs 2 replicas at the "restricted" level with requests and limits.
fn assert_restricted_pods(docs: &[Value]) {
    let deployments = of_kind(docs, "Deployment");
    assert_eq!(deployments.len(), 2);
    let mut accounts = Vec::new();
    for d in deployments {
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(pod["automountServiceAccountToken"], true);
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(pod["securityContext"]["runAsUser"], 65532);
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        accounts.push(pod["serviceAccountName"].as_str().expect("SA").to_owned());
        for c in pod["containers"].as_array().expect("containers") {
            let sc = &c["securityContext"];
            assert_eq!(sc["allowPrivilegeEscalation"], false);
            assert_eq!(sc["readOnlyRootFilesystem"], true);
            assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
            for bound in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    assert!(
                        c["resources"][bound][resource].is_string(),
                        "{bound}.{resource}"
                    );
                }
            }
            if c["name"] == "operator" {
                // The Lease identity and namespace come from the downward API.
                for var in ["POD_NAME", "POD_NAMESPACE"] {
                    let from_pod =
                        env(c, var).is_some_and(|e| e["valueFrom"]["fieldRef"].is_object());
                    assert!(from_pod, "{var}");
                }
            }
        }
    }
    accounts.dedup();
    assert_eq!(accounts.len(), 2, "each binary has its own ServiceAccount");
    assert_eq!(of_kind(docs, "PodDisruptionBudget").len(), 2);
    assert_eq!(of_kind(docs, "ServiceAccount").len(), 2);
    // Nothing may grant Secrets or wildcards.
    for role in docs
        .iter()
        .filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole")
    {
        let text = role["rules"].to_string();
        assert!(!text.contains("secrets") && !text.contains('*'), "{text}");
    }
}

#[test]
fn chart_lints_clean_and_renders_least_privilege_in_both_scopes() {
    let chart = chart_dir();
    let lint = helm_ok(&["lint", "--strict", chart.to_str().expect("UTF-8 path")]);
    assert!(lint.contains("0 chart(s) failed"), "{lint}");

    let cluster = render("tools", &[]);
    assert_restricted_pods(&cluster);
    // The release owns the three CRDs and keeps them on uninstall, unless told otherwise.
    let crds = of_kind(&cluster, "CustomResourceDefinition");
    assert_eq!(crds.len(), 3);
    for crd in crds {
        let keep = &crd["metadata"]["annotations"]["helm.sh/resource-policy"];
        assert_eq!(keep, "keep", "{crd}");
    }
    let without = render("tools", &["crds.install=false"]);
    assert!(of_kind(&without, "CustomResourceDefinition").is_empty());
    let operator = named(&cluster, "Deployment", "mto-mcp-task-operator-operator");
    let container = &operator["spec"]["template"]["spec"]["containers"][0];
    assert!(
        env(container, "MCP_OPERATOR_NAMESPACE").is_none(),
        "watches all namespaces"
    );
    let roles = of_kind(&cluster, "ClusterRole");
    assert_eq!(
        roles.len(),
        3,
        "operator rules, the front end's reviews and the caller role"
    );
    named(
        &cluster,
        "ClusterRole",
        "tools-mto-mcp-task-operator-operator",
    );
    named(&cluster, "Lease", "mto-mcp-task-operator-operator");

    let namespaced = render("tools", &["rbac.scope=namespace"]);
    assert_restricted_pods(&namespaced);
    let operator = named(&namespaced, "Deployment", "mto-mcp-task-operator-operator");
    let container = &operator["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        env(container, "MCP_OPERATOR_NAMESPACE").unwrap()["value"],
        "tools"
    );
    // Namespace scope: cluster-wide are only the front end's reviews (cluster-scoped APIs)
    // and the caller role, which grants nothing until bound.
    let reviews = named(
        &namespaced,
        "ClusterRole",
        "tools-mto-mcp-task-operator-mcp-frontend-reviews",
    );
    let rules = reviews["rules"].to_string();
    assert!(rules.contains("\"tokenreviews\"") && rules.contains("\"subjectaccessreviews\""));
    let caller = named(
        &namespaced,
        "ClusterRole",
        "tools-mto-mcp-task-operator-caller",
    );
    assert_eq!(
        caller["rules"],
        serde_json::json!([{"apiGroups": ["mcptasks.io"], "resources": ["mcptools"], "verbs": ["call"]}])
    );
    assert_eq!(of_kind(&namespaced, "ClusterRole").len(), 2);
    named(&namespaced, "Role", "mto-mcp-task-operator-operator");
    // The default audience is the chart's own, never the API server's.
    let frontend = named(
        &namespaced,
        "Deployment",
        "mto-mcp-task-operator-mcp-frontend",
    );
    let container = &frontend["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        env(container, "MCP_FRONTEND_TOKEN_AUDIENCES").unwrap()["value"],
        "mcp-task-operator"
    );
    assert_eq!(
        env(container, "MCP_FRONTEND_AUTHORIZATION_MODE").unwrap()["value"],
        "rbac"
    );

    // Callers listed in values are bound to the caller role in the served namespace.
    let bound = render(
        "tools",
        &[
            "frontend.authorization.callers[0].kind=Group",
            "frontend.authorization.callers[0].name=agents",
            "frontend.authorization.callers[1].kind=ServiceAccount",
            "frontend.authorization.callers[1].name=bot",
            "frontend.authorization.callerRole.resourceNames={restock-report}",
        ],
    );
    let binding = named(
        &bound,
        "RoleBinding",
        "mto-mcp-task-operator-mcp-frontend-callers",
    );
    assert_eq!(
        binding["roleRef"]["name"],
        "tools-mto-mcp-task-operator-caller"
    );
    assert_eq!(
        binding["subjects"],
        serde_json::json!([
            {"kind": "Group", "name": "agents", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "ServiceAccount", "name": "bot", "namespace": "tools"},
        ])
    );
    let caller = named(&bound, "ClusterRole", "tools-mto-mcp-task-operator-caller");
    assert_eq!(
        caller["rules"][0]["resourceNames"],
        serde_json::json!(["restock-report"])
    );

    // With static tokens and no authorization a namespace-scoped release creates nothing
    // cluster-wide at all.
    let static_auth = render(
        "tools",
        &[
            "rbac.scope=namespace",
            "frontend.auth.mode=static",
            "frontend.auth.static.existingSecret=t",
            "frontend.authorization.mode=none",
        ],
    );
    assert!(
        !static_auth
            .iter()
            .any(|d| d["kind"].as_str().is_some_and(|k| k.starts_with("Cluster")))
    );

    // Optional objects render only when asked for.
    assert!(
        of_kind(&cluster, "NetworkPolicy").is_empty()
            && of_kind(&cluster, "ServiceMonitor").is_empty()
    );
    let optional = render(
        "tools",
        &[
            "networkPolicy.enabled=true",
            "operator.metrics.serviceMonitor.enabled=true",
            "frontend.metrics.serviceMonitor.enabled=true",
        ],
    );
    assert_eq!(of_kind(&optional, "NetworkPolicy").len(), 2);
    assert_eq!(of_kind(&optional, "ServiceMonitor").len(), 2);

    // Values the binaries would refuse are refused at render time.
    for bad in [
        &["rbac.scope=everywhere"][..],
        &["frontend.auth.mode=none"],
        &["frontend.auth.mode=static"],
        &["frontend.auth.tokenReview.audiences=null"],
        &["frontend.authorization.mode=abac"],
    ] {
        let mut args = vec!["template", RELEASE, chart.to_str().expect("UTF-8 path")];
        for set in bad {
            args.extend(["--set", set]);
        }
        assert!(!helm(&args).status.success(), "{bad:?} must be refused");
    }
}

#[test]
fn the_operator_forbids_tools_the_releases_own_service_accounts() {
    let policy_env = |sets: &[&str]| {
        let docs = render("tools", sets);
        let operator = named(&docs, "Deployment", "mto-mcp-task-operator-operator");
        let container = &operator["spec"]["template"]["spec"]["containers"][0];
        let var = |name: &str| env(container, name).expect("policy env var")["value"].clone();
        let allow = ["PRIVILEGED", "HOST_NAMESPACES", "HOST_PATH"]
            .map(|s| var(&format!("MCP_OPERATOR_TOOL_POLICY_ALLOW_{s}")));
        (var("MCP_OPERATOR_FORBIDDEN_SERVICE_ACCOUNTS"), allow)
    };
    let (names, allow) = policy_env(&[]);
    let own = "mto-mcp-task-operator-operator,mto-mcp-task-operator-mcp-frontend";
    assert_eq!(names, own);
    assert_eq!(allow, ["false"; 3].map(Value::from));
    let (names, allow) = policy_env(&[
        "operator.serviceAccount.name=op",
        "frontend.serviceAccount.name=fe",
        "operator.toolPolicy.forbiddenServiceAccounts={ci,op}",
        "operator.toolPolicy.allowHostPath=true",
    ]);
    assert_eq!(names, "op,fe,ci");
    assert_eq!(allow[2], "true");
}

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

/// The status code of `method path` sent to `addr` with `host` as the Host header.
fn http_status(addr: &str, method: &str, path: &str, host: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the Service");
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
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {response:?}"))
}

/// Through the Service (kube-proxy): probes answer, /mcp refuses unknown Hosts and asks for a
/// token (auth mode tokenreview) from an allowed one.
fn assert_frontend_serves(ns: &str, service: &str) {
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
    assert_eq!(http_status(&addr, "GET", "/readyz", &addr), 200);
    assert_eq!(
        http_status(&addr, "POST", "/mcp", &addr),
        403,
        "ClusterIP is no allowed Host"
    );
    let host = format!("{service}.{ns}.svc:8080");
    assert_eq!(
        http_status(&addr, "POST", "/mcp", &host),
        401,
        "no bearer token"
    );
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
        let tag = mcp_task_operator_tests::stack::image_tag();
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
        assert_frontend_serves(&ns, frontend);
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
