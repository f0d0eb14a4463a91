//! Follower tests: reads folded without going back, warnings reported once, and the verdict
//! on a stopped container's output from recorded log responses (a mock API server).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{Request, Response, StatusCode};
use futures::io::Cursor;
use kube::client::Body;
use kube::runtime::reflector::Store;
use serde_json::json;

use super::fold::Read;
use super::read::fold_stream;
use super::*;

const MALFORMED: &str = "{\"mcp\":\"bogus\"}\n";

fn silent() -> Notify {
    Arc::new(|_| {})
}

/// `text` as the kubelet serves it with `timestamps=true`: line `i` (from 0) logged `first + i`
/// milliseconds past 2026-01-01T00:00:00Z.
pub(super) fn stamped_from(first: usize, text: &str) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, line)| {
            let ms = first + i;
            format!("2026-01-01T00:00:{:02}.{:03}Z {line}", ms / 1000, ms % 1000)
        })
        .collect()
}

/// `text` as the kubelet serves it, its first line logged at 2026-01-01T00:00:00Z.
pub(super) fn stamped(text: &str) -> String {
    stamped_from(0, text)
}

/// The place of line `i` of [`stamped`] text.
pub(super) fn line(i: usize) -> LinePos {
    let text = stamped_from(i, "x");
    let (time, _) = text.split_once(' ').expect("a stamped line");
    LinePos {
        time: time.parse().expect("a timestamp"),
        nth: 0,
    }
}

#[test]
fn the_digest_does_not_depend_on_how_the_stream_is_cut() {
    let log = stamped("one\ntwo\n{\"mcp\":\"status\",\"message\":\"x\"}\nthree");
    let mut state = FollowState::default();
    let mut whole = Read::new(&state);
    whole.push(&mut state, log.as_bytes());
    let mut state = FollowState::default();
    let mut bytewise = Read::new(&state);
    for b in log.as_bytes() {
        bytewise.push(&mut state, std::slice::from_ref(b));
    }
    assert_eq!(whole.digest(), bytewise.digest());
    assert_eq!(state.progress.status_message(), Some("x"));
    let mut state = FollowState::default();
    let mut other = Read::new(&state);
    other.push(&mut state, stamped("one\ntwo\n").as_bytes());
    assert_ne!(whole.digest(), other.digest());
}

#[test]
fn a_read_again_folds_only_the_lines_past_those_held() {
    let mut state = FollowState::default();
    let mut first = Read::new(&state);
    first.push(
        &mut state,
        stamped("{\"mcp\":\"status\",\"message\":\"far\"}\nplain\n").as_bytes(),
    );
    assert_eq!(state.at, Some(line(1)));
    let mut again = Read::new(&state);
    let log = "{\"mcp\":\"status\",\"message\":\"far\"}\nplain\nmore\n";
    again.push(&mut state, stamped(log).as_bytes());
    assert_eq!(
        state.progress.output().text(),
        "plain\nmore",
        "nothing twice"
    );
    assert_eq!(state.at, Some(line(2)));
}

/// The kubelet rotated the log between two reads: the second returns only the newest file.
#[test]
fn a_read_of_the_rotated_log_adds_its_new_lines() {
    let mut state = FollowState::default();
    let mut first = Read::new(&state);
    let head = "{\"mcp\":\"status\",\"message\":\"one\"}\nplain\nplain\n";
    first.push(&mut state, stamped(head).as_bytes());
    let mut again = Read::new(&state);
    let newest = "plain\n{\"mcp\":\"status\",\"message\":\"two\"}\n\
                  {\"mcp\":\"result\",\"result\":{\"content\":[]}}\n";
    again.push(&mut state, stamped_from(2, newest).as_bytes());
    assert_eq!(state.progress.status_message(), Some("two"));
    assert!(state.progress.terminal().is_some(), "the result is read");
    assert_eq!(state.progress.output().text(), "plain\nplain");
}

#[test]
fn warnings_already_reported_are_not_reported_again() {
    let mut state = FollowState {
        reported: 2,
        ..FollowState::default()
    };
    let log = stamped(&MALFORMED.repeat(3));
    let mut read = Read::new(&state);
    let news = read.push(&mut state, log.as_bytes());
    assert_eq!(news.len(), 3, "{news:?}");
    assert!(matches!(news[2], News::Warning { ordinal: 5, .. }));
    assert_eq!(state.reported, 5);
    let mut again = Read::new(&state);
    assert!(again.push(&mut state, log.as_bytes()).is_empty());
}

#[test]
fn checkpoint_messages_read_back_with_and_without_a_line() {
    let mut checkpoint = Checkpoint {
        pod_uid: "pod-1".into(),
        bytes: 12,
        warnings: 3,
        at: Some(LinePos { nth: 2, ..line(7) }),
    };
    let message = checkpoint.message();
    assert_eq!(
        message,
        "pod pod-1: 12 log bytes read (last line logged 2026-01-01T00:00:00.007000000Z #2), \
         3 output warnings reported"
    );
    assert_eq!(Checkpoint::parse(&message), Some(checkpoint.clone()));
    checkpoint.at = None;
    let older = "pod pod-1: 12 log bytes read, 3 output warnings reported";
    assert_eq!(checkpoint.message(), older);
    assert_eq!(Checkpoint::parse(older), Some(checkpoint));
    assert_eq!(
        Checkpoint::parse("pod pod-1: 12 log bytes read (last line x), 3"),
        None
    );
}

#[test]
fn logs_needed_waits_for_a_whole_read_of_a_stopped_container() {
    let view = |verdict: Verdict| FollowView {
        ended_once: false,
        verdict,
        checkpoint: Checkpoint::default(),
    };
    let exited = Workload::Exited { exit_code: 0 };
    assert_eq!(
        logs_needed(&exited, &view(Verdict::Reading), false),
        LogsNeeded::Wait
    );
    assert_eq!(
        logs_needed(&exited, &view(Verdict::Complete), false),
        LogsNeeded::No
    );
    assert_eq!(
        logs_needed(&exited, &view(Verdict::Unavailable("x".into())), false),
        LogsNeeded::Unavailable("x".into())
    );
    assert_eq!(
        logs_needed(&exited, &view(Verdict::Reading), true),
        LogsNeeded::No,
        "a result message settles it"
    );
    assert_eq!(
        logs_needed(&Workload::Running, &view(Verdict::Reading), false),
        LogsNeeded::No,
        "a running tool's task never waits for its log"
    );
}

/// One recorded answer to a log request: a status and a body.
pub(super) type LogAnswer = (u16, String);

/// Runs a follower of pod `p` (container `tool`) against a mock API server that answers log
/// requests with `logs` in order (the last one again once they run out) and pod reads with a
/// pod whose container is terminated; returns the state once the follower has a verdict, and
/// how many log requests it made.
async fn follow_recorded(
    logs: Vec<LogAnswer>,
    checkpoint: Option<Resume>,
) -> (Arc<Mutex<FollowState>>, usize, Vec<u64>) {
    let run = follow_with(logs, checkpoint, None).await;
    (run.state, run.log_reads, run.warnings)
}

/// What [`follow_with`] saw.
pub(super) struct Followed {
    pub state: Arc<Mutex<FollowState>>,
    pub log_reads: usize,
    pub pod_lists: usize,
    pub warnings: Vec<u64>,
}

/// [`follow_recorded`], with the operator's pod cache `cache` (if any); counts the pod lists.
pub(super) async fn follow_with(
    logs: Vec<LogAnswer>,
    checkpoint: Option<Resume>,
    cache: Option<Store<Pod>>,
) -> Followed {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let log_reads = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&log_reads);
    let pod_lists = Arc::new(AtomicUsize::new(0));
    let listed = Arc::clone(&pod_lists);
    tokio::spawn(async move {
        let mut logs: VecDeque<LogAnswer> = logs.into();
        while let Some((request, send)) = handle.next_request().await {
            let path = request.uri().path().to_owned();
            let (status, body) = if path.ends_with("/log") {
                counted.fetch_add(1, Ordering::SeqCst);
                let answer = if logs.len() > 1 {
                    logs.pop_front()
                } else {
                    logs.front().cloned()
                };
                let (code, text) = answer.expect("a recorded log answer");
                assert!(
                    request
                        .uri()
                        .query()
                        .is_some_and(|q| q.contains("timestamps=true")),
                    "every read asks for the kubelet's timestamps"
                );
                let body = if code == 200 {
                    text
                } else {
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "code": code, "message": text})
                    .to_string()
                };
                (code, body)
            } else {
                assert!(
                    request
                        .uri()
                        .query()
                        .is_some_and(|q| q.contains("fieldSelector")),
                    "the follower lists its one pod: {path}"
                );
                listed.fetch_add(1, Ordering::SeqCst);
                let pod = json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "tools", "uid": "pod-1"},
                    "status": {"containerStatuses": [{"name": "tool", "image": "i", "imageID": "",
                        "ready": false, "restartCount": 0,
                        "state": {"terminated": {"exitCode": 0}}}]}});
                let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {},
                    "items": [pod]});
                (200, list.to_string())
            };
            let response = Response::builder()
                .status(StatusCode::from_u16(status).expect("status"))
                .body(Body::from(body.into_bytes()))
                .expect("response");
            send.send_response(response);
        }
    });
    let api = Api::<Pod>::namespaced(kube::Client::new(service, "default"), "tools");
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&warnings);
    let notify: Notify = Arc::new(move |news| {
        if let News::Warning { ordinal, .. } = news {
            lock(&seen).push(ordinal);
        }
    });
    let followers = Followers::default();
    let source = LogSource {
        pod_name: "p",
        pod_uid: "pod-1",
        container: "tool",
        nonce: None,
    };
    let pods = PodReads {
        cache,
        ..PodReads::uncached(api, "tools")
    };
    let state = followers.ensure("task", pods, source, checkpoint.as_ref(), notify);
    while lock(&state).verdict == Verdict::Reading {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reported = lock(&warnings).clone();
    Followed {
        state,
        log_reads: log_reads.load(Ordering::SeqCst),
        pod_lists: pod_lists.load(Ordering::SeqCst),
        warnings: reported,
    }
}

#[tokio::test(start_paused = true)]
async fn two_reads_returning_the_same_bytes_complete_the_output() {
    let (state, reads, _) = follow_recorded(vec![(200, stamped("hello\nworld"))], None).await;
    let s = lock(&state);
    assert_eq!(s.verdict, Verdict::Complete);
    assert_eq!(s.progress.output().text(), "hello\nworld");
    assert_eq!(reads, 2, "the stream, then one read that agrees");
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_short_is_read_again_until_two_reads_agree() {
    // The kubelet went away mid-stream and the API server ended the response as if complete.
    let logs = vec![
        (200, stamped("hel")),
        (200, stamped("hello\nworld\n")),
        (200, stamped("hello\nworld\n")),
    ];
    let (state, reads, _) = follow_recorded(logs, None).await;
    let s = lock(&state);
    assert_eq!(s.verdict, Verdict::Complete);
    assert_eq!(s.progress.output().text(), "hello\nworld");
    assert_eq!(reads, 3);
}

#[tokio::test(start_paused = true)]
async fn a_log_that_cannot_be_read_is_unavailable_after_the_read_budget() {
    let (state, reads, _) =
        follow_recorded(vec![(502, "kubelet unreachable".to_owned())], None).await;
    let s = lock(&state);
    let Verdict::Unavailable(why) = &s.verdict else {
        panic!("{:?}", s.verdict)
    };
    // About two minutes of failed reads: longer than the fault suite's 30 s kubelet stop.
    assert!(
        why.contains("could not be read to its end in 60 reads"),
        "{why}"
    );
    assert!(why.contains("kubelet unreachable"), "{why}");
    assert_eq!(reads, MAX_FAILED_READS as usize);
}

#[tokio::test(start_paused = true)]
async fn a_log_whose_reads_never_agree_is_unavailable() {
    let logs = vec![
        (200, stamped("a")),
        (200, stamped("ab")),
        (200, stamped("abc")),
        (200, stamped("abcd")),
        (200, stamped("abcde")),
        (200, stamped("abcdef")),
        (200, stamped("abcdefg")),
        (200, stamped("abcdefgh")),
        (200, stamped("abcdefghi")),
        (200, stamped("abcdefghij")),
        (200, stamped("abcdefghijk")),
        (200, stamped("abcdefghijkl")),
        (200, stamped("abcdefghijklm")),
        (200, stamped("abcdefghijklmn")),
        (200, stamped("abcdefghijklmno")),
        (200, stamped("abcdefghijklmnop")),
    ];
    let (state, reads, _) = follow_recorded(logs, None).await;
    let s = lock(&state);
    let Verdict::Unavailable(why) = &s.verdict else {
        panic!("{:?}", s.verdict)
    };
    assert!(
        why.contains(
            "no two of 15 reads of the stopped tool container's log ended at the same line"
        ),
        "{why}"
    );
    assert_eq!(reads, MAX_READS as usize);
}

#[tokio::test(start_paused = true)]
async fn a_result_message_needs_no_second_read() {
    let log = "{\"mcp\":\"result\",\"result\":{\"content\":[]}}\n";
    let (state, reads, _) = follow_recorded(vec![(200, stamped(log))], None).await;
    assert_eq!(lock(&state).verdict, Verdict::Complete);
    assert_eq!(reads, 1);
}

#[tokio::test(start_paused = true)]
async fn a_resumed_follower_reports_only_warnings_past_its_checkpoint() {
    let log = MALFORMED.repeat(3);
    let resume = |at: Option<LinePos>, pod_uid: &str| Resume {
        checkpoint: Checkpoint {
            pod_uid: pod_uid.into(),
            bytes: 32,
            warnings: 2,
            at,
        },
        ..Resume::default()
    };
    for checkpoint in [resume(Some(line(1)), "pod-1"), resume(None, "pod-1")] {
        let answers = vec![(200, stamped(&log))];
        let (state, _, reported) = follow_recorded(answers, Some(checkpoint)).await;
        assert_eq!(
            reported,
            vec![3],
            "the first two were reported before the failover"
        );
        assert_eq!(lock(&state).view().checkpoint.warnings, 3);
    }
    let other_pod = resume(Some(line(1)), "pod-0");
    let (_, _, reported) = follow_recorded(vec![(200, stamped(&log))], Some(other_pod)).await;
    assert_eq!(
        reported,
        vec![1, 2, 3],
        "another pod's checkpoint does not apply"
    );
}

#[tokio::test]
async fn followers_are_reused_per_pod_and_swept() {
    // Nobody answers the mock: followers wait on their log request until aborted.
    let (service, _handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let api = Api::<Pod>::namespaced(kube::Client::new(service, "default"), "tools");
    let followers = Followers::default();
    let ensure = |uid: &str, (pod_name, pod_uid): (&str, &str)| {
        let source = LogSource {
            pod_name,
            pod_uid,
            container: "tool",
            nonce: None,
        };
        followers.ensure(
            uid,
            PodReads::uncached(api.clone(), "tools"),
            source,
            None,
            silent(),
        )
    };
    let first = ensure("live", ("p", "pod-1"));
    assert!(
        Arc::ptr_eq(&first, &ensure("live", ("p", "pod-1"))),
        "same pod: reused"
    );
    assert!(
        !Arc::ptr_eq(&first, &ensure("live", ("p2", "pod-2"))),
        "new pod: fresh"
    );
    ensure("gone", ("g", "pod-3"));
    followers.retain(|uid| uid == "live");
    assert!(followers.state("gone").is_none());
    assert!(followers.state("live").is_some());
    followers.stop("live");
    assert!(followers.state("live").is_none());
}

#[tokio::test]
async fn fold_stream_folds_chunks_and_notifies() {
    let state = Mutex::new(FollowState::default());
    let calls = Arc::new(AtomicUsize::new(0));
    let warnings = Arc::new(AtomicUsize::new(0));
    let (c, w) = (Arc::clone(&calls), Arc::clone(&warnings));
    let notify: Notify = Arc::new(move |news| {
        c.fetch_add(1, Ordering::Relaxed);
        if matches!(news, News::Warning { .. }) {
            w.fetch_add(1, Ordering::Relaxed);
        }
    });
    let logs = stamped("hello\n{\"mcp\":\"status\",\"message\":\"half\"}\n{\"mcp\":\"bogus\"}\n");
    let mut read = Read::new(&lock(&state));
    fold_stream(Cursor::new(logs.into_bytes()), &mut read, &state, &notify)
        .await
        .unwrap();
    let s = lock(&state);
    assert_eq!(s.progress.status_message(), Some("half"));
    assert_eq!(s.progress.output().text(), "hello\n{\"mcp\":\"bogus\"}");
    assert_eq!(warnings.load(Ordering::Relaxed), 1);
    assert!(calls.load(Ordering::Relaxed) >= 2);
}

#[tokio::test]
async fn the_result_message_is_decisive_news_once() {
    let state = Mutex::new(FollowState::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let notify: Notify = Arc::new(move |news| lock(&s).push(news));
    // One chunk per line, as a tool flushing each line is read.
    let lines = [
        "{\"mcp\":\"status\",\"message\":\"half\"}\n",
        "{\"mcp\":\"result\",\"result\":{\"content\":[]}}\n",
        "after\n",
        "{\"mcp\":\"result\",\"result\":{\"content\":[]}}\n",
    ];
    let mut read = Read::new(&lock(&state));
    for (i, line) in lines.into_iter().enumerate() {
        let line = stamped_from(i, line).into_bytes();
        fold_stream(Cursor::new(line), &mut read, &state, &notify)
            .await
            .unwrap();
    }
    let seen = lock(&seen);
    let decisive: Vec<usize> = (0..seen.len())
        .filter(|&i| seen[i] == News::Decisive)
        .collect();
    assert_eq!(decisive, [1], "only the first result line: {seen:?}");
}

#[tokio::test]
async fn at_most_max_starts_followers_open_their_stream_at_once() {
    // Nobody answers the log requests: each follower holds its start place while it waits.
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let api = Api::<Pod>::namespaced(kube::Client::new(service, "default"), "tools");
    let followers = Followers::new(2);
    let pods = ["p0", "p1", "p2", "p3", "p4"];
    for (i, pod) in pods.iter().enumerate() {
        let source = LogSource {
            pod_name: pod,
            pod_uid: pod,
            container: "tool",
            nonce: None,
        };
        let pods = PodReads::uncached(api.clone(), "tools");
        followers.ensure(&format!("t{i}"), pods, source, None, silent());
    }
    type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;
    async fn arrived(
        handle: &mut Handle,
    ) -> Option<(
        Request<Body>,
        tower_test::mock::SendResponse<Response<Body>>,
    )> {
        tokio::time::timeout(Duration::from_millis(300), handle.next_request())
            .await
            .ok()
            .flatten()
    }
    let mut requests = Vec::new();
    while let Some(request) = arrived(&mut handle).await {
        requests.push(request);
    }
    assert_eq!(requests.len(), 2, "only two followers start at once");
    // One ends (its task ended): the next one starts.
    let path = requests[0].0.uri().path().to_owned();
    let first = pods
        .iter()
        .position(|p| path.contains(&format!("/pods/{p}/")))
        .expect("a pod's log");
    followers.stop(&format!("t{first}"));
    let next = arrived(&mut handle).await;
    assert!(
        next.is_some(),
        "a start place freed lets the next follower start"
    );
    assert!(arrived(&mut handle).await.is_none(), "still two at once");
}
