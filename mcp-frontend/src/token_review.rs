//! Kubernetes TokenReview authentication: the API server checks the bearer token (for example
//! a projected ServiceAccount token) against the configured audiences, which must not be empty
//! (MCP forbids accepting tokens issued for another service, such as the API server itself).
//! Answers are cached by the token's SHA-256 ([`crate::review_cache`]), so a polling client
//! does not cost one API call per request and concurrent requests share one review. A token
//! that is not a JWT is refused before any review ([`crate::jwt`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::PostParams;
use kube::{Api, Client};

use crate::auth::{AuthError, Identity, TokenAuthenticator};
use crate::review_cache::{self, ReviewCache};

/// Authenticates bearer tokens with the TokenReview API.
pub struct TokenReviewer {
    api: Api<TokenReview>,
    audiences: Vec<String>,
    cache: ReviewCache<Option<Arc<Identity>>>,
}

impl TokenReviewer {
    /// A reviewer accepting only tokens issued for one of `audiences` (config refuses an empty
    /// list), caching answers in `cache`.
    pub fn new(
        client: Client,
        audiences: Vec<String>,
        cache: ReviewCache<Option<Arc<Identity>>>,
    ) -> Self {
        Self {
            api: Api::all(client),
            audiences,
            cache,
        }
    }

    async fn review(&self, token: &str) -> Result<Option<Arc<Identity>>, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: Some(self.audiences.clone()),
            },
            ..TokenReview::default()
        };
        let answer = self.api.create(&PostParams::default(), &review).await?;
        let Some(status) = answer.status else {
            return Ok(None);
        };
        // The API server only authenticates a token valid for one of the audiences asked; an
        // answer without any of them (an authenticator that ignores audiences) is refused.
        let audience_ok = status
            .audiences
            .as_ref()
            .is_some_and(|granted| granted.iter().any(|a| self.audiences.contains(a)));
        if status.authenticated != Some(true) || !audience_ok {
            return Ok(None);
        }
        let Some(user) = status.user else {
            return Ok(None);
        };
        let Some(name) = user.username.filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        Ok(Some(Arc::new(Identity {
            user: name,
            uid: user.uid.filter(|u| !u.is_empty()),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default(),
        })))
    }
}

impl TokenAuthenticator for TokenReviewer {
    /// ServiceAccount and OIDC tokens are JWTs: anything else is refused before a review.
    fn malformed(&self, token: &str) -> Option<&'static str> {
        crate::jwt::malformed(token)
    }

    fn authenticate<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<Identity>>, AuthError>> {
        Box::pin(async move {
            let key = review_cache::key([token.as_bytes()]);
            self.cache
                .get_or_review(key, self.review(token))
                .await
                .map_err(AuthError::TokenReview)
        })
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{Method, Request, Response};
    use kube::client::Body;
    use serde_json::{Value, json};
    use tower_test::mock;

    use super::*;

    type Handle = mock::Handle<Request<Body>, Response<Body>>;

    fn reviewer() -> (TokenReviewer, Handle) {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let reviewer = TokenReviewer::new(client, vec!["mcp".to_owned()], ReviewCache::default());
        (reviewer, handle)
    }

    /// Answers exactly one TokenReview with `status`, checking what was asked, then drops the
    /// handle: any later review fails, so a test that succeeds afterwards was served from the
    /// cache.
    async fn answer_once(mut handle: Handle, status: Value) {
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(
            request.uri().path(),
            "/apis/authentication.k8s.io/v1/tokenreviews"
        );
        let bytes = http_body_util::BodyExt::collect(request.into_body())
            .await
            .unwrap()
            .to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["spec"], json!({"token": "t0k", "audiences": ["mcp"]}));
        let answer = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {}, "status": status});
        send.send_response(Response::new(Body::from(answer.to_string().into_bytes())));
    }

    fn agent() -> Value {
        json!({"authenticated": true, "audiences": ["mcp"],
            "user": {"username": "system:serviceaccount:apps:agent", "uid": "u-1",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:apps"],
                "extra": {"authentication.kubernetes.io/pod-name": ["agent-0"]}}})
    }

    #[tokio::test]
    async fn reviews_once_then_serves_the_cached_answer() {
        let (reviewer, handle) = reviewer();
        let server = tokio::spawn(answer_once(handle, agent()));
        let identity = reviewer.authenticate("t0k").await.unwrap().unwrap();
        assert_eq!(identity.user, "system:serviceaccount:apps:agent");
        assert_eq!(identity.uid.as_deref(), Some("u-1"));
        assert_eq!(
            identity.groups,
            ["system:serviceaccounts", "system:serviceaccounts:apps"]
        );
        assert_eq!(
            identity.extra["authentication.kubernetes.io/pod-name"],
            ["agent-0"]
        );
        server.await.unwrap();
        // The mock handle is gone, so a second review would fail: the cache answers.
        let again = reviewer.authenticate("t0k").await.unwrap();
        assert_eq!(again.unwrap().user, "system:serviceaccount:apps:agent");
    }

    #[tokio::test]
    async fn concurrent_requests_with_one_token_share_one_review() {
        let (reviewer, handle) = reviewer();
        let server = tokio::spawn(answer_once(handle, agent()));
        // All 32 are waiting before the one review is answered; the mock serves exactly one
        // request, so a second review would make some of them fail.
        let answers =
            futures::future::join_all((0..32).map(|_| reviewer.authenticate("t0k"))).await;
        server.await.unwrap();
        for answer in answers {
            assert_eq!(
                answer.unwrap().unwrap().user,
                "system:serviceaccount:apps:agent"
            );
        }
    }

    #[tokio::test]
    async fn a_refused_token_is_not_reviewed_again_within_the_refusal_ttl() {
        let (reviewer, handle) = reviewer();
        let server = tokio::spawn(answer_once(handle, json!({"authenticated": false})));
        assert_eq!(reviewer.authenticate("t0k").await.unwrap(), None);
        server.await.unwrap();
        assert_eq!(reviewer.authenticate("t0k").await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_answer_without_the_asked_audience_is_refused() {
        let (reviewer, handle) = reviewer();
        let mut status = agent();
        status["audiences"] = json!(["https://kubernetes.default.svc"]);
        let server = tokio::spawn(answer_once(handle, status));
        assert_eq!(reviewer.authenticate("t0k").await.unwrap(), None);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_failed_review_is_not_cached() {
        let (reviewer, mut handle) = reviewer();
        let server = tokio::spawn(async move {
            let (_, send) = handle.next_request().await.unwrap();
            send.send_error(std::io::Error::other("connection reset"));
            answer_once(handle, agent()).await;
        });
        assert!(matches!(
            reviewer.authenticate("t0k").await,
            Err(AuthError::TokenReview(_))
        ));
        let identity = reviewer.authenticate("t0k").await.unwrap().unwrap();
        assert_eq!(identity.user, "system:serviceaccount:apps:agent");
        server.await.unwrap();
    }
}
