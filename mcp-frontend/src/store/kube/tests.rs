//! The kube-backed task store against a mocked API server (`tower_test::mock`).

use std::time::Duration;

use axum::http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use mcp_task_operator_crds::{McpTask, McpTaskSpec};
use serde_json::{Value, json};
use tower_test::mock;

use super::KubeTaskStore;
use crate::store::TaskStore;

type Handle = mock::Handle<Request<Body>, Response<Body>>;

const TASKS: &str = "/apis/mcptasks.io/v1alpha1/namespaces/default/mcptasks";

fn store() -> (std::sync::Arc<KubeTaskStore>, Handle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    // The watch driver is not run: these tests look at the direct API path only.
    let (store, _driver) = KubeTaskStore::new(client, "default");
    (store, handle)
}

fn task_json(id: &str, resource_version: &str) -> Value {
    json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
        "metadata": {"name": id, "namespace": "default", "resourceVersion": resource_version,
            "creationTimestamp": "2026-08-01T12:00:00Z"},
        "spec": {"tool": "t", "owner": "alice"},
    })
}

fn respond(send: mock::SendResponse<Response<Body>>, status: StatusCode, body: &Value) {
    let response = Response::builder()
        .status(status)
        .body(Body::from(body.to_string().into_bytes()))
        .unwrap();
    send.send_response(response);
}

async fn body_json(request: Request<Body>) -> Value {
    let bytes = http_body_util::BodyExt::collect(request.into_body())
        .await
        .unwrap()
        .to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn create_posts_the_task_and_the_next_get_reads_it_without_a_request() {
    let (store, mut handle) = store();
    let server = tokio::spawn(async move {
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(request.uri().path(), TASKS);
        let body = body_json(request).await;
        assert_eq!(body["spec"]["owner"], "alice");
        respond(send, StatusCode::CREATED, &task_json("abc", "7"));
        handle
    });
    let task = McpTask::new(
        "abc",
        serde_json::from_value::<McpTaskSpec>(json!({"tool": "t", "owner": "alice"})).unwrap(),
    );
    let stored = store.create(task).await.unwrap();
    assert_eq!(stored.metadata.resource_version.as_deref(), Some("7"));
    let _handle = server.await.unwrap();
    // Read-your-writes: served from the overlay, so no further request reaches the mock.
    let got = tokio::time::timeout(Duration::from_secs(1), store.get("abc"))
        .await
        .expect("no API request for an own write")
        .unwrap();
    assert_eq!(got.unwrap().metadata.resource_version.as_deref(), Some("7"));
}

#[tokio::test]
async fn a_cache_miss_reads_the_api_server_and_404_is_none() {
    let (store, mut handle) = store();
    let server = tokio::spawn(async move {
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.method(), Method::GET);
        assert_eq!(request.uri().path(), format!("{TASKS}/abc"));
        respond(send, StatusCode::OK, &task_json("abc", "3"));
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.uri().path(), format!("{TASKS}/gone"));
        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": "not found"});
        respond(send, StatusCode::NOT_FOUND, &status);
    });
    assert!(store.get("abc").await.unwrap().is_some());
    assert!(store.get("gone").await.unwrap().is_none());
    server.await.unwrap();
}

#[tokio::test]
async fn writes_are_merge_patches_of_input_responses_and_the_cancel_annotation() {
    let (store, mut handle) = store();
    let server = tokio::spawn(async move {
        for expected in ["inputResponses", "cancel"] {
            let (request, send) = handle.next_request().await.unwrap();
            assert_eq!(request.method(), Method::PATCH);
            assert_eq!(
                request.headers()["content-type"],
                "application/merge-patch+json"
            );
            let body = body_json(request).await;
            match expected {
                "inputResponses" => assert_eq!(
                    body,
                    json!({"spec": {"inputResponses": {"a": {"action": "accept"}}}})
                ),
                _ => assert!(
                    body["metadata"]["annotations"]["mcptasks.io/cancel-requested"].is_string()
                ),
            }
            respond(send, StatusCode::OK, &task_json("abc", "9"));
        }
    });
    let answers = [("a".to_owned(), json!({"action": "accept"}))]
        .into_iter()
        .collect();
    store.merge_input_responses("abc", answers).await.unwrap();
    store
        .request_cancel("abc", k8s_openapi::jiff::Timestamp::now())
        .await
        .unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn a_404_is_remembered_briefly_and_a_create_of_that_id_forgets_it() {
    let (store, mut handle) = store();
    let not_found = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": "NotFound", "code": 404, "message": "not found"});
    let server = tokio::spawn(async move {
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.method(), Method::GET);
        respond(send, StatusCode::NOT_FOUND, &not_found);
        // The only other request is the create: the repeated get costs none.
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.method(), Method::POST);
        respond(send, StatusCode::CREATED, &task_json("abc", "7"));
    });
    assert!(store.get("abc").await.unwrap().is_none());
    assert!(store.get("abc").await.unwrap().is_none());
    assert_eq!(store.lookups().count("api"), 1);
    assert_eq!(store.lookups().count("negative_cache"), 1);
    let task = McpTask::new(
        "abc",
        serde_json::from_value::<McpTaskSpec>(json!({"tool": "t", "owner": "alice"})).unwrap(),
    );
    store.create(task).await.unwrap();
    server.await.unwrap();
    assert!(store.get("abc").await.unwrap().is_some());
}

#[tokio::test]
async fn own_creates_count_as_active_at_once() {
    let (store, mut handle) = store();
    let server = tokio::spawn(async move {
        for (id, version) in [("a", "1"), ("b", "2")] {
            let (_, send) = handle.next_request().await.unwrap();
            respond(send, StatusCode::CREATED, &task_json(id, version));
        }
    });
    for id in ["a", "b"] {
        let spec = json!({"tool": "t", "owner": "alice"});
        let task = McpTask::new(id, serde_json::from_value::<McpTaskSpec>(spec).unwrap());
        store.create(task).await.unwrap();
    }
    server.await.unwrap();
    assert_eq!(store.held("alice").active, 2);
    assert_eq!(store.held("bob").active, 0);
}

#[tokio::test]
async fn an_own_write_the_watch_already_delivered_stays_out_of_the_overlay() {
    use kube::core::DeserializeGuard;
    use kube::runtime::{reflector, watcher};
    let (service, _handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let (cache, mut writer) = reflector::store();
    let store = KubeTaskStore::over(client, "default", cache, Duration::from_secs(1));
    let at =
        |version: &str| -> McpTask { serde_json::from_value(task_json("t1", version)).unwrap() };
    // The watch's event for version 5 came before the create's own answer.
    let event = watcher::Event::Apply(DeserializeGuard(Ok(at("5"))));
    store.apply(&mut writer, Ok(event));
    assert!(store.keep(&std::sync::Arc::new(at("5"))));
    assert!(
        store.overlay.lock().unwrap().is_empty(),
        "the cache holds it"
    );
    assert!(store.keep(&std::sync::Arc::new(at("6"))));
    assert_eq!(
        store.overlay.lock().unwrap().len(),
        1,
        "newer than the cache"
    );
    assert_eq!(store.cached_version("t1").as_deref(), Some("6"));
}
