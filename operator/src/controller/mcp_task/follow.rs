//! Following a tool container's logs through the API and folding them into [`Progress`].
//!
//! One background task per running task reads the log stream from its start (so a restarted
//! operator rebuilds the same progress from the cluster alone), feeds the bytes to the task's
//! [`Progress`], reports output warnings and asks for a reconcile after every chunk. The
//! reconciler reads the shared state; status writes are coalesced there, not here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use tokio::task::JoinHandle;

use crate::contract::{Progress, ProgressWarning};

/// Bytes read from the log stream per chunk.
const CHUNK_BYTES: usize = 64 * 1024;

/// What one follower has learnt, shared with the reconciler.
#[derive(Debug, Default)]
pub struct FollowState {
    /// The progress folded from the logs read so far.
    pub progress: Progress,
    /// Whether the stream has ended (the container stopped, or the connection dropped).
    pub ended: bool,
    /// When the stream ended.
    pub ended_at: Option<std::time::Instant>,
    /// When the stream ended, by the wall clock (compared with the container's finish time).
    pub ended_wall: Option<std::time::SystemTime>,
    /// How many followers before this one read the same pod's logs and ended incomplete.
    pub rereads: u32,
    /// Why the stream could not be read, if it could not.
    pub error: Option<String>,
    /// When the follower started (`None` for a state no follower writes).
    pub started_at: Option<std::time::Instant>,
}

impl FollowState {
    /// Whether the stream ended without the container's whole output: it failed (say the
    /// kubelet was down), or it ended over a second before the container finished (`finished`,
    /// its terminated state's time; the kubelet went away mid-stream and the API server ended
    /// the response as if complete). Such a log must be read again before the task's outcome is
    /// decided from it.
    pub fn incomplete(&self, finished: Option<std::time::SystemTime>) -> bool {
        let early = match (self.ended_wall, finished) {
            (Some(ended), Some(finished)) => ended + std::time::Duration::from_secs(1) < finished,
            _ => false,
        };
        self.ended && (self.error.is_some() || early)
    }
}

/// The log stream a follower reads, and how its messages are signed.
#[derive(Debug, Clone, Copy)]
pub struct LogSource<'a> {
    /// The pod's name.
    pub pod_name: &'a str,
    /// The pod's UID: a new pod (same name or not) gets a fresh follower.
    pub pod_uid: &'a str,
    /// The tool container's name.
    pub container: &'a str,
    /// The task's message nonce, if its tool signs its messages.
    pub nonce: Option<&'a str>,
}

/// Called by a follower: `Some(warning)` for a tool-output warning, `None` after new output.
pub type Notify = Arc<dyn Fn(Option<ProgressWarning>) + Send + Sync>;

struct Follower {
    pod_uid: String,
    state: Arc<Mutex<FollowState>>,
    task: JoinHandle<()>,
}

/// The followers of all tasks, keyed by task UID.
#[derive(Clone, Default)]
pub struct Followers {
    inner: Arc<Mutex<HashMap<String, Follower>>>,
}

impl std::fmt::Debug for Followers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Followers")
            .field("count", &lock(&self.inner).len())
            .finish()
    }
}

impl Followers {
    /// The state of the follower of `task_uid`, if one ever ran (it outlives its pod).
    pub fn state(&self, task_uid: &str) -> Option<Arc<Mutex<FollowState>>> {
        lock(&self.inner)
            .get(task_uid)
            .map(|f| Arc::clone(&f.state))
    }

    /// Makes sure a follower reads the logs of `source`, starting a fresh one when there is
    /// none, when the pod changed, or when `restart` is set (a dropped stream of a live pod).
    pub fn ensure(
        &self,
        task_uid: &str,
        pods: Api<Pod>,
        source: LogSource<'_>,
        restart: bool,
        notify: Notify,
    ) -> Arc<Mutex<FollowState>> {
        let LogSource {
            pod_name,
            pod_uid,
            container,
            nonce,
        } = source;
        let mut followers = lock(&self.inner);
        let mut rereads = 0;
        if let Some(existing) = followers.get(task_uid)
            && existing.pod_uid == pod_uid
        {
            if !restart {
                return Arc::clone(&existing.state);
            }
            rereads = lock(&existing.state).rereads + 1;
        }
        let state = Arc::new(Mutex::new(FollowState {
            started_at: Some(std::time::Instant::now()),
            rereads,
            progress: Progress::default().with_nonce(nonce.map(str::to_owned)),
            ..FollowState::default()
        }));
        let task = tokio::spawn(follow(
            pods,
            pod_name.to_owned(),
            container.to_owned(),
            Arc::clone(&state),
            notify,
        ));
        let replaced = followers.insert(
            task_uid.to_owned(),
            Follower {
                pod_uid: pod_uid.to_owned(),
                state: Arc::clone(&state),
                task,
            },
        );
        if let Some(old) = replaced {
            old.task.abort();
        }
        state
    }

    /// Stops and forgets the followers of tasks `keep` rejects (tasks deleted while running
    /// are never reconciled again, so nothing else would).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        lock(&self.inner).retain(|uid, follower| {
            let kept = keep(uid);
            if !kept {
                follower.task.abort();
            }
            kept
        });
    }

    /// How many followers are still reading a log stream.
    pub fn running(&self) -> usize {
        lock(&self.inner)
            .values()
            .filter(|f| !f.task.is_finished())
            .count()
    }

    /// Stops and forgets the follower of `task_uid` (the task is terminal or gone).
    pub fn stop(&self, task_uid: &str) {
        if let Some(old) = lock(&self.inner).remove(task_uid) {
            old.task.abort();
        }
    }
}

/// Locks a mutex, recovering the data if a holder panicked (the state stays usable).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn follow(
    pods: Api<Pod>,
    pod: String,
    container: String,
    state: Arc<Mutex<FollowState>>,
    notify: Notify,
) {
    let params = LogParams {
        container: Some(container),
        follow: true,
        ..LogParams::default()
    };
    let error = match pods.log_stream(&pod, &params).await {
        Err(e) => Some(e.to_string()),
        Ok(stream) => read_all(stream, &state, &notify).await.err(),
    };
    let warnings = {
        let mut s = lock(&state);
        s.ended = true;
        s.ended_at = Some(std::time::Instant::now());
        s.ended_wall = Some(std::time::SystemTime::now());
        if let Some(e) = &error {
            tracing::warn!(pod = %pod, error = %e, "log stream failed");
        }
        s.error = error;
        s.progress.finish()
    };
    for warning in warnings {
        notify(Some(warning));
    }
    notify(None);
}

async fn read_all(
    stream: impl futures::AsyncBufRead,
    state: &Mutex<FollowState>,
    notify: &Notify,
) -> Result<(), String> {
    let mut stream = Box::pin(stream);
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(());
        }
        let warnings = lock(state).progress.push_bytes(&buf[..n]);
        for warning in warnings {
            notify(Some(warning));
        }
        notify(None);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::io::Cursor;

    use super::*;

    #[tokio::test]
    async fn followers_are_reused_restarted_and_swept() {
        use axum::http::{Request, Response};
        use kube::client::Body;

        // Nobody answers the mock: followers wait on their log request until aborted.
        let (service, _handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let api = Api::<Pod>::namespaced(kube::Client::new(service, "default"), "tools");
        let followers = Followers::default();
        let notify: Notify = Arc::new(|_| {});
        let ensure = |uid: &str, (pod_name, pod_uid): (&str, &str), restart| {
            let source = LogSource {
                pod_name,
                pod_uid,
                container: "tool",
                nonce: None,
            };
            followers.ensure(uid, api.clone(), source, restart, Arc::clone(&notify))
        };
        let first = ensure("live", ("p", "pod-1"), false);
        assert!(
            Arc::ptr_eq(&first, &ensure("live", ("p", "pod-1"), false)),
            "same pod: reused"
        );
        assert!(
            !Arc::ptr_eq(&first, &ensure("live", ("p", "pod-1"), true)),
            "restart: fresh"
        );
        assert!(
            !Arc::ptr_eq(&first, &ensure("live", ("p2", "pod-2"), false)),
            "new pod: fresh"
        );
        ensure("gone", ("g", "pod-3"), false);
        followers.retain(|uid| uid == "live");
        assert!(followers.state("gone").is_none());
        assert!(followers.state("live").is_some());
        followers.stop("live");
        assert!(followers.state("live").is_none());
    }

    #[test]
    fn a_failed_or_early_ended_stream_is_incomplete() {
        use std::time::{Duration, SystemTime};
        let finished = SystemTime::now();
        let ended = |at: SystemTime, error: Option<&str>| FollowState {
            ended: true,
            ended_wall: Some(at),
            error: error.map(str::to_owned),
            ..FollowState::default()
        };
        assert!(
            !FollowState::default().incomplete(Some(finished)),
            "still reading"
        );
        assert!(
            !ended(finished, None).incomplete(Some(finished)),
            "saw the exit"
        );
        assert!(
            !ended(finished, None).incomplete(None),
            "no finish time known"
        );
        let early = finished - Duration::from_secs(30);
        assert!(
            ended(early, None).incomplete(Some(finished)),
            "kubelet went away"
        );
        assert!(
            ended(finished, Some("502")).incomplete(None),
            "the stream failed"
        );
    }

    #[tokio::test]
    async fn read_all_folds_chunks_and_notifies() {
        let state = Mutex::new(FollowState::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let warnings = Arc::new(AtomicUsize::new(0));
        let (c, w) = (Arc::clone(&calls), Arc::clone(&warnings));
        let notify: Notify = Arc::new(move |warning| {
            c.fetch_add(1, Ordering::Relaxed);
            if warning.is_some() {
                w.fetch_add(1, Ordering::Relaxed);
            }
        });
        let logs =
            b"hello\n{\"mcp\":\"status\",\"message\":\"half\"}\n{\"mcp\":\"bogus\"}\n".to_vec();
        read_all(Cursor::new(logs), &state, &notify).await.unwrap();
        let s = lock(&state);
        assert_eq!(s.progress.status_message(), Some("half"));
        assert_eq!(s.progress.output().text(), "hello\n{\"mcp\":\"bogus\"}");
        assert_eq!(warnings.load(Ordering::Relaxed), 1);
        assert!(calls.load(Ordering::Relaxed) >= 2);
    }
}
