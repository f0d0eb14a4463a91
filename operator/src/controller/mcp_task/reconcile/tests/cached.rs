//! Reconciles that read the task's Job and pods from the operator's caches: no GET or LIST on
//! the steady path, and one request to confirm where a lagging cache would end the task.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{reflector, watcher};

use super::*;
use crate::controller::mcp_task::cache::{Caches, PodIndex};
use crate::controller::mcp_task::follow::LOGS_PENDING;

/// Caches that have had their first list, holding `jobs` and `pods`.
fn caches(jobs: Vec<Value>, pods: Vec<Value>) -> Caches {
    let (job_store, mut job_writer) = reflector::store::<Job>();
    let (pod_store, mut pod_writer) = reflector::store::<Pod>();
    let index = PodIndex::default();
    job_writer.apply_watcher_event(&watcher::Event::Init);
    for job in jobs {
        job_writer.apply_watcher_event(&watcher::Event::InitApply(
            serde_json::from_value(job).unwrap(),
        ));
    }
    job_writer.apply_watcher_event(&watcher::Event::InitDone);
    pod_writer.apply_watcher_event(&watcher::Event::Init);
    for pod in pods {
        let event = watcher::Event::InitApply(serde_json::from_value(pod).unwrap());
        index.observe(&event);
        pod_writer.apply_watcher_event(&event);
    }
    pod_writer.apply_watcher_event(&watcher::Event::InitDone);
    // The stores keep their data while a reader lives; the writers may go.
    Caches {
        jobs: job_store,
        pods: pod_store,
        pods_by_job: index,
    }
}

fn running_pod() -> Value {
    pod_list("Running", json!({"running": {}}), settled_annotations())["items"][0].clone()
}

/// Reconciles `task` once with `caches` set, against a mock serving `calls` and answering
/// every log request with `logs`.
async fn run_cached(
    task: McpTask,
    calls: Vec<Call>,
    logs: &'static str,
    caches: Caches,
) -> (Action, Vec<Value>) {
    let (ctx, server, _triggers) = crate::fixtures::api::context_with_logs(calls, logs);
    ctx.caches.set(caches).unwrap();
    let action = reconcile(Arc::new(DeserializeGuard(Ok(task))), ctx)
        .await
        .unwrap();
    (action, server.await.unwrap())
}

/// A tool's output that ends it with an empty result.
const EMPTY_RESULT: &str = "{\"mcp\":\"result\",\"result\":{\"content\":[]}}\n";

#[tokio::test]
async fn a_running_task_reads_its_job_and_pods_from_the_cache_not_the_api() {
    let task = live_task();
    // Only the tool lookup (no tool cache in this test) and the status write: no GET of the
    // Job, no LIST of pods.
    let calls = [vec![tool_lookup(vec![tool()])], working_write(&task)].concat();
    let cached = caches(vec![job_json()], vec![running_pod()]);
    let (_, bodies) = run_cached(task, calls, "", cached).await;
    assert_eq!(bodies[1]["status"]["status"], "working");
    assert_eq!(bodies[1]["status"]["statusMessage"], "Running");
}

#[tokio::test]
async fn a_confirmed_job_missing_from_the_cache_is_read_before_the_task_fails_job_deleted() {
    // The Job was created and confirmed, but the cache has not seen it yet.
    let task = confirmed_task();
    let calls = job_found(job_json());
    let (action, bodies) = run_cached(task, calls, "", caches(vec![], vec![running_pod()])).await;
    // Found: the task runs, and nothing is written before its note "Running" has stood (the
    // mock refuses any call after the two reads, a failure's write included).
    assert_eq!(bodies.len(), 2);
    let wait = requeue_secs(&action);
    assert!(
        wait > 1.0 && wait <= START_NOTE_SETTLE.as_secs_f64(),
        "{action:?}"
    );
}

#[tokio::test]
async fn a_finished_job_whose_pod_is_missing_from_the_cache_lists_pods_before_failing() {
    let task = live_task();
    let mut job = job_json();
    job["status"] = json!({"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True"}]});
    let stopped = pod_list(
        "Succeeded",
        json!({"terminated": {"exitCode": 0}}),
        json!({}),
    );
    let calls = vec![
        tool_lookup(vec![tool()]),
        Call::ok(Method::GET, PODS, stopped),
    ];
    let (action, bodies) = run_cached(task, calls, EMPTY_RESULT, caches(vec![job], vec![])).await;
    assert_eq!(bodies.len(), 2, "no status write yet: {bodies:?}");
    // The pod was found: its log is read before anything is decided.
    assert_eq!(action, Action::requeue(LOGS_PENDING));
}

/// Reconciles a task whose Job (with `job_status`) is cached and has no pod in the cache, at
/// `now`.
async fn starting_with(job_status: Value, calls: Vec<Call>, now: &str) -> (Action, Vec<Value>) {
    let task = live_task();
    let mut job = job_json();
    job["status"] = job_status;
    let (ctx, server, _triggers) = crate::fixtures::api::context_with_logs(calls, "");
    ctx.caches.set(caches(vec![job], vec![])).unwrap();
    let action = super::super::reconcile_task(&task, &ctx, now.parse().unwrap())
        .await
        .unwrap();
    (action, server.await.unwrap())
}

#[tokio::test]
async fn a_starting_task_lists_events_only_once_its_pods_may_have_been_refused() {
    let task = live_task();
    let waiting = [vec![tool_lookup(vec![tool()])], working_write(&task)].concat();
    let now = "2020-01-01T00:00:10Z";
    // Not synced by the Job controller yet, or its pod not in the cache yet: no request, and
    // no clock runs (the pod's or the Job's next change wakes the task; else the resync).
    for status in [
        json!({}),
        json!({"startTime": "2020-01-01T00:00:00Z", "active": 1}),
    ] {
        let (action, bodies) = starting_with(status, waiting.clone(), now).await;
        assert_eq!(
            bodies[1]["status"]["statusMessage"],
            "Waiting for the Job to create a pod"
        );
        assert!(
            requeue_secs(&action) >= 300.0,
            "the resync (300 s and up): {action:?}"
        );
    }
    // Synced 10 s ago: looked at again when a refusal could count (the grace period, 30 s).
    let (action, _) = starting_with(
        json!({"startTime": "2020-01-01T00:00:00Z"}),
        waiting.clone(),
        now,
    )
    .await;
    assert_eq!(action, Action::requeue(Duration::from_secs(20)));
    // Synced long ago, and no pod: its FailedCreate Events are read, and again later.
    // Reads the tool and the task's Events (`events`), then writes a working status.
    let refused_with = |events: Value| {
        let reads = vec![
            tool_lookup(vec![tool()]),
            Call::ok(Method::GET, EVENTS, events),
        ];
        [reads, working_write(&task)].concat()
    };
    let (action, bodies) = starting_with(
        json!({"startTime": "2020-01-01T00:00:00Z"}),
        refused_with(no_events()),
        "2020-01-01T00:05:00Z",
    )
    .await;
    assert_eq!(bodies[2]["status"]["status"], "working");
    let poll = Duration::try_from(crate::controller::mcp_task::observe::REFUSAL_POLL).unwrap();
    assert_eq!(action, Action::requeue(poll));
    // Refused from 5 s after the sync: looked at again when that refusal counts (30 s on).
    let refusal = json!({"apiVersion": "events.k8s.io/v1", "kind": "EventList", "metadata": {},
        "items": [{"metadata": {"name": "e1", "namespace": "tools"}, "reason": "FailedCreate",
                   "eventTime": "2020-01-01T00:00:05.000000Z", "note": "exceeded quota",
                   "reportingController": "job-controller", "reportingInstance": "kcm"}]});
    let synced = json!({"startTime": "2020-01-01T00:00:00Z"});
    let (action, bodies) =
        starting_with(synced, refused_with(refusal), "2020-01-01T00:00:31Z").await;
    assert_eq!(bodies[2]["status"]["status"], "working");
    assert_eq!(action, Action::requeue(Duration::from_secs(4)));
}

#[tokio::test]
async fn a_terminal_status_this_replica_wrote_is_not_read_again_while_the_cache_lags() {
    let task = live_task();
    let mut job = job_json();
    job["status"] = json!({"succeeded": 1, "startTime": "2020-01-01T00:00:00Z"});
    let stopped = pod_list(
        "Succeeded",
        json!({"terminated": {"exitCode": 0}}),
        settled_annotations(),
    )["items"][0]
        .clone();
    // One fresh read, the terminal write and its Event; then nothing (the mock is gone).
    let calls = terminal_write(&task);
    let (ctx, server, _triggers) = crate::fixtures::api::context_with_logs(calls, EMPTY_RESULT);
    ctx.caches.set(caches(vec![job], vec![stopped])).unwrap();
    let (tools, mut writer) = reflector::store::<DeserializeGuard<McpTool>>();
    writer.apply_watcher_event(&watcher::Event::Apply(DeserializeGuard(Ok(tool()))));
    ctx.tools.set(tools).unwrap();
    let guard = Arc::new(DeserializeGuard(Ok(task)));
    // The follower reads the log in the background: look again until the task is decided.
    let mut runs = 0;
    while !server.is_finished() {
        runs += 1;
        assert!(runs < 100, "the task was never written terminal");
        reconcile(Arc::clone(&guard), Arc::clone(&ctx))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let bodies = server.await.unwrap();
    assert_eq!(bodies[1]["status"]["status"], "completed");
    // The controller's cache still shows the task working: the next run reads nothing and
    // starts no follower (which would read the log again, then the task).
    let uid = guard.0.as_ref().unwrap().uid().unwrap();
    let action = reconcile(guard, Arc::clone(&ctx)).await.unwrap();
    assert_eq!(action, Action::requeue(STALE_RETRY));
    assert!(
        ctx.followers.state(&uid).is_none(),
        "a follower was started"
    );
}
