//! `subscriptions/listen` with `taskIds`: our own route, because rmcp 3.11's
//! `SubscriptionFilter` has no `taskIds` and its subscription sink refuses
//! `notifications/tasks`. The request is validated here by the rules rmcp applies to the other
//! methods; the answer is an SSE stream fed by the task watch and, for `toolsListChanged`, by
//! the `McpTool` watch (`notifications/tools/list_changed`). Other filter fields (prompts,
//! resources) are not honoured, so the ack leaves them out.
//!
//! A task deleted while listened to (the operator purging it after its TTL, or anyone deleting
//! its `McpTask`) leaves the subscription: no notification can say "gone", as each one carries
//! the task's state. If the client had not been told a terminal state for it, the stream ends
//! with the listen's final result at once, so the client listens again and the new
//! acknowledgement leaves the task out (and `tasks/get` answers "Task not found"); a task
//! whose terminal state was sent leaves quietly. A stream left with nothing to report ends.
//! See docs/CONFORMANCE.md, *Deleted tasks*.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::time::Duration;

use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use rmcp::model::{ErrorData, RequestId};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::auth::Caller;
use crate::error::Error;
use crate::error::JsonRpcErrorResponse;
use crate::state::{AppState, server_info_meta};
use crate::store::is_deleted;
use crate::tasks::find_task;
use crate::wire;

pub mod request;

/// The JSON-RPC method served here.
pub const METHOD: &str = "subscriptions/listen";
const SUBSCRIPTION_ID: &str = mcp_task_operator_crds::wire::SUBSCRIPTION_ID_META;
/// Events buffered per stream before the producer waits for the client.
const STREAM_BUFFER: usize = 32;

/// Answers a `subscriptions/listen` POST: a JSON-RPC error, or the notification stream.
pub async fn listen_tasks(state: AppState, parts: Parts, body: Bytes) -> Response {
    // The answer is an event stream, so the client must accept one (rmcp answers 406 alike).
    let accepts_sse = parts
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"));
    if !accepts_sse {
        return (
            axum::http::StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: subscriptions/listen answers with text/event-stream",
        )
            .into_response();
    }
    let listen =
        match request::validate_within(&parts, &body, state.config.limits.max_listen_task_ids) {
            Ok(listen) => listen,
            Err(error) => return error.into_response(),
        };
    let Some(caller) = Caller::from_parts(&parts).cloned() else {
        let error = ErrorData::internal_error("Internal error", None);
        return JsonRpcErrorResponse::new(Some(listen.id), error, false).into_response();
    };
    // Only the caller's live tasks are accepted: the same check as tasks/get.
    let mut accepted = BTreeSet::new();
    for id in &listen.task_ids {
        if find_task(&state, &caller, id).await.is_ok() {
            accepted.insert(id.clone());
        }
    }
    // Each open stream holds its source's and caller's slots (the caller's not with
    // AUTH_MODE=none, where every caller is one) and a permit until it ends.
    let caps = &state.subscription_caps;
    let source = crate::held::source(
        &parts.headers,
        &parts.extensions,
        state.config.trust_forwarded_for,
    );
    let held = source
        .map(|source| caps.source.try_hold(&source))
        .transpose()
        .and_then(|source| {
            let caller = match state.auth {
                crate::auth::Auth::None => None,
                _ => caps.caller.try_hold(caller.as_str())?,
            };
            Ok((source.flatten(), caller))
        });
    let held = match held {
        Ok(held) => held,
        Err(refused) => {
            let error = refused.error_data();
            return JsonRpcErrorResponse::new(Some(listen.id), error, false).into_response();
        }
    };
    let Ok(permit) = state.subscriptions.clone().try_acquire_owned() else {
        let error = ErrorData::internal_error("Subscription limit reached", None);
        return JsonRpcErrorResponse::new(Some(listen.id), error, false).into_response();
    };
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let filter = Filter {
        wants_tasks: listen.wants_tasks,
        tasks: accepted,
        tools_list_changed: listen.tools_list_changed,
    };
    tokio::spawn(async move {
        stream_tasks(state, caller, listen.id, filter, tx).await;
        drop((permit, held));
    });
    let mut response = Sse::new(ReceiverStream::new(rx))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    let headers = response.headers_mut();
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    response
}
/// What a stream honours.
struct Filter {
    /// The filter named `taskIds`.
    wants_tasks: bool,
    /// The caller's live tasks among them.
    tasks: BTreeSet<String>,
    /// `toolsListChanged: true`.
    tools_list_changed: bool,
}

/// Produces the stream: the ack, each accepted task's state, then every change, until the
/// client leaves or the server shuts down (then the graceful final result). A stream with
/// nothing honoured ends right after the ack.
async fn stream_tasks(
    state: AppState,
    caller: Caller,
    id: RequestId,
    filter: Filter,
    tx: mpsc::Sender<Result<Event, Infallible>>,
) {
    let subscription_id = serde_json::to_value(&id).unwrap_or(Value::Null);
    let mut accepted = filter.tasks;
    let mut honoured = serde_json::Map::new();
    if filter.wants_tasks {
        honoured.insert("taskIds".to_owned(), json!(accepted));
    }
    if filter.tools_list_changed {
        honoured.insert("toolsListChanged".to_owned(), json!(true));
    }
    // Subscribe before the ack, so no change after it is missed.
    let mut tool_changes = state.tools.list_changes();
    tool_changes.mark_unchanged();
    let mut tools_open = filter.tools_list_changed;
    // The ack is the listen's first answer: it names this server, as every result does.
    let mut ack_meta = server_info_meta();
    ack_meta.insert(SUBSCRIPTION_ID.to_owned(), subscription_id.clone());
    let ack = json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "_meta": ack_meta,
            "notifications": honoured,
        },
    });
    if send(&tx, &ack).await.is_err() {
        return;
    }
    let mut changes = state.tasks.subscribe();
    // A replica that loses the API server ends its streams: the task watch no longer moves,
    // and the client's next listen reaches a replica whose watch does.
    let mut reachable = state.api_health.subscribe();
    let mut last_sent: HashMap<String, Value> = HashMap::new();
    let mut ended = false;
    for task_id in accepted.clone() {
        // The first state sent is current: the client's previous stream may have been on a
        // replica whose watch is ahead of this one's.
        let _ = crate::tasks::find_current_task(&state, &caller, &task_id).await;
        let notified = notify(
            &state,
            &caller,
            &task_id,
            &subscription_id,
            &mut last_sent,
            &tx,
        )
        .await;
        ended |= notified == Notified::Gone && forget(&mut accepted, &last_sent, &task_id);
    }
    if !ended && (!accepted.is_empty() || tools_open) {
        loop {
            tokio::select! {
                () = state.shutdown.cancelled() => break,
                () = tx.closed() => return,
                Ok(()) = reachable.changed() => {
                    if !*reachable.borrow_and_update() {
                        break;
                    }
                }
                changed = tool_changes.changed(), if tools_open => match changed {
                    Ok(()) => {
                        let message = json!({
                            "jsonrpc": "2.0",
                            "method": "notifications/tools/list_changed",
                            "params": { "_meta": { SUBSCRIPTION_ID: subscription_id } },
                        });
                        let _ = send(&tx, &message).await;
                    }
                    // The catalog cannot change any more; a stream for tools alone is done.
                    Err(_) => {
                        tools_open = false;
                        if accepted.is_empty() {
                            break;
                        }
                    }
                },
                change = changes.recv() => match change {
                    Ok(task) if accepted.contains(task.task_id()) => {
                        let notified = if is_deleted(&task) {
                            Notified::Gone
                        } else {
                            notify(&state, &caller, task.task_id(), &subscription_id, &mut last_sent, &tx).await
                        };
                        if notified == Notified::Gone && forget(&mut accepted, &last_sent, task.task_id()) {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        let mut end = false;
                        for task_id in accepted.clone() {
                            let notified = notify(&state, &caller, &task_id, &subscription_id, &mut last_sent, &tx).await;
                            end |= notified == Notified::Gone && forget(&mut accepted, &last_sent, &task_id);
                        }
                        if end {
                            break;
                        }
                    }
                    Err(RecvError::Closed) => break,
                },
            }
            if accepted.is_empty() && !tools_open {
                break;
            }
        }
    }
    let mut meta = server_info_meta();
    meta.insert(SUBSCRIPTION_ID.to_owned(), subscription_id);
    let done = json!({ "jsonrpc": "2.0", "id": id, "result": { "resultType": "complete", "_meta": meta } });
    let _ = send(&tx, &done).await;
}

/// Drops the deleted task `task_id` from the subscription; whether the stream must end
/// because the client was not told a terminal state for it.
fn forget(
    accepted: &mut BTreeSet<String>,
    last_sent: &HashMap<String, Value>,
    task_id: &str,
) -> bool {
    accepted.remove(task_id);
    let status = last_sent
        .get(task_id)
        .and_then(|sent| sent.get("status"))
        .and_then(Value::as_str);
    !matches!(status, Some("completed" | "failed" | "cancelled"))
}

/// What [`notify`] did.
#[derive(Debug, PartialEq, Eq)]
enum Notified {
    /// Sent the task's state, or it had not changed, or it could not be read this time.
    Done,
    /// The task is gone: deleted (or no longer the caller's).
    Gone,
}

/// Sends the task's current state if it changed since the last notification.
async fn notify(
    state: &AppState,
    caller: &Caller,
    task_id: &str,
    subscription_id: &Value,
    last_sent: &mut HashMap<String, Value>,
    tx: &mpsc::Sender<Result<Event, Infallible>>,
) -> Notified {
    let task = match find_task(state, caller, task_id).await {
        Ok(task) => task,
        Err(Error::TaskNotFound) => return Notified::Gone,
        Err(_) => return Notified::Done,
    };
    let Ok(Value::Object(mut params)) = wire::detailed_task(&task).and_then(|t| {
        serde_json::to_value(t).map_err(|e| crate::error::Error::TaskMapping {
            task_id: task_id.to_owned(),
            reason: e.to_string(),
        })
    }) else {
        return Notified::Done;
    };
    if last_sent.get(task_id) == Some(&Value::Object(params.clone())) {
        return Notified::Done;
    }
    last_sent.insert(task_id.to_owned(), Value::Object(params.clone()));
    params.insert(
        "_meta".to_owned(),
        json!({ SUBSCRIPTION_ID: subscription_id }),
    );
    let message = json!({ "jsonrpc": "2.0", "method": "notifications/tasks", "params": params });
    let _ = send(tx, &message).await;
    Notified::Done
}

async fn send(tx: &mpsc::Sender<Result<Event, Infallible>>, message: &Value) -> Result<(), ()> {
    let event = Event::default().event("message").data(message.to_string());
    tx.send(Ok(event)).await.map_err(|_| ())
}
