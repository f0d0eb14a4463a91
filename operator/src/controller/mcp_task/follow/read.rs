//! One follower's reads of its container's log: each folded past the lines the state holds
//! (a replay after a failover privately, until it passes the checkpoint), re-read while the
//! container runs and judged once it has stopped (see the parent module for the rules).

use std::sync::{Arc, Mutex};

use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{ListParams, LogParams};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(super) use super::fold::{Digest, Read};
use super::{
    CATCH_UP_LIMIT, FollowState, LogSource, MAX_FAILED_READS, MAX_READS, News, Notify, PodReads,
    STREAM_SETTLE, Verdict,
};
use crate::lock;
use k8s_openapi::jiff::{RoundMode, TimestampRound, ToSpan, Unit};

/// What the pod says about the tool container, for a follower whose stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Container {
    /// Not terminated (yet): the stream ended early, or before the kubelet reported the exit.
    Live,
    /// Terminated: its log is final.
    Stopped,
    /// The pod is gone (or never had the container): there is nothing more to read.
    Gone(String),
}

/// The background task of one follower: reads, re-reads and judges one container's log.
pub(super) struct Reader {
    pods: PodReads,
    pod: String,
    pod_uid: String,
    container: String,
    state: Arc<Mutex<FollowState>>,
    notify: Notify,
    /// The followers that may start (open a stream, replay to the checkpoint) at once.
    starts: Arc<Semaphore>,
    /// This follower's place among them, until it has caught up.
    start: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
}

impl Reader {
    /// A reader of `source`'s log into `state`, telling `notify`.
    pub(super) fn new(
        pods: PodReads,
        source: LogSource<'_>,
        state: Arc<Mutex<FollowState>>,
        notify: Notify,
        starts: Arc<Semaphore>,
    ) -> Self {
        Self {
            pods,
            pod: source.pod_name.to_owned(),
            pod_uid: source.pod_uid.to_owned(),
            container: source.container.to_owned(),
            state,
            notify,
            starts,
            start: Arc::default(),
        }
    }

    /// Waits for a start place (`MCP_OPERATOR_MAX_FOLLOWER_STARTS`): a new leader replays the
    /// running tasks' logs that many at a time. The place is given up once the follower has
    /// passed its checkpoint, its first read ended, or after [`CATCH_UP_LIMIT`].
    async fn take_start_place(&self) {
        let permit = Arc::clone(&self.starts).acquire_owned().await.ok();
        *lock(&self.start) = permit;
        // NB: weak, so a follower stopped meanwhile frees its place at once, not at the limit.
        let start = Arc::downgrade(&self.start);
        tokio::spawn(async move {
            tokio::time::sleep(CATCH_UP_LIMIT).await;
            if let Some(start) = start.upgrade() {
                lock(&start).take();
            }
        });
    }

    /// Gives up the start place if the follower's replay (if any) has passed its checkpoint
    /// (or `anyway`).
    fn release_if_caught_up(&self, anyway: bool) {
        let caught_up = lock(&self.state).replay.is_none();
        if anyway || caught_up {
            lock(&self.start).take();
        }
    }

    /// Reads until the stopped container's output is judged, then records the verdict.
    pub(super) async fn run(self) {
        self.take_start_place().await;
        let verdict = self.read_until_verdict().await;
        let unavailable = matches!(verdict, Verdict::Unavailable(_));
        if let Verdict::Unavailable(why) = &verdict {
            tracing::warn!(pod = %self.pod, reason = %why, "tool output unavailable");
        }
        lock(&self.state).verdict = verdict;
        if unavailable {
            (self.notify)(News::Unavailable);
        }
        (self.notify)(News::Decisive);
    }

    async fn read_until_verdict(&self) -> Verdict {
        let mut stopped = false;
        let mut reads = 0;
        let mut clean: Vec<Digest> = Vec::new();
        let mut last_error = None;
        let mut failures = 0;
        let mut pod_errors = 0;
        loop {
            // A live container's log is followed; a stopped one's is read to its end.
            let (read, result) = self.read(!stopped).await;
            self.release_if_caught_up(true);
            lock(&self.state).ended_once = true;
            (self.notify)(News::Output);
            let container = match self.container_state().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(pod = %self.pod, error = %e, "reading the pod failed");
                    pod_errors += 1;
                    if pod_errors >= MAX_FAILED_READS {
                        return Verdict::Unavailable(format!(
                            "the tool's pod could not be read in {pod_errors} tries: {e}"
                        ));
                    }
                    tokio::time::sleep(STREAM_SETTLE).await;
                    continue;
                }
            };
            match container {
                Container::Gone(why) => return Verdict::Unavailable(why),
                Container::Live if !stopped => {
                    // The stream ended early (dropped, or the exit is not reported yet).
                    tokio::time::sleep(STREAM_SETTLE).await;
                    continue;
                }
                Container::Live | Container::Stopped => stopped = true,
            }
            reads += 1;
            let failed = result.is_err();
            if failed {
                failures += 1;
            }
            match result {
                Ok(()) => {
                    let digest = read.digest();
                    let whole = {
                        let mut s = lock(&self.state);
                        let agreed = clean.contains(&digest) && read.held_by(&s);
                        let told = s.progress.terminal().is_some();
                        (agreed || told).then(|| read.finishing(&mut s))
                    };
                    if let Some(news) = whole {
                        for item in news {
                            (self.notify)(item);
                        }
                        return Verdict::Complete;
                    }
                    clean.push(digest);
                }
                Err(e) => {
                    tracing::warn!(pod = %self.pod, error = %e, "log read failed");
                    last_error = Some(e);
                }
            }
            if failures >= MAX_FAILED_READS || reads - failures >= MAX_READS {
                let why = match &last_error {
                    Some(e) => format!(
                        "the stopped tool container's log could not be read to its end in \
                         {reads} reads; the last failed with: {e}"
                    ),
                    None => format!(
                        "no two of {reads} reads of the stopped tool container's log ended at \
                         the same line"
                    ),
                };
                return Verdict::Unavailable(why);
            }
            if failed {
                tokio::time::sleep(STREAM_SETTLE).await;
            }
        }
    }

    /// Reads the log, following it if `follow`: from the start the kubelet serves while the
    /// state waits for a replay, else from the second of the last line the state holds (the
    /// lines before it are skipped); returns the read and whether it ended cleanly (the API
    /// server's response ended without an error).
    async fn read(&self, follow: bool) -> (Read, Result<(), String>) {
        let (mut read, since) = {
            let s = lock(&self.state);
            let since =
                s.at.filter(|_| s.replay.is_none())
                    .map(|at| since_time(at.time));
            (Read::new(&s), since)
        };
        let params = LogParams {
            container: Some(self.container.clone()),
            follow,
            timestamps: true,
            since_time: since,
            ..LogParams::default()
        };
        let result = match self.pods.api.log_stream(&self.pod, &params).await {
            Err(e) => Err(e.to_string()),
            Ok(stream) => {
                // A follower with nothing to replay starts once its stream is open.
                self.release_if_caught_up(false);
                self.fold(stream, &mut read).await
            }
        };
        read.ended(&mut lock(&self.state), !follow && result.is_ok());
        (read, result)
    }

    async fn fold(
        &self,
        stream: impl futures::AsyncBufRead,
        read: &mut Read,
    ) -> Result<(), String> {
        let (start, state, notify) = (
            Arc::clone(&self.start),
            Arc::clone(&self.state),
            Arc::clone(&self.notify),
        );
        // After every chunk: give up the start place once the replay (if any) shows.
        let notify: Notify = Arc::new(move |news| {
            if lock(&start).is_some() && lock(&state).replay.is_none() {
                lock(&start).take();
            }
            notify(news);
        });
        fold_stream(stream, read, &self.state, &notify).await
    }

    /// The tool container's state: from the operator's pod cache when it holds this pod, else
    /// from a list of the one pod (the operator may list pods, not get them), so a pod missing
    /// from a lagging cache is never taken for a deleted one.
    async fn container_state(&self) -> Result<Container, kube::Error> {
        let cached = self.pods.cache.as_ref().and_then(|store| {
            store
                .get(&ObjectRef::new(&self.pod).within(&self.pods.namespace))
                .filter(|pod| pod.uid().as_deref() == Some(self.pod_uid.as_str()))
        });
        let pod = match cached {
            Some(pod) => Some(Pod::clone(&pod)),
            None => {
                let params = ListParams::default().fields(&format!("metadata.name={}", self.pod));
                self.pods.api.list(&params).await?.items.into_iter().next()
            }
        };
        let Some(pod) = pod else {
            return Ok(Container::Gone(format!(
                "the pod {} was deleted before its log was read",
                self.pod
            )));
        };
        Ok(container_of(&pod, &self.container))
    }
}

/// The `sinceTime` of a read again from a line logged at `time`: the second before it (the
/// API takes whole seconds and kube rounds to the nearest), so no line after it is missed.
fn since_time(time: k8s_openapi::jiff::Timestamp) -> k8s_openapi::jiff::Timestamp {
    let round = TimestampRound::new()
        .smallest(Unit::Second)
        .mode(RoundMode::Trunc);
    let second = time.round(round).unwrap_or(time);
    second.checked_sub(1.second()).unwrap_or(second)
}

/// What `pod` says about its container `name`.
fn container_of(pod: &Pod, name: &str) -> Container {
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == name));
    match status.and_then(|c| c.state.as_ref()) {
        Some(state) if state.terminated.is_some() => Container::Stopped,
        Some(_) => Container::Live,
        None => Container::Gone(format!(
            "the pod {} has no container {name}",
            pod.name_any()
        )),
    }
}

pub(super) async fn fold_stream(
    stream: impl futures::AsyncBufRead,
    read: &mut Read,
    state: &Mutex<FollowState>,
    notify: &Notify,
) -> Result<(), String> {
    // NB: no buffer of its own: each chunk is folded from the stream's own buffer (the HTTP
    // body's current frame), so a follower holds no more than that between chunks.
    let mut stream = Box::pin(stream);
    loop {
        let chunk = stream.fill_buf().await.map_err(|e| e.to_string())?;
        if chunk.is_empty() {
            return Ok(());
        }
        let n = chunk.len();
        let (news, decisive) = {
            let mut state = lock(state);
            let settled = state.progress.terminal().is_some();
            let news = read.push(&mut state, chunk);
            (news, !settled && state.progress.terminal().is_some())
        };
        stream.as_mut().consume(n);
        for item in news {
            notify(item);
        }
        notify(if decisive {
            News::Decisive
        } else {
            News::Output
        });
    }
}
