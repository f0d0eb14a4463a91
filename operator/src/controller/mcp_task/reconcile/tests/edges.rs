//! Reconciles at the edges: answers too large for the pod, a Job the API server refuses.

use super::*;

#[tokio::test]
async fn answers_too_large_for_the_pod_fail_the_task_after_the_cancel_reached_it() {
    let mut task = live_task();
    let big = "x".repeat(300 * 1024);
    task.spec.input_responses = Some(BTreeMap::from([("q".into(), json!({"text": big}))]));
    let current = json!({"mcptasks.io/cancel-requested": "", "mcptasks.io/input-responses": "{}"});
    let pods = pod_list("Running", json!({"running": {}}), current);
    // No PATCH of the pod: the answers cannot fit, and the cancel is already there.
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![tool()])),
        Call::ok(Method::GET, JOB, job_json()),
        Call::ok(Method::GET, PODS, pods),
        fresh_read(&task),
        Call::ok(Method::DELETE, JOB, job_json()),
        status_call(&task),
        Call::event("tools"),
    ];
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
    let calls = vec![
        Call::ok(Method::GET, TOOLS, tool_list(vec![tool()])),
        Call::not_found(JOB),
        claim_call(&task),
        Call::refused(Method::POST, JOBS, 403, quota),
        fresh_read(&task),
        status_call(&task),
        Call::event("tools"),
    ];
    let (_, bodies) = run(task, calls).await;
    let status = &bodies[5]["status"];
    assert_eq!(status["status"], "failed");
    assert_eq!(status["error"]["data"]["reason"], "JobRefused");
    assert_eq!(status["error"]["data"]["detail"], quota);
}
