//! Tests for building a warm Job.

use super::*;
use crate::fixtures::tool;

fn config() -> Config {
    Config::from_lookup(|k| (k == "MCP_OPERATOR_BRIDGE_IMAGE").then(|| "bridge:1".to_owned()))
        .unwrap()
}

fn pooled() -> McpTool {
    let mut t = tool();
    t.spec.warm_pool = Some(mcp_task_operator_crds::WarmPool::default());
    let c = &mut t.spec.template.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec!["/bin/tool".into(), "--fast".into()]);
    c.args = Some(vec!["x".into()]);
    t
}

fn env_of(job: &Job) -> BTreeMap<String, String> {
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    pod.containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn a_warm_pod_runs_the_tool_behind_the_launcher_and_holds_no_task_data() {
    let key = ClaimKey::from_bytes(&[3u8; 32]);
    let job = warm_job(&pooled(), &config(), &key, "report-wabc").unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let tool = &pod.containers[0];
    assert_eq!(
        tool.command.as_deref().unwrap(),
        [
            "/mcp-bridge-bin/mcp-bridge",
            "--launch",
            "--",
            "/bin/tool",
            "--fast",
            "x"
        ]
    );
    assert!(tool.args.is_none());
    let env = env_of(&job);
    assert_eq!(
        env[ENV_CLAIM_KEY_SHA256],
        key.secret_hash("tools", "report-wabc")
    );
    assert_eq!(env[ENV_PORT], "7474");
    assert_eq!(env[ENV_MAX_WAIT_SECONDS], "660");
    for task_var in [
        "MCP_TASK_ID",
        "MCP_TOOL_ARGUMENTS",
        "MCP_TOOL_NAME",
        "MCP_MESSAGE_NONCE",
    ] {
        assert!(
            !env.contains_key(task_var),
            "{task_var} arrives with the claim"
        );
    }
    assert!(
        !env.values()
            .any(|v| v == &key.secret("tools", "report-wabc"))
    );
    let probe = tool
        .readiness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(probe.path.as_deref(), Some("/ready"));
    // The launcher comes from the bridge image; the contract volume is there for cancel and
    // answers, with the annotations it projects.
    assert_eq!(
        pod.init_containers.as_ref().unwrap()[0].image.as_deref(),
        Some("bridge:1")
    );
    assert!(pod.volumes.iter().flatten().any(|v| v.name == "mcp-task"));
    let meta = job
        .spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap();
    let annotations = meta.annotations.as_ref().unwrap();
    assert_eq!(annotations[CANCEL_REQUESTED_ANNOTATION], "");
    assert_eq!(meta.labels.as_ref().unwrap()[WARM_POOL_LABEL], "report");
    // Owned by the tool until a task claims it; the run time counts from the claim.
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("McpTool", "tool-uid")
    );
    assert_eq!(job.spec.as_ref().unwrap().active_deadline_seconds, None);
    assert_eq!(job.annotations()[WARM_KEY_ANNOTATION], key.id());
    assert_eq!(job.annotations()[WARM_GENERATION_ANNOTATION], "1");
}

#[test]
fn a_bridged_servers_pod_starts_its_server_before_the_claim() {
    let mut t = pooled();
    let c = &mut t.spec.template.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec![
        BRIDGE_BINARY.into(),
        "--".into(),
        "python".into(),
        "-m".into(),
        "srv".into(),
    ]);
    c.args = None;
    c.env = Some(vec![EnvVar {
        name: MESSAGE_NONCE_ENV.into(),
        value: Some("from-an-annotation".into()),
        value_from: None,
    }]);
    let key = ClaimKey::from_bytes(&[3u8; 32]);
    let job = warm_job(&t, &config(), &key, "srv-w1").unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(
        pod.containers[0].command.as_deref().unwrap(),
        [BRIDGE_BINARY, "--warm", "--", "python", "-m", "srv"]
    );
    assert!(
        !env_of(&job).contains_key(MESSAGE_NONCE_ENV),
        "the nonce comes with the claim"
    );
}

#[test]
fn a_reused_servers_pod_serves_call_after_call_and_ends_when_idle() {
    let mut t = pooled();
    let c = &mut t.spec.template.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec![BRIDGE_BINARY.into(), "--".into(), "srv".into()]);
    c.args = None;
    let pool = t.spec.warm_pool.as_mut().unwrap();
    pool.reuse = Some(mcp_task_operator_crds::warm_pool::Reuse::PerCaller);
    pool.idle_seconds = 30;
    let job = warm_job(&t, &config(), &ClaimKey::random(), "srv-w1").unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(
        pod.containers[0].command.as_deref().unwrap(),
        [BRIDGE_BINARY, "--serve", "--", "srv"]
    );
    assert_eq!(
        env_of(&job)[ENV_MAX_WAIT_SECONDS],
        "30",
        "a session ends after idleSeconds"
    );
    // A native tool's process serves one call: no reuse.
    let mut native = pooled();
    native.spec.warm_pool.as_mut().unwrap().reuse =
        Some(mcp_task_operator_crds::warm_pool::Reuse::PerCaller);
    let err = warm_job(&native, &config(), &ClaimKey::random(), "n").unwrap_err();
    assert!(matches!(err, WarmError::ReuseNeedsServer), "{err}");
}

#[test]
fn pools_that_cannot_start_pods_say_why() {
    let key = ClaimKey::random();
    let mut t = pooled();
    t.spec.template.spec.as_mut().unwrap().containers[0].command = None;
    let err = warm_job(&t, &config(), &key, "n").unwrap_err();
    assert!(matches!(err, WarmError::NoCommand), "{err}");
    let mut t = pooled();
    t.spec.retry_on_disruption = Some(2);
    assert!(matches!(
        warm_job(&t, &config(), &key, "n").unwrap_err(),
        WarmError::Retries
    ));
    let bare = Config::from_lookup(|_| None).unwrap();
    assert!(matches!(
        warm_job(&pooled(), &bare, &key, "n").unwrap_err(),
        WarmError::NoBridgeImage
    ));
}

#[test]
fn warm_job_names_fit_a_label_value() {
    let mut t = pooled();
    t.metadata.name = Some(format!("{}-.x", "a".repeat(49)));
    let name = warm_job_name(&t);
    assert!(name.len() <= 63, "{name}");
    assert!(name.starts_with(&"a".repeat(49)));
    assert_ne!(warm_job_name(&t), name, "random");
}
