//! Reconciles of a task whose Job has a pod: answers reach it, its output is read, a cancel
//! stops it, a restarted follower replays its log; pods and Jobs not the task's are left alone.

use super::*;
use crate::controller::mcp_task::follow::LOGS_PENDING;

#[tokio::test]
async fn answers_reach_the_running_pods_annotations() {
    let mut task = live_task();
    task.spec.input_responses = Some(BTreeMap::from([(
        "q".into(),
        json!({"action": "accept"}).into(),
    )]));
    // The answers are not on the pod yet.
    let pods = pod_list("Running", json!({"running": {}}), settled_annotations());
    let mut calls = job_and_pods(job_json(), pods.clone());
    calls.push(pod_patch(&pods));
    calls.extend(working_write(&task));
    let (_, bodies) = run(task, calls).await;
    assert_eq!(
        bodies[3],
        json!({"metadata": {"annotations": {
               "mcptasks.io/input-responses": "{\"q\":{\"action\":\"accept\"}}"}}})
    );
    assert_eq!(bodies[4]["status"]["status"], "working");
    assert_eq!(bodies[4]["status"]["statusMessage"], "Running");
}

#[tokio::test]
async fn exited_tool_completes_with_its_output_once_the_logs_are_read() {
    let task = live_task();
    let pods = pod_list(
        "Succeeded",
        json!({"terminated": {"exitCode": 0}}),
        json!({}),
    );
    let observe = || job_and_pods(job_json(), pods.clone());
    let calls = [observe(), observe(), terminal_write(&task)].concat();
    let (ctx, server, _triggers) = crate::fixtures::api::context_with_logs(
        calls,
        "hello\n{\"mcp\":\"status\",\"message\":\"done\"}\nworld",
    );
    let guard = Arc::new(DeserializeGuard(Ok(task)));

    let first = reconcile(Arc::clone(&guard), Arc::clone(&ctx))
        .await
        .unwrap();
    assert_eq!(
        first,
        Action::requeue(LOGS_PENDING),
        "no outcome before the logs are read"
    );
    let state = ctx.followers.state("task-uid").expect("a follower runs");
    // The follower reads the stopped container's log twice: the same bytes, so it is whole.
    while lock(&state).view().verdict == crate::controller::mcp_task::follow::Verdict::Reading {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    reconcile(guard, ctx).await.unwrap();
    let bodies = server.await.unwrap();
    let status = &bodies[7]["status"];
    assert_eq!(status["status"], "completed");
    assert_eq!(status["statusMessage"], "done");
    assert_eq!(status["result"]["content"][0]["text"], "hello\nworld");
    assert_eq!(status["result"]["isError"], false);
    assert_eq!(bodies[8]["reason"], "Completed");
}

#[tokio::test]
async fn running_tool_past_its_cancel_grace_is_stopped_and_cancelled() {
    let task = with_cancel(live_task());
    let pods = pod_list("Running", json!({"running": {}}), json!({}));
    let mut calls = job_and_pods(job_json(), pods.clone());
    calls.extend([pod_patch(&pods), pod_patch(&pods)]);
    calls.extend(stop_and_write(&task));
    let (_, bodies) = run(task, calls).await;
    // The cancel goes alone, first: it never waits on answers that may not fit.
    assert_eq!(
        bodies[3],
        json!({"metadata": {"annotations": {"mcptasks.io/cancel-requested": "2026-08-01T12:00:01Z"}}})
    );
    assert_eq!(bodies[7]["status"]["status"], "cancelled");
    assert_eq!(
        bodies[7]["status"]["statusMessage"],
        "Cancelled; the tool did not stop within its grace period"
    );
}

#[tokio::test]
async fn a_pod_that_only_copies_the_job_name_label_is_never_read_or_annotated() {
    let mut task = live_task();
    task.spec.input_responses = Some(BTreeMap::from([(
        "q".into(),
        json!({"action": "accept"}).into(),
    )]));
    let mut pods = pod_list("Running", json!({"running": {}}), json!({}));
    pods["items"][0]["metadata"]["ownerReferences"] = json!([]);
    // No PATCH of the pod and no log read: the task waits for its own Job's pod.
    let calls = [job_and_pods(job_json(), pods), working_write(&task)].concat();
    let (_, bodies) = run(task, calls).await;
    assert_eq!(bodies[3]["status"]["status"], "working");
    assert_eq!(
        bodies[3]["status"]["statusMessage"],
        "Waiting for the Job to create a pod"
    );
}

#[tokio::test]
async fn a_job_of_the_tasks_name_it_does_not_control_fails_the_task_and_is_left_alone() {
    let task = live_task();
    let mut foreign = job_json();
    foreign["metadata"]["ownerReferences"] = json!([]);
    // No DELETE of the Job, no pod list: only the failure is written.
    let calls = [job_found(foreign), terminal_write(&task)].concat();
    let (_, bodies) = run(task, calls).await;
    let status = &bodies[3]["status"];
    assert_eq!(status["status"], "failed");
    assert_eq!(status["error"]["data"]["reason"], "JobConflict");
    assert!(status.get("jobName").is_none(), "{status}");
    assert!(
        status["statusMessage"]
            .as_str()
            .unwrap()
            .contains("controlled by nothing"),
        "{status}"
    );
    assert_eq!(bodies[4]["reason"], "Failed");
    assert_eq!(bodies[4]["type"], "Warning");
}

#[tokio::test]
async fn a_pending_pods_note_is_held_until_it_has_stood() {
    // The Job's confirmation was written; its pod appeared and waits for its container.
    let mut task = confirmed_task();
    task.status.as_mut().unwrap().status_message =
        Some("Waiting for the Job to create a pod".into());
    let waiting = json!({"waiting": {"reason": "ContainerCreating"}});
    let pods = pod_list("Pending", waiting, settled_annotations());
    let (ctx, server, _triggers) = crate::fixtures::api::context(job_and_pods(job_json(), pods));
    ctx.record_write("task-uid", false);
    let action = super::super::reconcile_task(&task, &ctx, Timestamp::now())
        .await
        .unwrap();
    // No status write: the note "Waiting for the tool container to start" is looked at again
    // once it has stood, unless the container starts and the tool speaks first.
    assert_eq!(server.await.unwrap().len(), 3, "the reads only");
    let wait = requeue_secs(&action);
    assert!(
        wait > 1.0 && wait <= START_NOTE_SETTLE.as_secs_f64(),
        "looked at again when the note has stood: {action:?}"
    );
}
