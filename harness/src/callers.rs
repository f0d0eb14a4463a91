//! MCP callers of a Helm-installed front end with the chart's default auth (TokenReview for
//! the release's own [`audience`], RBAC on tools): ServiceAccounts bound to the chart's caller
//! role or to a Role for a few tools, and tokens minted for the front end's audience.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use rand::Rng;

use crate::mcp_client::Reply;
use crate::{TEST_FIELD_MANAGER, kubectl_ok};

/// The chart's `mto.fullname` of release `release` (no name overrides): `<release>-<chart>`,
/// or the release name when it already holds the chart name.
pub fn fullname(release: &str) -> String {
    if release.contains("mcp-task-operator") {
        release.to_owned()
    } else {
        format!("{release}-mcp-task-operator")
    }
}

/// The token audience of release `release` in `ns` with the chart's default (empty)
/// `frontend.auth.tokenReview.audiences`: `mcp-task-operator.<ns>.<fullname>`, which the
/// chart also publishes on the front end Service as `mcptasks.io/token-audience`.
pub fn audience(ns: &str, release: &str) -> String {
    format!("mcp-task-operator.{ns}.{}", fullname(release))
}

/// The chart's example caller ClusterRole of release `release` in `ns`
/// (`<ns>-<fullname>-caller`).
pub fn caller_role(ns: &str, release: &str) -> String {
    format!("{ns}-{}-caller", fullname(release))
}

/// Who a binding names: a ServiceAccount of the namespace, a user or a group.
#[derive(Debug, Clone, Copy)]
pub enum Who<'a> {
    /// ServiceAccount `name` in the binding's namespace.
    ServiceAccount(&'a str),
    /// A user name (static tokens' second column).
    User(&'a str),
    /// A group (static tokens' fourth column, or `system:serviceaccounts:<ns>`).
    Group(&'a str),
}

impl Who<'_> {
    fn subject(self, ns: &str) -> Subject {
        let (kind, name, namespace) = match self {
            Who::ServiceAccount(name) => ("ServiceAccount", name, Some(ns.to_owned())),
            Who::User(name) => ("User", name, None),
            Who::Group(name) => ("Group", name, None),
        };
        Subject {
            api_group: namespace
                .is_none()
                .then(|| "rbac.authorization.k8s.io".to_owned()),
            kind: kind.to_owned(),
            name: name.to_owned(),
            namespace,
        }
    }
}

/// Creates ServiceAccount `name` in `ns` (idempotent: server-side apply).
pub async fn service_account(client: &Client, ns: &str, name: &str) {
    let mut account = ServiceAccount::default();
    account.metadata.name = Some(name.to_owned());
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .patch(name, &apply(), &Patch::Apply(&account))
        .await
        .unwrap_or_else(|e| panic!("apply ServiceAccount {name}: {e}"));
}

/// A token of ServiceAccount `name` in `ns` for `audience` (`None`: the API server's own),
/// valid for an hour.
pub fn token(ns: &str, name: &str, audience: Option<&str>) -> String {
    let mut args = vec!["create", "token", name, "-n", ns, "--duration", "1h"];
    if let Some(audience) = audience {
        args.extend(["--audience", audience]);
    }
    kubectl_ok(&args).trim().to_owned()
}

/// Binds `who` in `ns` to the chart's caller ClusterRole of `release` (every tool).
pub async fn bind_caller_role(
    client: &Client,
    ns: &str,
    release: &str,
    binding: &str,
    who: Who<'_>,
) {
    let role_ref = RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: "ClusterRole".to_owned(),
        name: caller_role(ns, release),
    };
    role_binding(client, ns, binding, role_ref, who).await;
}

/// Lets `who` call exactly the `McpTool`s named `tools` in `ns`: a Role `binding` with verb
/// `call` on them by `resourceNames`, and a RoleBinding of the same name. Applying it again
/// with other tools replaces the list.
pub async fn grant_tools(client: &Client, ns: &str, binding: &str, who: Who<'_>, tools: &[&str]) {
    let mut role = Role::default();
    role.metadata.name = Some(binding.to_owned());
    role.rules = Some(vec![PolicyRule {
        api_groups: Some(vec!["mcptasks.io".to_owned()]),
        resources: Some(vec!["mcptools".to_owned()]),
        verbs: vec!["call".to_owned()],
        resource_names: Some(tools.iter().map(|t| (*t).to_owned()).collect()),
        ..PolicyRule::default()
    }]);
    Api::<Role>::namespaced(client.clone(), ns)
        .patch(binding, &apply(), &Patch::Apply(&role))
        .await
        .unwrap_or_else(|e| panic!("apply Role {binding}: {e}"));
    let role_ref = RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: "Role".to_owned(),
        name: binding.to_owned(),
    };
    role_binding(client, ns, binding, role_ref, who).await;
}

/// A ServiceAccount `name` in `ns`, bound to the caller role of `release` (installed in
/// `ns`), and a token of it for the release's [`audience`]: a client of a release installed
/// with the chart's default auth.
pub async fn caller_token(client: &Client, ns: &str, release: &str, name: &str) -> String {
    service_account(client, ns, name).await;
    bind_caller_role(client, ns, release, name, Who::ServiceAccount(name)).await;
    token(ns, name, Some(&audience(ns, release)))
}

async fn role_binding(client: &Client, ns: &str, name: &str, role_ref: RoleRef, who: Who<'_>) {
    let mut binding = RoleBinding {
        role_ref,
        subjects: Some(vec![who.subject(ns)]),
        ..RoleBinding::default()
    };
    binding.metadata.name = Some(name.to_owned());
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .patch(name, &apply(), &Patch::Apply(&binding))
        .await
        .unwrap_or_else(|e| panic!("apply RoleBinding {name}: {e}"));
}

/// A random bearer token.
pub fn random_token() -> String {
    (0..32)
        .map(|_| char::from(b'a' + rand::rng().random_range(0..26u8)))
        .collect()
}

/// A random bearer token shaped like a JWT (an RS256 header, random payload and signature):
/// the front end cannot refuse it locally, so only a TokenReview tells it is not valid.
pub fn random_jwt() -> String {
    const HEADER: &str = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9"; // {"alg":"RS256","typ":"JWT"}
    let segment = |n: usize| -> String {
        (0..n)
            .map(|_| char::from(b'a' + rand::rng().random_range(0..26u8)))
            .collect()
    };
    format!("{HEADER}.{}.{}", segment(64), segment(86))
}

/// Asserts `reply` is a 401 whose `WWW-Authenticate` is a Bearer challenge with `error`
/// (`None`: no token was sent, so no error is named), and whose body says what failed.
pub fn assert_unauthorized(reply: &Reply, error: Option<&str>) {
    assert_eq!(reply.status, 401, "{}", reply.body);
    let challenge = reply.challenge.as_deref().unwrap_or_default();
    assert!(challenge.starts_with("Bearer"), "challenge: {challenge:?}");
    let says = match error {
        Some(error) => {
            assert!(
                challenge.contains(&format!("error=\"{error}\"")),
                "challenge: {challenge}"
            );
            "the bearer token is not valid"
        }
        None => {
            assert!(!challenge.contains("error="), "challenge: {challenge}");
            "send a bearer token"
        }
    };
    // No JSON-RPC answer, and a body that says what failed.
    let body = reply.body.as_str().unwrap_or_default();
    assert!(body.contains(says), "401 body: {}", reply.body);
}

fn apply() -> PatchParams {
    PatchParams::apply(TEST_FIELD_MANAGER).force()
}
