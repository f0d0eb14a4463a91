//! Publishing Kubernetes Events (`events.k8s.io/v1`): one create per Event, nothing kept.
//!
//! kube's `Recorder` keeps every Event it published in the last six minutes, to count repeats as
//! a series, and scans that whole cache under one write lock on every publish: with thousands of
//! tasks each publishing a few Events, that was the largest item of the operator's heap (about
//! 14 KiB per running task at 300 tasks, docs/BENCHMARKS.md) and made every publish wait for
//! the others. The operator's Events do not repeat (one per transition; output warnings are
//! capped per task, `notify.rs`), so each is a plain create, made in the background: a reconcile
//! that waited for its Events' creates held its slot twice as long (a new task publishes two).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client};
use tokio::sync::mpsc;

use crate::metrics::Metrics;

/// Events waiting to be sent, at most: more are dropped and counted, as client-go's event
/// broadcaster drops them when its queue is full. An Event is a note for people, never state
/// the operator or a client acts on.
pub const QUEUE: usize = 4096;
/// Places of [`QUEUE`] only Warnings may take: when the queue fills, Normal Events (a task's
/// ordinary transitions) are dropped first, and the Warnings that say what went wrong still go.
pub const WARNING_RESERVE: usize = QUEUE / 4;
/// Event creates in flight at once.
const SENDERS: usize = 8;

/// Publishes Events as one controller instance, in the background: [`Events::send`] queues the
/// Event and returns, so no reconcile waits for an Event's create.
#[derive(Clone)]
pub struct Events {
    /// `reportingController`.
    controller: String,
    /// `reportingInstance` (this replica).
    instance: String,
    queue: mpsc::Sender<K8sEvent>,
    /// See [`WARNING_RESERVE`].
    reserve: usize,
    metrics: Arc<Metrics>,
}

impl Events {
    /// Events reported by `controller` (`reportingController`) from `instance`, created by a
    /// task spawned here (on the current Tokio runtime) that ends with the last clone.
    pub fn new(client: Client, controller: &str, instance: &str, metrics: Arc<Metrics>) -> Self {
        Self::with_queue(
            client,
            controller,
            instance,
            metrics,
            (QUEUE, WARNING_RESERVE),
        )
    }

    /// `queue`: the capacity, and the places of it kept for Warnings.
    fn with_queue(
        client: Client,
        controller: &str,
        instance: &str,
        metrics: Arc<Metrics>,
        (capacity, reserve): (usize, usize),
    ) -> Self {
        let (queue, queued) = mpsc::channel(capacity);
        tokio::spawn(deliver(client, queued));
        Self {
            controller: controller.to_owned(),
            instance: instance.to_owned(),
            queue,
            reserve,
            metrics,
        }
    }

    /// Queues `event` about the object `regarding`, in its namespace (`default` for a
    /// cluster-scoped one), stamped with the time now; a full queue drops it (counted in
    /// `mcp_operator_events_dropped_total`), and a Normal Event is dropped already when only the
    /// places kept for Warnings are left.
    pub fn send(&self, event: &Event, regarding: &ObjectReference) {
        if event.type_ == EventType::Normal && self.queue.capacity() <= self.reserve {
            self.metrics.event_dropped();
            tracing::debug!(reason = %event.reason, "Event queue nearly full; Normal Event dropped");
            return;
        }
        let object = build(
            event,
            regarding,
            &self.controller,
            &self.instance,
            Timestamp::now(),
        );
        if let Err(mpsc::error::TrySendError::Full(_)) = self.queue.try_send(object) {
            self.metrics.event_dropped();
            tracing::debug!(reason = %event.reason, "Event queue full; Event dropped");
        }
    }
}

/// Creates the queued Events, [`SENDERS`] at a time, until every sender is gone; a create that
/// fails is logged.
async fn deliver(client: Client, mut queued: mpsc::Receiver<K8sEvent>) {
    futures::stream::poll_fn(|cx| queued.poll_recv(cx))
        .for_each_concurrent(SENDERS, |event| {
            let client = client.clone();
            async move {
                let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
                let created = Api::<K8sEvent>::namespaced(client, namespace)
                    .create(&PostParams::default(), &event)
                    .await;
                if let Err(e) = created {
                    tracing::warn!(reason = ?event.reason, error = %e, "failed to publish Event");
                }
            }
        })
        .await;
}

/// The Event object for `event` about `regarding`, published at `now`: named after the object
/// and the time (as `kubectl` and client-go name theirs).
pub fn build(
    event: &Event,
    regarding: &ObjectReference,
    controller: &str,
    instance: &str,
    now: Timestamp,
) -> K8sEvent {
    let name = regarding.name.as_deref().unwrap_or(controller);
    K8sEvent {
        metadata: ObjectMeta {
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            namespace: Some(
                regarding
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_owned()),
            ),
            ..ObjectMeta::default()
        },
        action: Some(event.action.clone()),
        reason: Some(event.reason.clone()),
        note: event.note.clone(),
        type_: Some(
            match event.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .to_owned(),
        ),
        event_time: Some(MicroTime(now)),
        regarding: Some(regarding.clone()),
        related: event.secondary.clone(),
        reporting_controller: Some(controller.to_owned()),
        reporting_instance: Some(instance.to_owned()),
        ..K8sEvent::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::State;
    use axum::http::{Method, Request, Response};
    use kube::client::Body;

    #[tokio::test]
    async fn events_are_sent_in_the_background_and_a_full_queue_drops_and_counts_them() {
        let (service, mut api) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let state = State::default();
        let client = Client::new(service, "default");
        // Two places, one kept for Warnings.
        let events = Events::with_queue(client, "c", "i", state.metrics(), (2, 1));
        let regarding = ObjectReference {
            name: Some("t1".to_owned()),
            namespace: Some("tools".to_owned()),
            ..ObjectReference::default()
        };
        let event = |type_, reason: &str| Event {
            type_,
            reason: reason.to_owned(),
            note: None,
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        // Nothing else runs until this test awaits (one thread): one Normal Event fits the
        // queue, then the Warning takes the place kept for it, and nothing more fits.
        events.send(&event(EventType::Normal, "First"), &regarding);
        for _ in 0..3 {
            events.send(&event(EventType::Normal, "Dropped"), &regarding);
        }
        events.send(&event(EventType::Warning, "Kept"), &regarding);
        for _ in 0..2 {
            events.send(&event(EventType::Warning, "Dropped"), &regarding);
        }
        for reason in ["First", "Kept"] {
            let (request, respond) = api.next_request().await.expect("a queued Event is sent");
            assert_eq!(request.method(), Method::POST);
            assert_eq!(
                request.uri().path(),
                "/apis/events.k8s.io/v1/namespaces/tools/events"
            );
            let body = request.into_body().collect_bytes().await.expect("body");
            let sent: K8sEvent = serde_json::from_slice(&body).expect("an Event");
            assert_eq!(sent.reason.as_deref(), Some(reason));
            respond.send_response(Response::new(Body::from(body.to_vec())));
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, state.registry()).expect("metrics");
        assert!(
            text.contains("mcp_operator_events_dropped_total 5"),
            "{text}"
        );
    }

    #[test]
    fn an_event_names_its_object_its_reporter_and_its_time() {
        let regarding = ObjectReference {
            kind: Some("McpTask".to_owned()),
            name: Some("t1".to_owned()),
            namespace: Some("tools".to_owned()),
            uid: Some("u1".to_owned()),
            ..ObjectReference::default()
        };
        let event = Event {
            type_: EventType::Warning,
            reason: "OutputWarning".to_owned(),
            note: Some("a line that is not JSON".to_owned()),
            action: "ReadLogs".to_owned(),
            secondary: None,
        };
        let now: Timestamp = "2026-12-02T10:00:00Z".parse().unwrap();
        let e = build(&event, &regarding, "mcp-task-operator", "operator-0", now);
        assert_eq!(e.metadata.namespace.as_deref(), Some("tools"));
        let name = e.metadata.name.unwrap();
        assert_eq!(name, format!("t1.{:x}", now.as_nanosecond()));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.reason.as_deref(), Some("OutputWarning"));
        assert_eq!(e.regarding.as_ref(), Some(&regarding));
        assert_eq!(e.reporting_controller.as_deref(), Some("mcp-task-operator"));
        assert_eq!(e.reporting_instance.as_deref(), Some("operator-0"));
        assert_eq!(e.event_time, Some(MicroTime(now)));
        let cluster_scoped = ObjectReference {
            namespace: None,
            ..regarding
        };
        let e = build(&event, &cluster_scoped, "c", "i", now);
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    }
}
