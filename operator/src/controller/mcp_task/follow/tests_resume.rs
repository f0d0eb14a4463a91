//! Follower tests: a follower started after a failover shows what the task's status showed at
//! once (also while it waits for a start place), replays the log privately, and shows the
//! replay only once it has passed the checkpoint.

use std::collections::BTreeMap;

use axum::http::{Request, Response};
use kube::client::Body;
use serde_json::json;

use super::fold::Read;
use super::tests::{line, stamped, stamped_from};
use super::*;

/// What a status of `input_required` ("asking", request `go`) with a checkpoint at line 1 of
/// pod `pod-1` resumes from.
fn asking() -> Resume {
    Resume {
        checkpoint: Checkpoint {
            pod_uid: "pod-1".into(),
            bytes: 80,
            warnings: 0,
            at: Some(line(1)),
        },
        status_message: Some("asking".into()),
        input_requests: BTreeMap::from([("go".into(), json!({"method": "roots/list"}))]),
    }
}

fn resumed_state(resume: &Resume) -> FollowState {
    let mut state = FollowState {
        pod_uid: "pod-1".into(),
        ..FollowState::default()
    };
    state.progress = state.resumed(resume);
    state.replay = Some(Replay {
        checkpoint: resume.checkpoint.clone(),
        resume: resume.clone(),
    });
    state
}

#[test]
fn a_resumed_follower_shows_the_status_until_its_replay_passes_the_checkpoint() {
    let resume = asking();
    let mut state = resumed_state(&resume);
    let outstanding = |s: &FollowState| s.progress.outstanding_input(|_| false).len();
    assert_eq!(state.progress.status_message(), Some("asking"));
    assert_eq!(outstanding(&state), 1);
    // The kubelet rotated the log: the newest file starts after the input request.
    let mut read = Read::new(&state);
    read.push(&mut state, stamped_from(1, "plain\n").as_bytes());
    assert_eq!(
        state.progress.status_message(),
        Some("asking"),
        "still the status"
    );
    assert_eq!(
        state.view().checkpoint,
        resume.checkpoint,
        "the checkpoint never goes back"
    );
    let answered = "{\"mcp\":\"status\",\"message\":\"answered\"}\n\
                    {\"mcp\":\"result\",\"result\":{\"content\":[]}}\n";
    read.push(&mut state, stamped_from(2, answered).as_bytes());
    assert_eq!(state.progress.status_message(), Some("answered"));
    assert!(
        state.progress.terminal().is_some(),
        "the result past the checkpoint shows"
    );
    assert_eq!(
        outstanding(&state),
        1,
        "the request read before the failover is kept"
    );
    assert_eq!(state.view().checkpoint.at, Some(line(3)));
}

#[test]
fn a_replay_of_the_whole_log_shows_the_same_state_and_its_plain_output() {
    let resume = asking();
    let mut state = resumed_state(&resume);
    let log = "{\"mcp\":\"status\",\"message\":\"asking\"}\n\
               {\"mcp\":\"input\",\"requests\":{\"go\":{\"method\":\"roots/list\"}}}\n\
               plain after\n";
    let mut read = Read::new(&state);
    read.push(&mut state, stamped(log).as_bytes());
    assert_eq!(state.progress.output().text(), "plain after");
    assert_eq!(state.progress.status_message(), Some("asking"));
    assert_eq!(state.progress.outstanding_input(|_| false).len(), 1);
}

#[tokio::test]
async fn a_follower_waiting_for_a_start_place_shows_the_status_at_once() {
    // Nobody answers the mock: the first follower holds the only start place for good.
    let (service, _handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let api = Api::<Pod>::namespaced(kube::Client::new(service, "default"), "tools");
    let followers = Followers::new(1);
    let source = |pod: &'static str| LogSource {
        pod_name: pod,
        pod_uid: pod,
        container: "tool",
        nonce: None,
    };
    let silent: Notify = Arc::new(|_| {});
    let pods = || PodReads::uncached(api.clone(), "tools");
    followers.ensure("first", pods(), source("pod-0"), None, Arc::clone(&silent));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let state = followers.ensure("second", pods(), source("pod-1"), Some(&asking()), silent);
    let s = lock(&state);
    assert_eq!(s.progress.status_message(), Some("asking"));
    assert_eq!(s.progress.outstanding_input(|_| false).len(), 1);
    assert_eq!(
        logs_needed(&Workload::Running, &s.view(), false),
        LogsNeeded::No,
        "the task is decided from what its status showed"
    );
}
