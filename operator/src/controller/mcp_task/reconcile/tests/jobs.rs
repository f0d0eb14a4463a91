//! Reconciles of a task's lifetime and of its one Job: a running task's expiry moves ahead
//! instead of the task being deleted; the Job is recorded (if the task is as read) before it
//! is created; an earlier task's Job of the same name is waited for.

use super::*;

/// A conflict (409) answer to a patch made with a stale `resourceVersion`.
fn conflict(path: &str) -> Call {
    Call::refused(Method::PATCH, path, 409, "the object has been modified")
}

#[tokio::test]
async fn a_running_task_past_its_ttl_is_extended_not_deleted() {
    // The fixture was created on 2026-08-01 with a one-hour TTL: long past, still working.
    let mut running = with_status(task(), TaskStatus::Working, Some(ID));
    running.spec.tool = "missing".into();
    running.metadata.resource_version = Some("7".into());
    let before = Timestamp::now();
    let calls = vec![
        // The expiry moves: no DELETE of the task.
        status_call(&running),
        Call::event("tools"),
        tool_lookup(vec![]),
        Call::not_found(JOB),
    ];
    let (ctx, server, _triggers) = crate::fixtures::api::context(calls);
    let reconciled = reconcile(Arc::new(DeserializeGuard(Ok(running))), ctx);
    // What follows (the JobDeleted failure) is not scripted: stop there.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), reconciled).await;
    let bodies = server.await.expect("every expected call was made");
    assert_eq!(bodies[0]["metadata"]["resourceVersion"], "7");
    let moved: Timestamp = bodies[0]["status"]["expiresAt"]
        .as_str()
        .expect("expiresAt")
        .parse()
        .unwrap();
    // A one-hour TTL moves a minute ahead.
    let ahead = moved.duration_since(before);
    assert!(ahead >= SignedDuration::from_secs(59), "{ahead:?}");
    assert!(ahead <= SignedDuration::from_secs(61), "{ahead:?}");
    assert_eq!(bodies[1]["reason"], "TTLExtended");
}

#[tokio::test]
async fn a_stale_copy_of_a_running_task_is_not_extended_and_is_read_again() {
    let mut running = task();
    running.metadata.resource_version = Some("6".into());
    let (action, _) = run(running, vec![conflict(&format!("{TASK}/status"))]).await;
    assert_eq!(action, Action::requeue(STALE_RETRY));
}

#[tokio::test]
async fn a_stale_copy_without_a_job_record_creates_no_job() {
    // The cache says no Job was recorded; the API server has a newer task (say it recorded
    // the Job, which was deleted since): the record is refused, and nothing is created.
    let task = live_task();
    let mut calls = no_job_yet(vec![tool()]);
    calls.push(conflict(&format!("{TASK}/status")));
    let (action, bodies) = run(task, calls).await;
    assert_eq!(bodies[2]["status"]["jobName"], ID);
    assert_eq!(action, Action::requeue(STALE_RETRY));
}

#[tokio::test]
async fn the_job_of_an_earlier_task_of_the_name_is_waited_for_not_adopted() {
    let mut task = live_task();
    // Created just now: well within the wait.
    task.metadata.creation_timestamp = Some(Time(Timestamp::now()));
    let mut earlier = job_json();
    earlier["metadata"]["ownerReferences"][0]["uid"] = json!("earlier-task-uid");
    // No record, no POST, no pod list: a working status that says what it waits for.
    let calls = [job_found(earlier.clone()), working_write(&task)].concat();
    let (action, bodies) = run(task.clone(), calls).await;
    let status = &bodies[2]["status"];
    assert_eq!(status["status"], "working");
    assert!(status.get("jobName").is_none(), "{status}");
    let message = status["statusMessage"].as_str().unwrap();
    assert!(message.contains("of an earlier task"), "{message}");
    assert!(action != Action::await_change());

    // Past the wait, it fails as before (JobConflict) and leaves the Job alone.
    task.metadata.creation_timestamp = Some(Time(Timestamp::now() - SignedDuration::from_secs(61)));
    let calls = [job_found(earlier), terminal_write(&task)].concat();
    let (_, bodies) = run(task, calls).await;
    assert_eq!(
        bodies[3]["status"]["error"]["data"]["reason"],
        "JobConflict"
    );
}

#[tokio::test]
async fn a_recorded_job_never_confirmed_and_missing_is_created_without_a_new_record() {
    // The half-done record a leader that ended between the record and the POST leaves.
    let task = with_status(live_task(), TaskStatus::Working, Some(ID));
    let calls = [
        no_job_yet(vec![tool()]),
        // The API server's copy is read: it is not confirmed there either.
        vec![fresh_read(&task)],
        job_created(),
        // Still working: no transition Event.
        vec![status_call(&task)],
    ]
    .concat();
    let (_, bodies) = run(task, calls).await;
    assert_eq!(bodies[3]["metadata"]["name"], ID);
    assert_eq!(
        bodies[3]["metadata"]["ownerReferences"][0]["uid"],
        "task-uid"
    );
    assert_eq!(bodies[4]["reason"], "JobCreated");
    assert_eq!(bodies[6]["status"]["status"], "working");
}

#[tokio::test]
async fn a_recorded_job_confirmed_on_the_api_server_but_not_in_the_cache_is_not_recreated() {
    let cached = with_status(live_task(), TaskStatus::Working, Some(ID));
    let stored = confirmed_task();
    let mut calls = no_job_yet(vec![tool()]);
    calls.push(fresh_read(&stored));
    // No POST: the Job was created and deleted since; the task fails.
    calls.extend(terminal_write(&stored));
    let (_, bodies) = run(cached, calls).await;
    assert_eq!(bodies[4]["status"]["status"], "failed");
    assert_eq!(bodies[4]["status"]["error"]["data"]["reason"], "JobDeleted");
}
