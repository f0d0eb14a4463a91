//! The access reviewer against a mocked API server: what it asks, and how it caches.

use std::collections::BTreeMap;

use axum::http::{Method, Request, Response};
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock;

use super::*;

type Handle = mock::Handle<Request<Body>, Response<Body>>;

fn reviewer() -> (AccessReviewer, Handle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    (
        AccessReviewer::new(client, "tools-ns", ReviewCache::default()),
        handle,
    )
}

fn alice() -> Identity {
    Identity {
        uid: Some("u-1".to_owned()),
        groups: vec!["callers".to_owned()],
        extra: BTreeMap::from([("scopes".to_owned(), vec!["a".to_owned()])]),
        ..Identity::user("alice")
    }
}

/// Answers the next SubjectAccessReview with `allowed` and returns its spec.
async fn answer(handle: &mut Handle, allowed: bool) -> Value {
    let (request, send) = handle.next_request().await.unwrap();
    assert_eq!(request.method(), Method::POST);
    assert_eq!(
        request.uri().path(),
        "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    );
    let bytes = http_body_util::BodyExt::collect(request.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    let answer = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": body["spec"], "status": {"allowed": allowed}});
    send.send_response(Response::new(Body::from(answer.to_string().into_bytes())));
    body["spec"].clone()
}

#[tokio::test]
async fn asks_for_call_on_the_tool_object_with_the_whole_identity() {
    let (reviewer, mut handle) = reviewer();
    let server = tokio::spawn(async move { answer(&mut handle, true).await });
    assert!(reviewer.may_call(&alice(), "greet").await.unwrap());
    assert_eq!(
        server.await.unwrap(),
        json!({
            "user": "alice", "uid": "u-1", "groups": ["callers"], "extra": {"scopes": ["a"]},
            "resourceAttributes": {"namespace": "tools-ns", "verb": "call",
                "group": "mcptasks.io", "resource": "mcptools", "name": "greet"},
        })
    );
    // The handle is gone: a second review would fail, so this answer is the cached one.
    assert!(reviewer.may_call(&alice(), "greet").await.unwrap());
}

#[tokio::test]
async fn concurrent_checks_of_one_caller_and_tool_share_one_review() {
    let (reviewer, mut handle) = reviewer();
    let server = tokio::spawn(async move { answer(&mut handle, true).await });
    let identity = alice();
    let answers =
        futures::future::join_all((0..32).map(|_| reviewer.may_call(&identity, "greet"))).await;
    server.await.unwrap();
    assert!(answers.into_iter().all(|a| a.unwrap()));
}

#[tokio::test]
async fn a_denial_is_cached_per_identity_and_tool() {
    let (reviewer, mut handle) = reviewer();
    let server = tokio::spawn(async move {
        let first = answer(&mut handle, false).await;
        let other_group = answer(&mut handle, true).await;
        let other_tool = answer(&mut handle, false).await;
        (first, other_group, other_tool)
    });
    assert!(!reviewer.may_call(&alice(), "greet").await.unwrap());
    assert!(!reviewer.may_call(&alice(), "greet").await.unwrap());
    let admins = Identity {
        groups: vec!["admins".to_owned()],
        ..alice()
    };
    assert!(reviewer.may_call(&admins, "greet").await.unwrap());
    assert!(!reviewer.may_call(&alice(), "other").await.unwrap());
    let (first, other_group, other_tool) = server.await.unwrap();
    assert_eq!(first["groups"], json!(["callers"]));
    assert_eq!(other_group["groups"], json!(["admins"]));
    assert_eq!(other_tool["resourceAttributes"]["name"], "other");
}

#[tokio::test]
async fn a_failed_review_is_an_error_and_not_cached() {
    let (reviewer, mut handle) = reviewer();
    let server = tokio::spawn(async move {
        let (_, send) = handle.next_request().await.unwrap();
        send.send_error(std::io::Error::other("connection reset"));
        answer(&mut handle, true).await;
    });
    assert!(matches!(
        reviewer.may_call(&alice(), "greet").await,
        Err(AuthzError::Review(_))
    ));
    assert!(reviewer.may_call(&alice(), "greet").await.unwrap());
    server.await.unwrap();
}

#[test]
fn cache_keys_tell_identities_apart() {
    let base = alice();
    let moved_group = Identity {
        groups: vec![],
        extra: BTreeMap::from([
            ("callers".to_owned(), vec![]),
            ("scopes".to_owned(), vec!["a".to_owned()]),
        ]),
        ..alice()
    };
    assert_ne!(cache_key(&base, "greet"), cache_key(&moved_group, "greet"));
    assert_ne!(cache_key(&base, "greet"), cache_key(&base, "greet2"));
    assert_eq!(cache_key(&base, "greet"), cache_key(&alice(), "greet"));
}
