//! The tool's Job policies in the built Job: extra labels and annotations (never ours), the
//! external queue (suspended, labelled), retries of disruptions only.

use serde_json::json;

use super::*;
use crate::fixtures::{task, tool};

fn config() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

fn tool_with(spec: serde_json::Value) -> McpTool {
    let mut value = serde_json::to_value(tool()).unwrap();
    for (k, v) in spec.as_object().unwrap() {
        value["spec"][k] = v.clone();
    }
    serde_json::from_value(value).unwrap()
}

#[test]
fn a_plain_tool_runs_once_unsuspended() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    let spec = job.spec.unwrap();
    assert_eq!(spec.backoff_limit, Some(0));
    assert_eq!(spec.pod_failure_policy, None);
    assert_eq!(spec.suspend, None);
    assert_eq!(job.metadata.annotations, None);
}

#[test]
fn job_labels_and_annotations_are_added_but_never_ours() {
    let t = tool_with(json!({
        "jobLabels": {
            "team": "search",
            "mcptasks.io/task": "forged",
            "app.kubernetes.io/managed-by": "someone-else",
            "app.kubernetes.io/name": "forged-name",
            "kueue.x-k8s.io/queue-name": "sneaky",
        },
        "jobAnnotations": {"cost-center": "42", "mcptasks.io/traceparent": "forged"},
    }));
    let job = build_job(&task(), &t, &config()).unwrap();
    let labels = job.metadata.labels.unwrap();
    assert_eq!(labels["team"], "search");
    assert_eq!(labels["mcptasks.io/task"], task().task_id());
    assert_eq!(labels["app.kubernetes.io/managed-by"], MANAGED_BY);
    assert_eq!(labels["app.kubernetes.io/name"], "report");
    assert!(!labels.contains_key("kueue.x-k8s.io/queue-name"));
    let annotations = job.metadata.annotations.unwrap();
    assert_eq!(annotations.len(), 1, "{annotations:?}");
    assert_eq!(annotations["cost-center"], "42");
    // The pod gets only the template's labels and ours.
    let pod_labels = job.spec.unwrap().template.metadata.unwrap().labels.unwrap();
    assert!(!pod_labels.contains_key("team"));
}

#[test]
fn a_queue_name_labels_the_job_and_creates_it_suspended() {
    let job = build_job(
        &task(),
        &tool_with(json!({"queueName": "batch"})),
        &config(),
    )
    .unwrap();
    assert_eq!(job.metadata.labels.unwrap()[QUEUE_NAME_LABEL], "batch");
    assert_eq!(job.spec.unwrap().suspend, Some(true));
}

#[test]
fn retries_count_disruptions_first_and_fail_on_any_tool_exit() {
    let job = build_job(
        &task(),
        &tool_with(json!({"retryOnDisruption": 2})),
        &config(),
    )
    .unwrap();
    let spec = job.spec.unwrap();
    assert_eq!(spec.backoff_limit, Some(2));
    let rules = spec.pod_failure_policy.unwrap().rules;
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].action, "Count");
    let conditions = rules[0].on_pod_conditions.as_ref().unwrap();
    assert_eq!(conditions[0].type_, "DisruptionTarget");
    assert_eq!(rules[1].action, "FailJob");
    let exits = rules[1].on_exit_codes.as_ref().unwrap();
    assert_eq!(exits.operator, "NotIn");
    assert_eq!(exits.values, [0]);
    let tool_container = tool().tool_container().unwrap().name.clone();
    assert_eq!(
        exits.container_name.as_deref(),
        Some(tool_container.as_str())
    );
}
