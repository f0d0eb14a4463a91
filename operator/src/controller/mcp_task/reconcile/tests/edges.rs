//! Reconciles at the edges: answers too large for the pod, a Job the API server refuses.

use super::*;

#[tokio::test]
async fn answers_too_large_for_the_pod_fail_the_task_after_the_cancel_reached_it() {
    let mut task = live_task();
    let big = "x".repeat(300 * 1024);
    task.spec.input_responses = Some(BTreeMap::from([("q".into(), json!({"text": big}).into())]));
    let pods = pod_list("Running", json!({"running": {}}), settled_annotations());
    // No PATCH of the pod: the answers cannot fit, and the cancel is already there.
    let calls = [job_and_pods(job_json(), pods), stop_and_write(&task)].concat();
    let (_, bodies) = run(task, calls).await;
    let status = &bodies[5]["status"];
    assert_eq!(status["status"], "failed");
    assert_eq!(status["error"]["data"]["reason"], "InputTooLarge");
    let detail = status["error"]["data"]["detail"].as_str().unwrap();
    assert!(detail.contains("262144-byte limit"), "{detail}");
}

#[tokio::test]
async fn a_job_the_api_server_refuses_fails_the_task_at_once() {
    let task = live_task();
    let quota =
        "jobs.batch \"x\" is forbidden: exceeded quota: none, requested: count/jobs.batch=1";
    let mut calls = no_job_yet(vec![tool()]);
    // The Job's record, then its creation.
    calls.extend([
        status_call(&task),
        Call::refused(Method::POST, JOBS, 403, quota),
    ]);
    calls.extend(terminal_write(&task));
    let (_, bodies) = run(task, calls).await;
    let status = &bodies[5]["status"];
    assert_eq!(status["status"], "failed");
    assert_eq!(status["error"]["data"]["reason"], "JobRefused");
    assert_eq!(status["error"]["data"]["detail"], quota);
}
