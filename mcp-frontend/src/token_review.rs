//! Kubernetes TokenReview authentication: the API server checks the bearer token (for example
//! a projected ServiceAccount token) against the configured audiences. Answers are cached
//! briefly so a polling client does not cost one API call per request.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::PostParams;
use kube::{Api, Client};

use crate::auth::{AuthError, Caller, TokenAuthenticator};

/// How long a review's answer is reused.
const CACHE_TTL: Duration = Duration::from_secs(30);
/// Cached answers kept at most; the cache is emptied when it would grow past this.
const CACHE_LIMIT: usize = 10_000;

/// Authenticates bearer tokens with the TokenReview API.
pub struct TokenReviewer {
    api: Api<TokenReview>,
    audiences: Vec<String>,
    cache: Mutex<HashMap<String, (Instant, Option<Caller>)>>,
}

impl TokenReviewer {
    /// A reviewer asking for `audiences` (empty: the API server's own audience).
    pub fn new(client: Client, audiences: Vec<String>) -> Self {
        Self {
            api: Api::all(client),
            audiences,
            cache: Mutex::default(),
        }
    }

    fn cached(&self, token: &str) -> Option<Option<Caller>> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(token)
            .filter(|(at, _)| at.elapsed() < CACHE_TTL)
            .map(|(_, caller)| caller.clone())
    }

    fn remember(&self, token: &str, caller: Option<Caller>) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(token.to_owned(), (Instant::now(), caller));
    }

    async fn review(&self, token: &str) -> Result<Option<Caller>, AuthError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: (!self.audiences.is_empty()).then(|| self.audiences.clone()),
            },
            ..TokenReview::default()
        };
        let answer = self
            .api
            .create(&PostParams::default(), &review)
            .await
            .map_err(AuthError::TokenReview)?;
        let Some(status) = answer.status else {
            return Ok(None);
        };
        // The API server only authenticates a token valid for one of the audiences asked.
        let audience_ok = self.audiences.is_empty()
            || status
                .audiences
                .as_ref()
                .is_some_and(|granted| granted.iter().any(|a| self.audiences.contains(a)));
        if status.authenticated != Some(true) || !audience_ok {
            return Ok(None);
        }
        Ok(status
            .user
            .and_then(|u| u.username)
            .filter(|u| !u.is_empty())
            .map(Caller))
    }
}

impl TokenAuthenticator for TokenReviewer {
    fn authenticate<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<Caller>, AuthError>> {
        Box::pin(async move {
            if let Some(caller) = self.cached(token) {
                return Ok(caller);
            }
            let caller = self.review(token).await?;
            self.remember(token, caller.clone());
            Ok(caller)
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

    #[tokio::test]
    async fn reviews_once_then_serves_the_cached_answer() {
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let reviewer = TokenReviewer::new(Client::new(service, "default"), vec!["mcp".to_owned()]);
        let server = tokio::spawn(async move {
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
                "spec": {}, "status": {"authenticated": true, "audiences": ["mcp"],
                "user": {"username": "system:serviceaccount:apps:agent"}}});
            send.send_response(Response::new(Body::from(answer.to_string().into_bytes())));
        });
        let caller = reviewer.authenticate("t0k").await.unwrap();
        assert_eq!(
            caller,
            Some(Caller("system:serviceaccount:apps:agent".to_owned()))
        );
        server.await.unwrap();
        // The mock handle is gone, so a second review would fail: the cache answers.
        let again = reviewer.authenticate("t0k").await.unwrap();
        assert_eq!(again.unwrap().as_str(), "system:serviceaccount:apps:agent");
    }
}
