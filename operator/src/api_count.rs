//! Counts every Kubernetes API request the operator makes, by verb and resource
//! (`mcp_operator_api_requests_total`), so its cost per task can be read from the operator
//! alone, apart from other clients of a shared API server (`make scale`, docs/BENCHMARKS.md).
//!
//! The labels are fixed strings: the verb from the method and the query (`get`, `list`,
//! `watch`, `create`, `patch`, `update`, `delete`, `deletecollection`), the resource from the
//! path, one of [`RESOURCES`] (with its subresource, as `pods/log`) or `other`.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{Method, Request};
use tower::{Layer, Service};

use crate::metrics::Metrics;

/// The resources (and subresources) counted by name; any other path counts as `other`.
pub const RESOURCES: [&str; 16] = [
    "jobs",
    "pods",
    "pods/log",
    "events",
    "leases",
    "mcptasks",
    "mcptasks/status",
    "mcptools",
    "mcptools/status",
    "mcpservers",
    "mcpservers/status",
    "namespaces",
    "services",
    "deployments",
    "serviceaccounts",
    "secrets",
];

/// The verb and resource of a request to `path` (with `query`) by `method`.
pub fn classify(method: &Method, path: &str, query: Option<&str>) -> (&'static str, &'static str) {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // `/api/v1/...` or `/apis/<group>/<version>/...`.
    let rest: &[&str] = match segments.first() {
        Some(&"api") => segments.get(2..).unwrap_or_default(),
        Some(&"apis") => segments.get(3..).unwrap_or_default(),
        _ => &[],
    };
    // `namespaces/<ns>/<resource>...`; `namespaces/<ns>` alone is a namespace.
    let rest = match rest {
        ["namespaces", _, resource, more @ ..] => [&[*resource][..], more].concat(),
        other => other.to_vec(),
    };
    let (resource, named) = match rest.as_slice() {
        [resource] => (resource.to_string(), false),
        [resource, _name] => (resource.to_string(), true),
        [resource, _name, sub, ..] => (format!("{resource}/{sub}"), true),
        [] => (String::new(), false),
    };
    let resource = RESOURCES
        .iter()
        .find(|r| **r == resource)
        .copied()
        .unwrap_or("other");
    let watch = query.is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match *method {
        Method::GET if watch => "watch",
        Method::GET if named => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PATCH => "patch",
        Method::PUT => "update",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "other",
    };
    (verb, resource)
}

/// A tower layer counting each request in [`Metrics::api_request`].
#[derive(Debug, Clone)]
pub struct CountLayer(pub Arc<Metrics>);

impl<S> Layer<S> for CountLayer {
    type Service = Count<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Count {
            inner,
            metrics: Arc::clone(&self.0),
        }
    }
}

/// The service [`CountLayer`] makes.
#[derive(Debug, Clone)]
pub struct Count<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B> Service<Request<B>> for Count<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let (verb, resource) = classify(
            request.method(),
            request.uri().path(),
            request.uri().query(),
        );
        self.metrics.api_request(verb, resource);
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_classified_by_verb_and_resource() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/t/pods",
                Some("labelSelector=a"),
                ("list", "pods"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/t/pods",
                Some("watch=true&x=1"),
                ("watch", "pods"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/t/pods/p/log",
                Some("follow=true"),
                ("get", "pods/log"),
            ),
            (
                Method::POST,
                "/apis/batch/v1/namespaces/t/jobs",
                None,
                ("create", "jobs"),
            ),
            (
                Method::DELETE,
                "/apis/batch/v1/namespaces/t/jobs/j",
                None,
                ("delete", "jobs"),
            ),
            (
                Method::DELETE,
                "/apis/batch/v1/namespaces/t/jobs",
                None,
                ("deletecollection", "jobs"),
            ),
            (
                Method::PATCH,
                "/apis/mcptasks.io/v1alpha1/namespaces/t/mcptasks/x/status",
                None,
                ("patch", "mcptasks/status"),
            ),
            (
                Method::GET,
                "/apis/mcptasks.io/v1alpha1/mcptasks",
                Some("limit=1"),
                ("list", "mcptasks"),
            ),
            (
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/t/leases/l",
                None,
                ("update", "leases"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/t",
                None,
                ("get", "namespaces"),
            ),
            (
                Method::GET,
                "/apis/apps/v1/namespaces/t/replicasets",
                None,
                ("list", "other"),
            ),
            (Method::GET, "/version", None, ("list", "other")),
        ];
        for (method, path, query, expected) in cases {
            assert_eq!(classify(&method, path, query), expected, "{method} {path}");
        }
    }
}
