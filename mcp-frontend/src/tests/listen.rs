//! `subscriptions/listen` with `taskIds`.

use axum::body::Body;
use axum::http::StatusCode;
use futures::StreamExt;
use serde_json::json;
use tower::ServiceExt;

use super::*;

fn listen_body(task_ids: &[&str], tasks: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta(tasks), "notifications": {"taskIds": task_ids}}})
}

/// Reads SSE `data:` payloads until `count` messages have arrived.
async fn read_messages(body: Body, count: usize) -> Vec<Value> {
    let mut stream = body.into_data_stream();
    let mut buffer = String::new();
    let mut messages = Vec::new();
    while messages.len() < count {
        let chunk = stream.next().await.unwrap().unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            for line in frame.lines() {
                if let Some(data) = line.strip_prefix("data:") {
                    messages.push(serde_json::from_str(data.trim()).unwrap());
                }
            }
        }
    }
    messages
}

#[tokio::test]
async fn listen_acks_own_tasks_then_streams_their_state() {
    let (state, store) = test_state();
    let mine = stored_task(&store, anonymous(), working());
    let foreign = stored_task(&store, "someone-else", working());
    let body = listen_body(&[&mine, &foreign, "unknown"], true);
    let request = post(&body).body(Body::from(body.to_string())).unwrap();
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response.into_body();
    let reader = tokio::spawn(read_messages(body, 3));
    // Let the initial snapshot go out, then change the task.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    store.update(&mine, |t| {
        t.status = Some(status(json!({"status": "cancelled"})))
    });
    let messages = reader.await.unwrap();
    assert_eq!(
        messages[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({"taskIds": [mine]})
    );
    assert_eq!(
        messages[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    assert_eq!(messages[1]["method"], "notifications/tasks");
    assert_eq!(messages[1]["params"]["taskId"], mine.as_str());
    assert_eq!(messages[1]["params"]["status"], "working");
    assert_eq!(
        messages[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    assert_eq!(messages[2]["params"]["status"], "cancelled");
}

#[tokio::test]
async fn listen_for_task_ids_without_the_extension_is_32021() {
    let (state, _) = test_state();
    let (status, body) = call(&state, listen_body(&["x"], false)).await;
    assert_eq!(
        required_capabilities(status, &body)["extensions"][TASKS],
        json!({})
    );
    assert_eq!(
        body["error"]["message"],
        "Missing required client capability"
    );
    assert_eq!(body["id"], "listen-1");
}

#[tokio::test]
async fn listen_with_nothing_accepted_acks_then_ends_gracefully() {
    let (state, _) = test_state();
    let body = listen_body(&["unknown"], true);
    let request = post(&body).body(Body::from(body.to_string())).unwrap();
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    let messages = read_messages(response.into_body(), 2).await;
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({"taskIds": []})
    );
    assert_eq!(messages[1]["id"], "listen-1");
    assert_eq!(messages[1]["result"]["resultType"], "complete");
}

#[tokio::test]
async fn listen_checks_headers_like_every_other_method() {
    let (state, _) = test_state();
    let body = listen_body(&[], true);
    let request = post(&body)
        .header("mcp-method", "tools/list")
        .body(Body::from(body.to_string()))
        .unwrap();
    assert_header_mismatch(&state, request).await;
}

#[tokio::test]
async fn listen_stream_ends_with_its_result_on_shutdown_over_a_real_socket() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (state, store) = test_state();
    let mine = stored_task(&store, anonymous(), working());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = state.shutdown.clone();
    let signal = shutdown.clone();
    let server = tokio::spawn(
        axum::serve(
            listener,
            axum::ServiceExt::<axum::extract::Request>::into_make_service(crate::app(state)),
        )
        .with_graceful_shutdown(async move { signal.cancelled().await })
        .into_future(),
    );
    let body = listen_body(&[&mine], true).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\n\
         Mcp-Method: subscriptions/listen\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains("notifications/tasks") {
        let n = socket.read(&mut buffer).await.unwrap();
        assert!(n > 0, "stream closed early");
        received.extend_from_slice(&buffer[..n]);
    }
    // Shutting down ends the stream with the listen result; then the connection closes.
    shutdown.cancel();
    socket.read_to_end(&mut received).await.unwrap();
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains(r#""id":"listen-1""#) && text.contains(r#""resultType":"complete""#),
        "{text}"
    );
    tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .expect("server stops after its streams end")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn listens_beyond_the_limit_are_refused() {
    let (state, store) = test_state_with(&[("MAX_SUBSCRIPTIONS", "1")]);
    let mine = stored_task(&store, anonymous(), working());
    let body = listen_body(&[&mine], true);
    let first = post(&body).body(Body::from(body.to_string())).unwrap();
    let open = crate::app(state.clone()).oneshot(first).await.unwrap();
    assert_eq!(open.status(), StatusCode::OK);
    let (status, answer) = call(&state, body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["error"]["code"], -32603);
    assert_eq!(answer["error"]["message"], "Subscription limit reached");
    drop(open);
}

/// A catalog whose tools/list answer a test can change.
struct ChangingCatalog {
    snapshot: Arc<crate::tools::CatalogSnapshot>,
    changed: tokio::sync::watch::Sender<()>,
}

impl crate::tools::ToolCatalog for ChangingCatalog {
    fn snapshot(&self) -> Arc<crate::tools::CatalogSnapshot> {
        self.snapshot.clone()
    }

    fn is_synced(&self) -> bool {
        true
    }

    fn list_changes(&self) -> tokio::sync::watch::Receiver<()> {
        self.changed.subscribe()
    }
}

/// `tools.listChanged` is advertised and honoured: a listen with `toolsListChanged` is acked
/// with exactly what is honoured (not prompts) and gets `notifications/tools/list_changed`,
/// tagged, when the catalog changes; a listen for prompts alone is acked empty and ends.
#[tokio::test]
async fn tools_list_changed_is_advertised_and_sent_to_listens_that_ask() {
    let (base, store) = test_state();
    let catalog = Arc::new(ChangingCatalog {
        snapshot: base.tools.snapshot(),
        changed: tokio::sync::watch::Sender::new(()),
    });
    let state = AppState::new((*base.config).clone(), store, catalog.clone());

    let (_, discover) = call(
        &state,
        rpc("server/discover", json!({"_meta": meta(false)})),
    )
    .await;
    assert_eq!(
        discover["result"]["capabilities"]["tools"]["listChanged"], true,
        "{discover}"
    );

    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"_meta": meta(false),
            "notifications": {"toolsListChanged": true, "promptsListChanged": true}}});
    let request = post(&body).body(Body::from(body.to_string())).unwrap();
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let reader = tokio::spawn(read_messages(response.into_body(), 2));
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    catalog.changed.send_replace(());
    let messages = reader.await.unwrap();
    assert_eq!(
        messages[0]["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(messages[1]["method"], "notifications/tools/list_changed");
    assert_eq!(
        messages[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );

    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen",
        "params": {"_meta": meta(false), "notifications": {"promptsListChanged": true}}});
    let request = post(&body).body(Body::from(body.to_string())).unwrap();
    let response = crate::app(state.clone()).oneshot(request).await.unwrap();
    let messages = read_messages(response.into_body(), 2).await;
    assert_eq!(messages[0]["params"]["notifications"], json!({}));
    assert_eq!(messages[1]["id"], 8);
    assert_eq!(messages[1]["result"]["resultType"], "complete");
}
