//! Smoke tests of the local cluster itself: real Jobs with real pods, logs through the API,
//! downward-API refresh, and pods reaching the API server through the `kubernetes` Service.

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::{
    Api, Client,
    api::{ListParams, LogParams, Patch, PatchParams, PostParams},
    runtime::wait::Condition,
};
use mcp_task_operator_harness::{wait_for, with_temp_ns};
use serde_json::json;

const BUSYBOX: &str = "localhost/busybox:1.35";
/// busybox plus curl, built by `hack/images.sh base`.
const TOOLBOX: &str = "localhost/toolbox:v1";

/// A Job whose one pod runs `script` in `image`, never retried.
fn job(name: &str, image: &str, script: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main", "image": image, "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                }],
            }},
        },
    }))
    .expect("job fixture is valid")
}

/// The single pod of a Job.
async fn job_pod(pods: &Api<Pod>, job: &str) -> Pod {
    let lp = ListParams::default().labels(&format!("job-name={job}"));
    for _ in 0..300 {
        if let Some(pod) = pods
            .list(&lp)
            .await
            .expect("list pods")
            .items
            .into_iter()
            .next()
        {
            return pod;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("job {job} made no pod in 30 s");
}

/// A Job that completed or failed: either way its pod's logs tell the story.
fn job_finished() -> impl Condition<Job> {
    |job: Option<&Job>| {
        job.and_then(|j| j.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|conds| {
                conds
                    .iter()
                    .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            })
    }
}

fn pod_running() -> impl Condition<Pod> {
    |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|phase| phase == "Running")
    }
}

/// Runs `script` in a Job `name` of `image` until it finishes (2 minutes at most): its pod and
/// the pod's log, read through the API server.
async fn run_job(
    client: &Client,
    ns: &str,
    name: &str,
    image: &str,
    script: &str,
) -> (Pod, String) {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    jobs.create(&PostParams::default(), &job(name, image, script))
        .await
        .expect("create job");
    wait_for(&jobs, name, job_finished(), Duration::from_secs(120)).await;
    let pod = job_pod(&pods, name).await;
    let logs = pods
        .logs(
            pod.metadata.name.as_deref().expect("pod has a name"),
            &LogParams::default(),
        )
        .await
        .expect("read pod logs through the API server");
    (pod, logs)
}

#[tokio::test]
async fn job_from_local_image_completes_and_its_logs_are_read_through_the_api() {
    with_temp_ns("smoke-job", |client, ns| async move {
        let script = "for i in 1 2 3; do echo line $i; done";
        let (pod, logs) = run_job(&client, &ns, "hello", BUSYBOX, script).await;
        assert_eq!(logs, "line 1\nline 2\nline 3\n");
        let exit = pod.status.and_then(|s| s.container_statuses).and_then(|c| {
            c[0].state
                .as_ref()?
                .terminated
                .as_ref()
                .map(|t| t.exit_code)
        });
        assert_eq!(exit, Some(0));
    })
    .await;
}

#[tokio::test]
async fn pod_annotation_change_reaches_the_container_through_a_downward_api_volume() {
    with_temp_ns("smoke-downward", |client, ns| async move {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        // The container prints the file whenever it changes, so the log stream shows when the
        // kubelet refreshed it.
        let script = r#"last=; while :; do v=$(cat /var/run/mcp/value); \
            if [ "$v" != "$last" ]; then echo "value=$v"; last=$v; fi; sleep 0.05; done"#;
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "watcher", "annotations": {"mcptasks.io/value": "initial"}},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "main", "image": BUSYBOX, "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "mcp", "mountPath": "/var/run/mcp"}],
                }],
                "volumes": [{"name": "mcp", "downwardAPI": {"items": [{
                    "path": "value",
                    "fieldRef": {"fieldPath": "metadata.annotations['mcptasks.io/value']"},
                }]}}],
            },
        }))
        .expect("pod fixture is valid");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
        wait_for(&pods, "watcher", pod_running(), Duration::from_secs(120)).await;

        let mut lines = pods
            .log_stream(
                "watcher",
                &LogParams {
                    follow: true,
                    ..LogParams::default()
                },
            )
            .await
            .expect("follow logs")
            .lines();
        let first = lines
            .try_next()
            .await
            .expect("read log")
            .expect("a first line");
        assert_eq!(first, "value=initial");

        let mut samples = Vec::new();
        for round in 1..=3 {
            let value = format!("changed-{round}");
            let patch = json!({"metadata": {"annotations": {"mcptasks.io/value": value}}});
            let sent = Instant::now();
            pods.patch("watcher", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("patch annotation");
            let seen = tokio::time::timeout(Duration::from_secs(120), async {
                while let Some(line) = lines.try_next().await.expect("read log") {
                    if line == format!("value={value}") {
                        return;
                    }
                }
                panic!("log stream ended before {value} was seen");
            })
            .await;
            assert!(
                seen.is_ok(),
                "the container never saw annotation value {value}"
            );
            samples.push(sent.elapsed());
        }
        println!(
            "downward-API refresh latency (annotation patch -> file in container): {samples:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn pod_reaches_the_api_server_through_the_kubernetes_service_and_nothing_else() {
    with_temp_ns("smoke-apiserver", |client, ns| async move {
        // /api needs an authenticated caller, so a 200 proves the Service routes to the API
        // server, its certificate verifies against the cluster CA and the service-account
        // token is accepted. `ip route` shows the pod has no default route: the bridge subnet
        // and the Service range are all it can reach.
        let script = r#"set -e
            sa=/var/run/secrets/kubernetes.io/serviceaccount
            echo "service=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
            curl -sS --fail --cacert $sa/ca.crt -H "Authorization: Bearer $(cat $sa/token)" \
              "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api"; echo
            ip route | sed 's/^/route: /'"#;
        let (_, logs) = run_job(&client, &ns, "reach-api", TOOLBOX, script).await;
        assert!(logs.contains("service=10.96.0.1:443"), "{logs}");
        assert!(logs.contains(r#""kind": "APIVersions""#), "{logs}");
        let routes: Vec<&str> = logs.lines().filter(|l| l.starts_with("route: ")).collect();
        assert!(!routes.is_empty(), "{logs}");
        assert!(
            routes.iter().all(|r| !r.contains("default")),
            "pod has a default route: {routes:?}"
        );
        assert!(
            routes
                .iter()
                .any(|r| r.contains("10.96.0.0/16 via 10.244.0.1")),
            "{routes:?}"
        );
    })
    .await;
}
