//! What a ServiceAccount may do, asked of the API server's own authorizer: one request at a time
//! (`SubjectAccessReview`, as `kubectl auth can-i --as` does, with the groups a real token
//! carries) and every rule it holds in a namespace (`SelfSubjectRulesReview`, sent while
//! impersonating it), for least-privilege tests of the chart's RBAC.

use std::collections::BTreeSet;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::config::KubeConfigOptions;
use kube::{Api, Client, Config};

/// One request a ServiceAccount might make: `verb` on `group`/`resource[/subresource]`,
/// optionally one object `name`, in `namespace` (`None`: cluster-scoped or all namespaces).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Request {
    /// The API group ("" for the core group).
    pub group: String,
    /// The resource, with `/subresource` when there is one (`pods/log`).
    pub resource: String,
    /// The verb.
    pub verb: String,
    /// One object's name, for rules with `resourceNames`.
    pub name: Option<String>,
    /// The namespace; `None` for cluster-scoped resources or a request across namespaces.
    pub namespace: Option<String>,
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {group}/{}", self.verb, self.resource)?;
        if let Some(name) = &self.name {
            write!(f, "/{name}")?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in {ns}"),
            None => write!(f, " cluster-wide"),
        }
    }
}

/// The username of ServiceAccount `name` in `ns`.
pub fn service_account_user(ns: &str, name: &str) -> String {
    format!("system:serviceaccount:{ns}:{name}")
}

/// The groups every token of a ServiceAccount in `ns` carries.
fn service_account_groups(ns: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_owned(),
        format!("system:serviceaccounts:{ns}"),
        "system:authenticated".to_owned(),
    ]
}

/// Whether ServiceAccount `sa` of `sa_ns` may make `request`, by a SubjectAccessReview.
pub async fn allowed(client: &Client, sa_ns: &str, sa: &str, request: &Request) -> bool {
    let (resource, subresource) = match request.resource.split_once('/') {
        Some((resource, sub)) => (resource.to_owned(), Some(sub.to_owned())),
        None => (request.resource.clone(), None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(service_account_user(sa_ns, sa)),
            groups: Some(service_account_groups(sa_ns)),
            resource_attributes: Some(ResourceAttributes {
                group: Some(request.group.clone()),
                resource: Some(resource),
                subresource,
                verb: Some(request.verb.clone()),
                name: request.name.clone(),
                namespace: request.namespace.clone(),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap_or_else(|e| panic!("SubjectAccessReview for {sa} ({request}) failed: {e}"));
    answer.status.is_some_and(|s| s.allowed)
}

/// A client of the test cluster that acts as ServiceAccount `sa` of `sa_ns` (impersonation by
/// the admin kubeconfig in `KUBECONFIG`, with the groups the API server gives the account's
/// tokens): what that account may do, admission included.
pub async fn impersonating(sa_ns: &str, sa: &str) -> Client {
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG is set");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path)
        .unwrap_or_else(|e| panic!("cannot read kubeconfig {path}: {e}"));
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is valid");
    config.auth_info.impersonate = Some(service_account_user(sa_ns, sa));
    config.auth_info.impersonate_groups = Some(service_account_groups(sa_ns));
    Client::try_from(config).expect("client builds from kubeconfig")
}

/// Every resource rule ServiceAccount `sa` of `sa_ns` holds in `namespace` (cluster-wide rules
/// included), flattened to one [`Request`] per verb, resource and name, with `namespace` left
/// `None`. Rules every authenticated user holds (`system:basic-user`: reviewing its own access)
/// are left out.
pub async fn rules_in(sa_ns: &str, sa: &str, namespace: &str) -> BTreeSet<Request> {
    let client = impersonating(sa_ns, sa).await;
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec {
            namespace: Some(namespace.to_owned()),
        },
        ..SelfSubjectRulesReview::default()
    };
    let answer = Api::<SelfSubjectRulesReview>::all(client)
        .create(&PostParams::default(), &review)
        .await
        .unwrap_or_else(|e| panic!("SelfSubjectRulesReview as {sa} in {namespace} failed: {e}"));
    let status = answer.status.expect("a rules review has a status");
    assert!(
        !status.incomplete,
        "rules of {sa} in {namespace} are incomplete: {:?}",
        status.evaluation_error
    );
    let mut rules = BTreeSet::new();
    for rule in status.resource_rules {
        let names: Vec<Option<String>> = match rule.resource_names {
            Some(names) if !names.is_empty() => names.into_iter().map(Some).collect(),
            _ => vec![None],
        };
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    for name in &names {
                        rules.insert(Request {
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            name: name.clone(),
                            namespace: None,
                        });
                    }
                }
            }
        }
    }
    rules.retain(|r| !is_basic_user_rule(r));
    rules
}

/// Rules the default `system:basic-user` ClusterRole gives every authenticated user.
fn is_basic_user_rule(rule: &Request) -> bool {
    rule.verb == "create"
        && rule.name.is_none()
        && matches!(
            (rule.group.as_str(), rule.resource.as_str()),
            (
                "authorization.k8s.io",
                "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
            ) | ("authentication.k8s.io", "selfsubjectreviews")
        )
}
