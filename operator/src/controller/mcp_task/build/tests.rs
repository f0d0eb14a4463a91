//! Tests for building a task's Job from inline YAML fixtures.

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use super::*;
use crate::fixtures::{downward_files, task, task_from, tool, tool_from};

fn config() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

fn pod_spec(job: &Job) -> &PodSpec {
    job.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
}

fn pod_meta(job: &Job) -> &ObjectMeta {
    job.spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap()
}

fn pod_annotations(job: &Job) -> &BTreeMap<String, String> {
    pod_meta(job).annotations.as_ref().unwrap()
}

fn env_of(container: &Container) -> BTreeMap<String, String> {
    container
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

const SIDECAR_TOOL: &str = r#"
apiVersion: mcptasks.io/v1alpha1
kind: McpTool
metadata: {name: migrate, namespace: tools}
spec:
  inputSchema: {type: object}
  startInputs:
    confirm:
      method: elicitation/create
      params: {message: "Really?", requestedSchema: {type: object, properties: {ok: {type: boolean}}}}
  template:
    metadata:
      labels: {team: data}
      annotations: {note: kept}
    spec:
      automountServiceAccountToken: true
      serviceAccountName: migrator
      volumes:
        - {name: mcp-task, emptyDir: {}}
        - {name: scratch, emptyDir: {}}
      containers:
        - name: proxy
          image: example.com/proxy:1
        - name: tool
          image: example.com/migrate:1
          env:
            - {name: MCP_TASK_ID, value: forged}
            - {name: LOG_LEVEL, value: debug}
          volumeMounts:
            - {name: scratch, mountPath: /var/run/mcp}
            - {name: scratch, mountPath: /scratch}
"#;

#[test]
fn job_is_named_after_and_owned_by_the_task() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    assert_eq!(
        job.metadata.name.as_deref(),
        Some("abcdefghijklmnopqrstuvwxyz234567")
    );
    assert_eq!(job.metadata.namespace.as_deref(), Some("tools"));
    let owners = job.metadata.owner_references.as_ref().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].kind, "McpTask");
    assert_eq!(owners[0].api_version, "mcptasks.io/v1alpha1");
    assert_eq!(owners[0].uid, "task-uid");
    assert_eq!(owners[0].controller, Some(true));
}

#[test]
fn job_runs_once_with_the_tools_deadline() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.backoff_limit, Some(0));
    assert_eq!(spec.completions, Some(1));
    assert_eq!(spec.active_deadline_seconds, Some(600));
    assert_eq!(pod_spec(&job).restart_policy.as_deref(), Some("Never"));
}

#[test]
fn deadline_falls_back_to_the_operator_default() {
    let mut tool = tool();
    tool.spec.active_deadline_seconds = None;
    // One day by default (docs/DESIGN.md, "Every state has a bound").
    let default = build_job(&task(), &tool, &config()).unwrap();
    assert_eq!(default.spec.unwrap().active_deadline_seconds, Some(86_400));
    let unbounded = Config {
        default_active_deadline_seconds: None,
        ..config()
    };
    let none = build_job(&task(), &tool, &unbounded).unwrap();
    assert_eq!(none.spec.unwrap().active_deadline_seconds, None);
    let config = Config {
        default_active_deadline_seconds: Some(7200),
        ..config()
    };
    let job = build_job(&task(), &tool, &config).unwrap();
    assert_eq!(job.spec.unwrap().active_deadline_seconds, Some(7200));
}

#[test]
fn job_and_pod_carry_recommended_labels() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    let labels = job.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "mcp-task-operator");
    assert_eq!(labels["app.kubernetes.io/name"], "report");
    assert_eq!(
        labels["app.kubernetes.io/instance"],
        "abcdefghijklmnopqrstuvwxyz234567"
    );
    assert_eq!(labels[TASK_LABEL], "abcdefghijklmnopqrstuvwxyz234567");
    assert_eq!(labels[TOOL_LABEL], "report");
    assert_eq!(pod_meta(&job).labels.as_ref(), Some(labels));
}

#[test]
fn tool_container_gets_the_contract_env_and_mount() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    let container = &pod_spec(&job).containers[0];
    let env = env_of(container);
    assert_eq!(env[ENV_TASK_ID], "abcdefghijklmnopqrstuvwxyz234567");
    assert_eq!(env[ENV_TOOL_NAME], "restock_report");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&env[ENV_TOOL_ARGUMENTS]).unwrap(),
        json!({"sku": "A-1"})
    );
    assert!(
        !env.contains_key(ENV_START_INPUTS),
        "the tool has no startInputs"
    );
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].mount_path, "/var/run/mcp");
    assert_eq!(mounts[0].read_only, Some(true));
}

#[test]
fn downward_api_volume_projects_the_pod_annotations() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    let volume = &pod_spec(&job).volumes.as_ref().unwrap()[0];
    assert_eq!(
        downward_files(volume),
        [
            (
                "cancel-requested",
                "metadata.annotations['mcptasks.io/cancel-requested']"
            ),
            (
                "input-responses",
                "metadata.annotations['mcptasks.io/input-responses']"
            ),
        ]
    );
    let annotations = pod_annotations(&job);
    assert_eq!(annotations[CANCEL_REQUESTED_ANNOTATION], "");
    assert_eq!(annotations[POD_INPUT_RESPONSES_ANNOTATION], "{}");
}

#[test]
fn service_account_token_is_off_unless_the_template_sets_it() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    assert_eq!(pod_spec(&job).automount_service_account_token, Some(false));
    let job = build_job(&task(), &tool_from(SIDECAR_TOOL), &config()).unwrap();
    assert_eq!(pod_spec(&job).automount_service_account_token, Some(true));
}

#[test]
fn sidecar_template_is_kept_and_contract_names_win() {
    let job = build_job(&task(), &tool_from(SIDECAR_TOOL), &config()).unwrap();
    let spec = pod_spec(&job);
    assert_eq!(spec.service_account_name.as_deref(), Some("migrator"));
    let volumes: Vec<&str> = spec
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(volumes, ["scratch", "mcp-task"]);
    let (proxy, tool) = (&spec.containers[0], &spec.containers[1]);
    assert!(
        proxy.env.is_none() && proxy.volume_mounts.is_none(),
        "sidecar untouched"
    );
    let env = env_of(tool);
    assert_eq!(env[ENV_TASK_ID], "abcdefghijklmnopqrstuvwxyz234567");
    assert_eq!(env["LOG_LEVEL"], "debug");
    assert_eq!(
        tool.env.as_ref().unwrap().len(),
        6,
        "no duplicate MCP_TASK_ID"
    );
    // The fixture task declares no capabilities.
    assert_eq!(env[ENV_CLIENT_CAPABILITIES], "{}");
    assert_eq!(
        env[ENV_START_INPUTS], "{}",
        "tool has startInputs, task has no answers yet"
    );
    let mounts: Vec<&str> = tool
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert_eq!(mounts, ["/scratch", "/var/run/mcp"]);
    let meta = pod_meta(&job);
    assert_eq!(meta.labels.as_ref().unwrap()["team"], "data");
    assert_eq!(meta.annotations.as_ref().unwrap()["note"], "kept");
}

#[test]
fn answers_reach_env_and_annotations() {
    let mut task = task();
    task.spec.start_input_responses = Some(BTreeMap::from([(
        "confirm".into(),
        json!({"action": "accept"}).into(),
    )]));
    task.spec.input_responses = Some(BTreeMap::from([(
        "q1".into(),
        json!({"action": "decline"}).into(),
    )]));
    task.metadata.annotations = Some(BTreeMap::from([(
        CANCEL_REQUESTED_ANNOTATION.into(),
        "2026-08-01T12:00:05Z".into(),
    )]));
    let job = build_job(&task, &tool(), &config()).unwrap();
    let env = env_of(&pod_spec(&job).containers[0]);
    assert_eq!(env[ENV_START_INPUTS], r#"{"confirm":{"action":"accept"}}"#);
    let annotations = pod_annotations(&job);
    assert_eq!(
        annotations[CANCEL_REQUESTED_ANNOTATION],
        "2026-08-01T12:00:05Z"
    );
    assert_eq!(
        annotations[POD_INPUT_RESPONSES_ANNOTATION],
        r#"{"q1":{"action":"decline"}}"#
    );
}

#[test]
fn task_without_arguments_gets_an_empty_object() {
    let mut task = task();
    task.spec.arguments = None;
    let job = build_job(&task, &tool(), &config()).unwrap();
    assert_eq!(
        env_of(&pod_spec(&job).containers[0])[ENV_TOOL_ARGUMENTS],
        "{}"
    );
}

#[test]
fn caller_data_in_env_is_escaped_so_the_kubelet_expands_nothing() {
    let mut task = task();
    task.spec.arguments = Some(serde_json::from_value(json!({"name": "$(SECRET) a$$b"})).unwrap());
    task.spec.start_input_responses = Some(BTreeMap::from([("k".into(), json!("$(HOME)").into())]));
    let job = build_job(&task, &tool(), &config()).unwrap();
    let env = env_of(&pod_spec(&job).containers[0]);
    // The kubelet turns "$$" back into "$": the container sees the JSON as sent.
    assert_eq!(env[ENV_TOOL_ARGUMENTS], r#"{"name":"$$(SECRET) a$$$$b"}"#);
    assert_eq!(env[ENV_START_INPUTS], r#"{"k":"$$(HOME)"}"#);
}

#[test]
fn arguments_over_what_a_container_can_receive_are_refused() {
    let mut task = task();
    let at_limit = |extra: usize| {
        // {"a":"…"} plus "MCP_TOOL_ARGUMENTS=" and the NUL.
        let len = crate::contract::MAX_ENV_VAR_BYTES - ENV_TOOL_ARGUMENTS.len() - 2 - 8 + extra;
        Some(serde_json::from_value(json!({"a": "$".repeat(len)})).unwrap())
    };
    // Only the unescaped size counts: '$' doubles in the Job, not in the container.
    task.spec.arguments = at_limit(0);
    build_job(&task, &tool(), &config()).unwrap();
    task.spec.arguments = at_limit(1);
    let err = build_job(&task, &tool(), &config()).unwrap_err();
    assert!(matches!(err, BuildError::EnvTooLarge(_)), "{err}");
    assert!(err.to_string().contains("MCP_TOOL_ARGUMENTS"), "{err}");
}

#[test]
fn template_without_a_tool_container_is_an_error() {
    let mut tool = tool_from(SIDECAR_TOOL);
    let spec = tool.spec.template.spec.as_mut().unwrap();
    spec.containers[1].name = "worker".into();
    let err = build_job(&task(), &tool, &config()).unwrap_err();
    assert!(matches!(err, BuildError::NoToolContainer { .. }), "{err}");
    tool.spec.template.spec = None;
    assert!(matches!(
        build_job(&task(), &tool, &config()),
        Err(BuildError::NoToolContainer { .. })
    ));
}

#[test]
fn unstored_task_is_an_error() {
    let task = task_from(
        "apiVersion: mcptasks.io/v1alpha1\nkind: McpTask\n\
         metadata: {name: t, namespace: tools}\nspec: {tool: x, owner: a}\n",
    );
    let err = build_job(&task, &tool(), &config()).unwrap_err();
    assert_eq!(err.to_string(), "task has no metadata.uid");
}

#[test]
fn label_values_are_sanitized() {
    assert_eq!(label_value("report"), Some("report".into()));
    assert_eq!(label_value("-a b_c.-"), Some("ab_c".into()));
    assert_eq!(label_value(&"x".repeat(100)).unwrap().len(), 63);
    assert_eq!(label_value("--"), None);
}

#[test]
fn the_clients_capabilities_reach_the_tool_as_declared() {
    let mut task = task();
    task.spec.client_capabilities =
        serde_json::from_value(json!({"sampling": {}, "x": "$(HOME)"})).unwrap();
    let job = build_job(&task, &tool(), &config()).unwrap();
    let env = env_of(&pod_spec(&job).containers[0]);
    // Compact JSON, with `$` doubled so the kubelet expands nothing.
    assert_eq!(
        env[ENV_CLIENT_CAPABILITIES],
        r#"{"sampling":{},"x":"$$(HOME)"}"#
    );
}

#[test]
fn the_pod_leaves_a_lost_node_after_the_configured_time() {
    let job = build_job(&task(), &tool(), &config()).unwrap();
    let tolerations = pod_spec(&job).tolerations.clone().unwrap_or_default();
    for key in NODE_LOST_TAINTS {
        let t = tolerations
            .iter()
            .find(|t| t.key.as_deref() == Some(key))
            .unwrap_or_else(|| panic!("a toleration of {key}: {tolerations:?}"));
        assert_eq!(t.operator.as_deref(), Some("Exists"));
        assert_eq!(t.effect.as_deref(), Some("NoExecute"));
        assert_eq!(t.toleration_seconds, Some(60), "the default");
    }
    let config = Config {
        node_lost_toleration: std::time::Duration::from_secs(5),
        ..config()
    };
    let job = build_job(&task(), &tool(), &config).unwrap();
    let seconds: Vec<_> = pod_spec(&job)
        .tolerations
        .iter()
        .flatten()
        .map(|t| t.toleration_seconds)
        .collect();
    assert_eq!(seconds, [Some(5), Some(5)]);
}

#[test]
fn a_tools_own_toleration_of_a_lost_node_is_kept() {
    let mut tool = tool();
    let own = k8s_openapi::api::core::v1::Toleration {
        key: Some("node.kubernetes.io/unreachable".into()),
        operator: Some("Exists".into()),
        effect: Some("NoExecute".into()),
        toleration_seconds: Some(900),
        value: None,
    };
    let spec = tool.spec.template.spec.as_mut().unwrap();
    spec.tolerations = Some(vec![own.clone()]);
    let job = build_job(&task(), &tool, &config()).unwrap();
    let tolerations = pod_spec(&job).tolerations.clone().unwrap();
    assert_eq!(tolerations.len(), 2, "{tolerations:?}");
    assert_eq!(tolerations[0], own);
    assert_eq!(
        tolerations[1].key.as_deref(),
        Some("node.kubernetes.io/not-ready")
    );
    // A toleration of every taint (empty key, Exists) is never shortened.
    let all = k8s_openapi::api::core::v1::Toleration {
        operator: Some("Exists".into()),
        ..Default::default()
    };
    let spec = tool.spec.template.spec.as_mut().unwrap();
    spec.tolerations = Some(vec![all.clone()]);
    let job = build_job(&task(), &tool, &config()).unwrap();
    assert_eq!(pod_spec(&job).tolerations.clone().unwrap(), [all]);
}

#[test]
fn the_tool_container_gets_the_tasks_traceparent_only_when_it_is_valid_w3c() {
    let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traceparent_env = |annotation: Option<&str>| {
        let mut task = task();
        if let Some(value) = annotation {
            task.metadata.annotations = Some(BTreeMap::from([(
                TRACEPARENT_ANNOTATION.to_owned(),
                value.to_owned(),
            )]));
        }
        let job = build_job(&task, &tool(), &config()).unwrap();
        env_of(&pod_spec(&job).containers[0]).remove("TRACEPARENT")
    };
    assert_eq!(traceparent_env(Some(valid)).as_deref(), Some(valid));
    assert_eq!(traceparent_env(None), None);
    // Anyone who may edit the task may edit the annotation: nothing else reaches the container.
    for malformed in [
        "",
        "$(SECRET)",
        &valid.to_uppercase(),
        &format!("{valid} $(SECRET)"),
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    ] {
        assert_eq!(traceparent_env(Some(malformed)), None, "{malformed:?}");
    }
    // A later version is passed on as version 00, flags reduced to sampled.
    let later = valid.replacen("00", "01", 1).replace("-01", "-03");
    assert_eq!(traceparent_env(Some(&later)).as_deref(), Some(valid));
}
