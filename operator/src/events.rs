//! Publishing Kubernetes Events (`events.k8s.io/v1`): one create per Event, nothing kept.
//!
//! kube's `Recorder` keeps every Event it published in the last six minutes, to count repeats as
//! a series, and scans that whole cache under one write lock on every publish: with thousands of
//! tasks each publishing a few Events, that was the largest item of the operator's heap (about
//! 14 KiB per running task at 300 tasks, docs/BENCHMARKS.md) and made every publish wait for
//! the others. The operator's Events do not repeat (one per transition; output warnings are
//! capped per task, `notify.rs`), so each is a plain create.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client};

/// Publishes Events as one controller instance.
#[derive(Clone)]
pub struct Events {
    client: Client,
    /// `reportingController`.
    controller: String,
    /// `reportingInstance` (this replica).
    instance: String,
}

impl Events {
    /// Events reported by `controller` (`reportingController`) from `instance`.
    pub fn new(client: Client, controller: &str, instance: &str) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            instance: instance.to_owned(),
        }
    }

    /// Creates `event` about the object `regarding`, in its namespace (`default` for a
    /// cluster-scoped one).
    pub async fn publish(&self, event: &Event, regarding: &ObjectReference) -> kube::Result<()> {
        let object = build(
            event,
            regarding,
            &self.controller,
            &self.instance,
            Timestamp::now(),
        );
        let namespace = object.metadata.namespace.as_deref().unwrap_or("default");
        Api::<K8sEvent>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), &object)
            .await
            .map(drop)
    }
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
