//! Deleted tasks: listeners and synchronous waiters learn of the deletion, and nothing
//! deleted is served again.

use std::time::Duration;

use axum::body::Body;
use futures::StreamExt;
use serde_json::json;
use tower::ServiceExt;

use super::*;
use crate::store::TaskStore;

/// Guards a read that must not hang (the old code never answered): not a timing assertion.
const HANG: Duration = Duration::from_secs(10);

fn listen_body(task_ids: &[&str]) -> Value {
    json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta(true), "notifications": {"taskIds": task_ids}}})
}

/// An open listen stream, read one SSE message at a time.
struct Stream {
    body: axum::body::BodyDataStream,
    buffer: String,
}

impl Stream {
    async fn open(state: &AppState, task_ids: &[&str]) -> Self {
        let body = listen_body(task_ids);
        let request = post(&body).body(Body::from(body.to_string())).unwrap();
        let response = crate::app(state.clone()).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Self {
            body: response.into_body().into_data_stream(),
            buffer: String::new(),
        }
    }

    /// The next message, or `None` once the stream has ended.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data:")) {
                    return Some(serde_json::from_str(data.trim()).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(HANG, self.body.next())
                .await
                .expect("the stream neither sends nor ends")?;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    }
}

#[tokio::test]
async fn deleting_a_running_task_ends_its_listen_stream_and_it_reads_as_not_found() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), working());
    let mut stream = Stream::open(&state, &[&id]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    assert_eq!(stream.next().await.unwrap()["params"]["status"], "working");

    store.delete(&id);
    // The listen's final result, then the end: the client listens again and is told by the
    // new acknowledgement that the task is not reported.
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], "listen-1", "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(stream.next().await, None);

    let (_, body) = get_task(&state, &id).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(body["error"]["message"], "Task not found");
    let mut again = Stream::open(&state, &[&id]).await;
    let ack = again.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([]));
}

#[tokio::test]
async fn a_finished_task_leaves_the_stream_quietly_and_the_others_go_on() {
    let (state, store) = test_state();
    let finished = stored_with(&store, json!({"status": "cancelled"}));
    let running = stored_task(&store, anonymous(), working());
    let mut stream = Stream::open(&state, &[&finished, &running]).await;
    stream.next().await.unwrap();
    stream.next().await.unwrap();
    stream.next().await.unwrap();

    store.delete(&finished);
    store.update(&running, |t| {
        t.status = Some(status(
            json!({"status": "completed", "result": {"content": []}}),
        ))
    });
    let next = stream.next().await.unwrap();
    assert_eq!(next["method"], "notifications/tasks", "{next}");
    assert_eq!(next["params"]["taskId"], running.as_str());
    assert_eq!(next["params"]["status"], "completed");

    // The last one deleted: nothing is left to report, so the stream ends.
    store.delete(&running);
    assert_eq!(
        stream.next().await.unwrap()["result"]["resultType"],
        "complete"
    );
    assert_eq!(stream.next().await, None);
}

#[tokio::test]
async fn a_synchronous_call_whose_task_is_deleted_answers_a_clear_error() {
    let (state, store) = test_state();
    let mut changes = store.subscribe();
    let deleter = {
        let store = store.clone();
        tokio::spawn(async move {
            let task = changes.recv().await.unwrap();
            store.delete(task.task_id());
            task.task_id().to_owned()
        })
    };
    let params =
        json!({"name": "slow_compute", "arguments": {"seconds": 60}, "_meta": meta(false)});
    let answer = tokio::time::timeout(HANG, call(&state, rpc("tools/call", params)));
    let (status, body) = answer.await.expect("the waiter learns of the deletion");
    let id = deleter.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(
        body["error"]["message"],
        format!("task {id} was deleted before it finished; the call has no result")
    );
    assert_eq!(body["error"]["data"]["taskId"], id.as_str());
}

#[tokio::test]
async fn a_task_being_deleted_is_not_served() {
    let (state, store) = test_state();
    let id = stored_task(&store, anonymous(), working());
    // Foreground deletion: the object stays, with its deletionTimestamp, until its Jobs go.
    store.update(&id, |t| {
        t.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
    });
    let (_, body) = get_task(&state, &id).await;
    assert_eq!(body["error"]["message"], "Task not found", "{body}");
}
