//! The Helm chart: `helm lint` is clean, both RBAC scopes render restricted pods with least
//! privilege, and a namespace-scoped release that owns the CRDs installs, upgrades to a changed
//! chart (CRDs included) and uninstalls leaving nothing of ours but the CRDs. The exact access
//! of each ServiceAccount in both scopes is `security.rs`'s.

mod apf;
#[path = "../common/mod.rs"]
mod common;
mod lifecycle;

use common::helm::{of_kind, template};
use mcp_task_operator_harness::{chart_dir, helm};
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
    common::helm::render(RELEASE, Some(ns), sets)
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
    // The binaries' two, and the two `helm test` pods' (test hooks that mount no token
    // themselves: the MCP call's and the admission policies').
    let accounts = of_kind(docs, "ServiceAccount");
    assert_eq!(accounts.len(), 4);
    let hooks: Vec<_> = accounts
        .iter()
        .filter(|a| a["metadata"]["annotations"]["helm.sh/hook"] == "test")
        .collect();
    assert_eq!(hooks.len(), 2, "{accounts:#?}");
    for hook in hooks {
        assert_eq!(hook["automountServiceAccountToken"], false);
    }
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
    // The default audience is the release's own (namespace and fullname), never the API
    // server's, and the Service publishes it for `kubectl mcp`.
    let frontend = named(
        &namespaced,
        "Deployment",
        "mto-mcp-task-operator-mcp-frontend",
    );
    let container = &frontend["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        env(container, "MCP_FRONTEND_TOKEN_AUDIENCES").unwrap()["value"],
        "mcp-task-operator.tools.mto-mcp-task-operator"
    );
    let own = "mcp-task-operator.tools.mto-mcp-task-operator";
    assert_audiences(&[], own, own);
    assert_audiences(&["frontend.auth.tokenReview.audiences=null"], own, own);
    // An explicit list is used as given; its first entry is published, over any value.
    assert_audiences(
        &[
            "frontend.auth.tokenReview.audiences={shared,other}",
            "frontend.service.annotations.mcptasks\\.io/token-audience=forged",
        ],
        "shared,other",
        "shared",
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

    // With static tokens and no authorization a namespace-scoped release grants nothing
    // cluster-wide at all (its admission policies are cluster objects bound to its namespace).
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
    // Nor does its Service name a token audience: no token is minted for static tokens.
    let service = named(
        &static_auth,
        "Service",
        "mto-mcp-task-operator-mcp-frontend",
    );
    assert!(service["metadata"]["annotations"]["mcptasks.io/token-audience"].is_null());

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
        &["frontend.authorization.mode=abac"],
    ] {
        let refused = !template(RELEASE, None, bad).status.success();
        assert!(refused, "{bad:?} must be refused");
    }
}

/// With `sets`, the front end of release mto in namespace tools accepts `audiences` (its
/// `MCP_FRONTEND_TOKEN_AUDIENCES`), and its Service and the `helm test` pod's token name the
/// first, `published`.
fn assert_audiences(sets: &[&str], audiences: &str, published: &str) {
    let mut sets = sets.to_vec();
    sets.push("test.tool=greet");
    let docs = render("tools", &sets);
    let frontend = named(&docs, "Deployment", "mto-mcp-task-operator-mcp-frontend");
    let container = &frontend["spec"]["template"]["spec"]["containers"][0];
    let accepted = &env(container, "MCP_FRONTEND_TOKEN_AUDIENCES").expect("audiences")["value"];
    assert_eq!(accepted, audiences, "{sets:?}");
    let service = named(&docs, "Service", "mto-mcp-task-operator-mcp-frontend");
    let annotation = &service["metadata"]["annotations"]["mcptasks.io/token-audience"];
    assert_eq!(annotation, published, "{sets:?}");
    let test_pod = of_kind(&docs, "Pod")
        .into_iter()
        .find(|p| p["spec"]["volumes"][0]["name"] == "token")
        .expect("the helm test pod with a token");
    let projected = &test_pod["spec"]["volumes"][0]["projected"]["sources"][0];
    assert_eq!(projected["serviceAccountToken"]["audience"], published);
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

#[test]
fn the_admission_policies_bind_to_the_namespaces_the_release_serves() {
    let selector = |docs: &[Value], kind: &str| {
        let binding = named(
            docs,
            "ValidatingAdmissionPolicyBinding",
            &format!("tools-mto-mcp-task-operator-task-{kind}"),
        );
        assert_eq!(
            binding["spec"]["validationActions"],
            serde_json::json!(["Deny"])
        );
        assert_eq!(
            binding["spec"]["policyName"],
            format!("tools-mto-mcp-task-operator-task-{kind}")
        );
        binding["spec"]["matchResources"]["namespaceSelector"].clone()
    };
    // On by default; with `rbac.scope: cluster` in every namespace, or those selected.
    let cluster = render("tools", &[]);
    for kind in ["pods", "jobs"] {
        let policy = named(
            &cluster,
            "ValidatingAdmissionPolicy",
            &format!("tools-mto-mcp-task-operator-task-{kind}"),
        );
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
        assert_eq!(selector(&cluster, kind), serde_json::json!({}));
    }
    // The Job policy trusts this release's operator ServiceAccount.
    let jobs = named(
        &cluster,
        "ValidatingAdmissionPolicy",
        "tools-mto-mcp-task-operator-task-jobs",
    );
    let variables = jobs["spec"]["variables"].to_string();
    assert!(
        variables.contains("system:serviceaccount:tools:mto-mcp-task-operator-operator"),
        "{variables}"
    );
    let own = serde_json::json!({"matchLabels": {"kubernetes.io/metadata.name": "tools"}});
    let namespaced = render("tools", &["rbac.scope=namespace"]);
    assert_eq!(selector(&namespaced, "pods"), own);
    assert_eq!(selector(&namespaced, "jobs"), own);
    let selected = render(
        "tools",
        &["admissionPolicy.namespaceSelector.matchLabels.team=search"],
    );
    assert_eq!(
        selector(&selected, "pods"),
        serde_json::json!({"matchLabels": {"team": "search"}})
    );
    let off = render("tools", &["admissionPolicy.enabled=false"]);
    assert!(of_kind(&off, "ValidatingAdmissionPolicy").is_empty());
    assert!(of_kind(&off, "ValidatingAdmissionPolicyBinding").is_empty());
}
