//! The access table of the chart's two ServiceAccounts, derived from the API calls in
//! `operator/src` and `mcp-frontend/src`: what each must be allowed, a list of dangerous
//! requests neither may make, and the exact rules each must hold, checked against a release
//! with [`crate::access`].

use std::collections::BTreeSet;

use futures::StreamExt;
use kube::Client;

use crate::access::{Request, allowed, rules_in};

/// What the operator calls (operator/src): group, resource, verbs. Plus get and update on its
/// one Lease, in the release namespace only.
const OPERATOR_NEEDS: &[(&str, &str, &str)] = &[
    // Controller watch, a fresh read before a terminal write, delete on TTL expiry.
    ("mcptasks.io", "mcptasks", "get,list,watch,delete"),
    // Status by server-side apply.
    ("mcptasks.io", "mcptasks/status", "patch"),
    // The Job's owner reference with blockOwnerDeletion.
    ("mcptasks.io", "mcptasks/finalizers", "update"),
    // Controller watch and the tool lookup; the McpServer controller applies and deletes the
    // McpTools of a server.
    ("mcptasks.io", "mcptools", "list,watch,create,patch,delete"),
    // The Ready condition.
    ("mcptasks.io", "mcptools/status", "patch"),
    // The task's Job: owned watch, get, server-side apply (patch that creates), delete.
    ("batch", "jobs", "get,list,watch,create,patch,delete"),
    // The Job's pod: watched, listed, annotated.
    ("", "pods", "list,watch,patch"),
    // The tool container's stdout.
    ("", "pods/log", "get"),
    // Events on transitions (a repeat is patched into a series); the Job controller's
    // FailedCreate Events (a task whose pods are refused).
    ("events.k8s.io", "events", "create,patch,list"),
    // The McpServer controller: watch, status, owner references of its Jobs and McpTools.
    ("mcptasks.io", "mcpservers", "list,watch"),
    ("mcptasks.io", "mcpservers/status", "patch"),
    ("mcptasks.io", "mcpservers/finalizers", "update"),
];

/// What the front end calls (mcp-frontend/src), in the one namespace it serves. Plus create
/// on the cluster-scoped tokenreviews (auth mode tokenreview) and subjectaccessreviews
/// (authorization mode rbac), both chart defaults.
const FRONTEND_NEEDS: &[(&str, &str, &str)] = &[
    // Watch cache, direct read on a miss, tools/call, tasks/update and tasks/cancel.
    ("mcptasks.io", "mcptasks", "get,list,watch,create,patch"),
    // The tool catalogue.
    ("mcptasks.io", "mcptools", "list,watch"),
];

/// Requests neither ServiceAccount may make anywhere: group, resource, verbs, namespaced.
const DANGEROUS: &[(&str, &str, &str, bool)] = &[
    ("*", "*", "*", true),
    ("", "secrets", "get,list,watch", true),
    ("", "configmaps", "get,list,create,update", true),
    (
        "",
        "pods",
        "create,get,update,delete,deletecollection",
        true,
    ),
    ("", "pods/exec", "create,get", true),
    ("", "pods/attach", "create", true),
    ("", "pods/portforward", "create", true),
    ("", "pods/ephemeralcontainers", "patch,update", true),
    ("", "pods/eviction", "create", true),
    ("", "serviceaccounts", "get,create,impersonate", true),
    ("", "serviceaccounts/token", "create", true),
    ("", "services", "create,update,patch", true),
    ("", "events", "create", true),
    ("", "persistentvolumeclaims", "create", true),
    ("", "namespaces", "get,create,delete", false),
    ("", "nodes", "get,list", false),
    ("", "nodes/proxy", "get,create", false),
    ("", "persistentvolumes", "create", false),
    ("", "users", "impersonate", false),
    ("", "groups", "impersonate", false),
    ("apps", "deployments", "create,update,patch,delete", true),
    ("apps", "daemonsets", "create", true),
    ("batch", "cronjobs", "create", true),
    ("batch", "jobs", "update,deletecollection", true),
    (
        "rbac.authorization.k8s.io",
        "roles",
        "create,update,escalate,bind",
        true,
    ),
    ("rbac.authorization.k8s.io", "rolebindings", "create", true),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "create,escalate,bind",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "create",
        false,
    ),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "create,update,patch,delete",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        "create",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        "create",
        false,
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        "create",
        false,
    ),
    ("coordination.k8s.io", "leases", "create,list,delete", true),
    ("mcptasks.io", "mcptools", "update,deletecollection", true),
    (
        "mcptasks.io",
        "mcpservers",
        "create,update,patch,delete",
        true,
    ),
    ("mcptasks.io", "mcptasks", "update,deletecollection", true),
];

/// Requests the operator must not make (the front end's job).
const OPERATOR_MUST_NOT: &[(&str, &str, &str)] = &[
    ("mcptasks.io", "mcptasks", "create,patch"),
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
];
/// Requests the front end must not make (the operator's job).
const FRONTEND_MUST_NOT: &[(&str, &str, &str)] = &[
    ("mcptasks.io", "mcptasks", "delete"),
    ("mcptasks.io", "mcptasks/status", "patch,update"),
    ("mcptasks.io", "mcptools/status", "patch"),
    ("mcptasks.io", "mcptools", "create,patch,delete"),
    ("mcptasks.io", "mcpservers", "list,watch"),
    ("batch", "jobs", "get,list,create,patch,delete"),
    ("", "pods", "list,watch,patch"),
    ("", "pods/log", "get"),
    ("events.k8s.io", "events", "create"),
    ("coordination.k8s.io", "leases", "get,update"),
];

fn request(group: &str, resource: &str, verb: &str, namespace: Option<&str>) -> Request {
    Request {
        group: group.to_owned(),
        resource: resource.to_owned(),
        verb: verb.to_owned(),
        name: None,
        namespace: namespace.map(str::to_owned),
    }
}

/// `(group, resource, verbs)` rows as one request per verb, in `namespace`.
fn expand(rows: &[(&str, &str, &str)], namespace: Option<&str>) -> Vec<Request> {
    rows.iter()
        .flat_map(|(group, resource, verbs)| {
            verbs
                .split(',')
                .map(move |verb| request(group, resource, verb, namespace))
        })
        .collect()
}

/// One release's two ServiceAccounts and what each must and must not be allowed.
struct Expected {
    sa: String,
    allow: Vec<Request>,
    deny: Vec<Request>,
    /// Every rule it must hold in the release namespace and in another one, exactly.
    rules_home: BTreeSet<Request>,
    rules_elsewhere: BTreeSet<Request>,
}

/// The access table of release `release` in `ns`, namespace- or cluster-scoped, with the
/// default auth (tokenreview) and authorization (rbac); `other` is a namespace of somebody
/// else.
fn expected(ns: &str, release: &str, cluster: bool, other: &str) -> [Expected; 2] {
    let operator = format!("{release}-mcp-task-operator-operator");
    let frontend = format!("{release}-mcp-task-operator-mcp-frontend");
    let lease = |verb: &str, name: &str, namespace: &str| Request {
        name: Some(name.to_owned()),
        ..request("coordination.k8s.io", "leases", verb, Some(namespace))
    };
    let tokenreview = |verb: &str| request("authentication.k8s.io", "tokenreviews", verb, None);
    let access_review =
        |verb: &str| request("authorization.k8s.io", "subjectaccessreviews", verb, None);
    let dangerous = |namespace: Option<&str>| -> Vec<Request> {
        DANGEROUS
            .iter()
            .filter(|row| row.3 || namespace.is_none())
            .flat_map(|(group, resource, verbs, _)| {
                verbs
                    .split(',')
                    .map(move |verb| request(group, resource, verb, namespace))
            })
            .collect()
    };
    let everywhere = [Some(ns), Some(other), None];

    // The operator: its needs at home, and elsewhere (and across namespaces) only cluster-wide.
    let mut op_allow = expand(OPERATOR_NEEDS, Some(ns));
    let mut op_deny = Vec::new();
    for namespace in [Some(other), None] {
        let rows = expand(OPERATOR_NEEDS, namespace);
        if cluster {
            op_allow.extend(rows);
        } else {
            op_deny.extend(rows);
        }
    }
    op_allow.extend(["get", "update"].map(|v| lease(v, &operator, ns)));
    op_deny.extend(["get", "update"].map(|v| lease(v, &operator, other)));
    op_deny.push(lease("update", "someone-elses-lease", ns));
    op_deny.push(tokenreview("create"));
    op_deny.push(access_review("create"));
    for namespace in everywhere {
        op_deny.extend(dangerous(namespace));
        op_deny.extend(expand(OPERATOR_MUST_NOT, namespace));
    }

    // The front end: its one namespace only, in both scopes; the reviews cluster-wide.
    let mut fe_allow = expand(FRONTEND_NEEDS, Some(ns));
    fe_allow.push(tokenreview("create"));
    fe_allow.push(access_review("create"));
    let mut fe_deny = Vec::new();
    for namespace in [Some(other), None] {
        fe_deny.extend(expand(FRONTEND_NEEDS, namespace));
    }
    for namespace in everywhere {
        fe_deny.extend(dangerous(namespace));
        fe_deny.extend(expand(FRONTEND_MUST_NOT, namespace));
    }

    let as_rules = |rows: &[(&str, &str, &str)]| -> BTreeSet<Request> {
        expand(rows, None).into_iter().collect()
    };
    let op_needs = as_rules(OPERATOR_NEEDS);
    let mut op_home = op_needs.clone();
    op_home.extend(["get", "update"].map(|v| Request {
        namespace: None,
        ..lease(v, &operator, ns)
    }));
    let op_elsewhere = if cluster { op_needs } else { BTreeSet::new() };
    let reviews: BTreeSet<Request> = [tokenreview("create"), access_review("create")].into();
    let mut fe_home = as_rules(FRONTEND_NEEDS);
    fe_home.extend(reviews.clone());
    [
        Expected {
            sa: operator,
            allow: op_allow,
            deny: op_deny,
            rules_home: op_home,
            rules_elsewhere: op_elsewhere,
        },
        Expected {
            sa: frontend,
            allow: fe_allow,
            deny: fe_deny,
            rules_home: fe_home,
            rules_elsewhere: reviews,
        },
    ]
}

/// Checks release `release` in `ns` (installed with `rbac.scope` cluster when `cluster`, else
/// namespace, and the default auth and authorization modes) against the table: every request by SubjectAccessReview
/// and the rules each ServiceAccount holds at home and in `kube-system`. Returns the failures
/// (empty when all hold) and the number of checks made.
pub async fn check_release_access(
    client: &Client,
    ns: &str,
    release: &str,
    cluster: bool,
) -> (Vec<String>, usize) {
    let other = "kube-system";
    let mut failures = Vec::new();
    let mut checks = 0;
    for want in expected(ns, release, cluster, other) {
        let cases: Vec<(Request, bool)> = want
            .allow
            .iter()
            .map(|r| (r.clone(), true))
            .chain(want.deny.iter().map(|r| (r.clone(), false)))
            .collect();
        checks += cases.len();
        let answers: Vec<(Request, bool, bool)> = futures::stream::iter(cases)
            .map(|(r, should)| {
                let sa = want.sa.clone();
                async move {
                    let got = allowed(client, ns, &sa, &r).await;
                    (r, should, got)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        for (r, should, got) in answers {
            if should != got {
                let verdict = if should {
                    "must be allowed"
                } else {
                    "must be denied"
                };
                failures.push(format!("{}: {r} {verdict}", want.sa));
            }
        }
        for (namespace, rules) in [(ns, &want.rules_home), (other, &want.rules_elsewhere)] {
            checks += 1;
            let held = rules_in(ns, &want.sa, namespace).await;
            let extra: Vec<String> = held.difference(rules).map(ToString::to_string).collect();
            let missing: Vec<String> = rules.difference(&held).map(ToString::to_string).collect();
            if !extra.is_empty() || !missing.is_empty() {
                failures.push(format!(
                    "{} in {namespace}: holds more than needed {extra:?}, lacks {missing:?}",
                    want.sa
                ));
            }
        }
    }
    (failures, checks)
}
