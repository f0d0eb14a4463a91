//! Deletions in the kube-backed store, driven through its watch-event path with a reflector of
//! the test's own and a mocked API server that must see no request.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher::Event;
use mcp_task_operator_crds::McpTask;
use serde_json::json;
use tower_test::mock;

use super::KubeTaskStore;
use crate::store::{TaskStore, is_deleted};

type Handle = mock::Handle<Request<Body>, Response<Body>>;

fn store() -> (
    Arc<KubeTaskStore>,
    Writer<DeserializeGuard<McpTask>>,
    Handle,
) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let (cache, writer) = reflector::store();
    let client = Client::new(service, "default");
    let store = KubeTaskStore::over(client, "default", cache, Duration::from_secs(10));
    (Arc::new(store), writer, handle)
}

fn task(id: &str, resource_version: &str) -> McpTask {
    serde_json::from_value(json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
        "metadata": {"name": id, "namespace": "default", "uid": format!("uid-{id}"),
            "resourceVersion": resource_version, "creationTimestamp": "2026-08-01T12:00:00Z"},
        "spec": {"tool": "t", "owner": "alice"},
    }))
    .unwrap()
}

fn guard(task: McpTask) -> DeserializeGuard<McpTask> {
    DeserializeGuard(Ok(task))
}

/// `store.get(id)` answered without any API request (the mock never answers: a request
/// would hang, and the timeout turns that into a failure).
async fn get_offline(store: &KubeTaskStore, id: &str) -> Option<Arc<McpTask>> {
    tokio::time::timeout(Duration::from_secs(5), store.get(id))
        .await
        .expect("answered without asking the API server")
        .unwrap()
}

#[tokio::test]
async fn a_write_answered_after_the_delete_event_is_not_served_again() {
    let (store, mut writer, _handle) = store();
    let mut changes = store.subscribe();
    store.apply(&mut writer, Ok(Event::Init));
    store.apply(&mut writer, Ok(Event::InitApply(guard(task("abc", "5")))));
    store.apply(&mut writer, Ok(Event::InitDone));
    assert_eq!(changes.recv().await.unwrap().task_id(), "abc");

    store.apply(&mut writer, Ok(Event::Delete(guard(task("abc", "6")))));
    let published = changes.recv().await.unwrap();
    assert_eq!(published.task_id(), "abc");
    assert!(is_deleted(&published), "published marked deleted");

    // A cancel patch sent before the deletion, answered after the watch reported it.
    store.remember(task("abc", "5"));
    assert!(get_offline(&store, "abc").await.is_none());
    assert_eq!(store.held("alice").active, 0);
    assert!(
        changes.try_recv().is_err(),
        "the late write is not published"
    );
}

#[tokio::test]
async fn tasks_missing_from_a_fresh_list_are_published_deleted_and_not_served() {
    let (store, mut writer, _handle) = store();
    store.apply(&mut writer, Ok(Event::Init));
    store.apply(&mut writer, Ok(Event::InitApply(guard(task("kept", "1")))));
    store.apply(
        &mut writer,
        Ok(Event::InitApply(guard(task("cached", "2")))),
    );
    store.apply(&mut writer, Ok(Event::InitDone));
    // Created by this replica; the watch never showed it before it went away.
    store.remember(task("own", "3"));
    let mut changes = store.subscribe();

    // The watch lost its place (an outage, a 410) and lists afresh: both deletions happened
    // while it was away, so no delete event will ever come for them.
    store.apply(&mut writer, Ok(Event::Init));
    store.apply(&mut writer, Ok(Event::InitApply(guard(task("kept", "1")))));
    store.apply(&mut writer, Ok(Event::InitDone));

    let mut deleted = Vec::new();
    while let Ok(change) = changes.try_recv() {
        if is_deleted(&change) {
            deleted.push(change.task_id().to_owned());
        }
    }
    deleted.sort();
    assert_eq!(deleted, ["cached", "own"]);
    assert!(get_offline(&store, "own").await.is_none());
    assert!(get_offline(&store, "cached").await.is_none());
    assert!(get_offline(&store, "kept").await.is_some());
}

#[tokio::test]
async fn a_running_task_is_confirmed_with_the_api_server_and_a_finished_one_is_not() {
    let (store, mut writer, mut handle) = store();
    store.apply(&mut writer, Ok(Event::Init));
    store.apply(&mut writer, Ok(Event::InitApply(guard(task("run", "4")))));
    let mut done = task("done", "4");
    done.status = Some(serde_json::from_value(json!({"status": "completed"})).unwrap());
    store.apply(&mut writer, Ok(Event::InitApply(guard(done))));
    store.apply(&mut writer, Ok(Event::InitDone));
    // The API server has a newer state than this replica's watch.
    let server = tokio::spawn(async move {
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(
            request.uri().path(),
            "/apis/mcptasks.io/v1alpha1/namespaces/default/mcptasks/run"
        );
        let mut newer = serde_json::to_value(task("run", "9")).unwrap();
        newer["status"] = json!({"status": "completed"});
        let response = Response::builder()
            .status(StatusCode::OK)
            .body(Body::from(newer.to_string().into_bytes()))
            .unwrap();
        send.send_response(response);
        handle
    });
    let current = store.get_current("run").await.unwrap().unwrap();
    assert!(current.is_terminal(), "the API server's newer state");
    let _handle = server.await.unwrap();
    // Kept: the next lookup on this replica, even from the cache, is no older.
    assert!(get_offline(&store, "run").await.unwrap().is_terminal());
    let finished = tokio::time::timeout(Duration::from_secs(5), store.get_current("done"))
        .await
        .expect("a finished task is answered from the cache");
    assert!(finished.unwrap().unwrap().is_terminal());
    assert_eq!(store.lookups().count("fresh"), 1);
}
