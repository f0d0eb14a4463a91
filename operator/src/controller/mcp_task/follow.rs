//! Following a tool container's logs through the API and folding them into [`Progress`].
//!
//! One background task per running task reads the log, feeds the bytes to the task's
//! [`Progress`], reports output warnings and asks for a reconcile after every chunk. The
//! follower owns its timing: it reads a dropped stream of a running container again, and
//! decides whether a stopped container's output was read whole ([`Verdict`]). The reconciler
//! only asks it what it knows ([`FollowState::view`]); status writes are coalesced there.
//!
//! Every read asks for the kubelet's timestamps, so each line has a place in the container's
//! whole log ([`LinePos`]) that the kubelet's log rotation does not move: it rotates a running
//! container's log past `containerLogMaxSize` (10 MiB by default) and serves only the newest
//! file, while a followed stream goes on through the rotation. Three rules keep what the
//! follower reports honest:
//!
//! - **Nothing twice, nothing lost.** A read folds only the lines past the last one folded: a
//!   stream read again after it dropped (from the second of that line: `sinceTime`) adds what
//!   is new, whether or not the log was rotated meanwhile.
//! - **A result only from a complete read.** A stopped container's log is final, so it is read
//!   again (without following) until two clean reads end at the same line, which the progress
//!   holds: no clock is compared with the node's. A log that cannot be read so within
//!   [`MAX_READS`] clean reads (or [`MAX_FAILED_READS`] failed ones) is
//!   [`Verdict::Unavailable`], and the task fails rather than complete from a part.
//! - **Resume from the checkpoint.** The status records ([`Checkpoint`]) the last line its state
//!   was decided from and how many output warnings were reported. A follower started after a
//!   failover starts from what the status shows (its status message and open input requests,
//!   [`Resume`]), so a task's visible state never waits for a log to be read again. It replays
//!   the log the kubelet still serves in the background (the plain output is rebuilt from it)
//!   and takes the replay over once it passes the checkpoint; it reports only warnings past it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::reflector::Store;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

pub use self::checkpoint::{Checkpoint, Resume, resume_of};
use self::read::Reader;
pub use self::stamp::LinePos;
use crate::log_clients::LogClients;

use super::observe::{FailureReason, Workload};
use crate::contract::{Progress, ProgressWarning};
use crate::lock;

/// How soon the reconciler looks again while the follower is still reading what it needs.
pub const LOGS_PENDING: Duration = Duration::from_millis(500);
/// How long a follower waits, after a stream ended while the pod still said the container
/// runs (or after a failed read), before it looks at the pod and reads again.
pub const STREAM_SETTLE: Duration = Duration::from_secs(2);
/// Clean reads of a stopped container's log (the stream that saw it stop included) that may
/// disagree before its output counts as unavailable.
pub const MAX_READS: u32 = 15;
/// Failed reads (of the log, or of the pod) before the output counts as unavailable: with
/// [`STREAM_SETTLE`] between them, about two minutes for a kubelet to come back (the fault
/// suite stops it for 30 s; a restart takes seconds).
pub const MAX_FAILED_READS: u32 = 60;
/// How long a resumed follower's replay may hold its start place (counted from when it got
/// the place, not from its wait for one). What the task shows never waits for the replay.
pub const CATCH_UP_LIMIT: Duration = Duration::from_secs(30);

/// Whether a stopped container's output was read whole.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Verdict {
    /// Still reading (or the container has not stopped).
    #[default]
    Reading,
    /// Two clean reads agreed (or a result or error message was read): the output is whole.
    Complete,
    /// The log could not be read whole; says why.
    Unavailable(String),
}

/// A replay the state waits for: the last line (or, for an older checkpoint, the byte count)
/// a replay must pass before it shows, and what each replay starts from.
#[derive(Debug, Clone)]
pub(super) struct Replay {
    /// The checkpoint the replay must pass.
    pub(super) checkpoint: Checkpoint,
    /// The status message and requests the replay starts from, as the state does.
    pub(super) resume: Resume,
}

/// What one follower has learnt, shared with the reconciler.
#[derive(Debug)]
pub struct FollowState {
    /// The progress folded so far (or resumed from the status, until a replay takes over).
    pub progress: Progress,
    /// Log bytes folded into `progress`.
    bytes: u64,
    /// The last whole line folded into `progress`.
    at: Option<LinePos>,
    /// A line `progress` holds only the start of (a read ended inside it), and its place.
    partial: Option<Option<LinePos>>,
    /// The replay the state waits for (`None`: the progress was folded from the log).
    replay: Option<Replay>,
    /// Output warnings reported so far (a replay reports none).
    reported: u64,
    /// The message nonce of the pod's tool, if it signs its messages.
    nonce: Option<String>,
    /// The pod whose log this is.
    pod_uid: String,
    /// When the log last grew (or the follower started).
    last_output: Instant,
    /// Whether a stream has ended at least once.
    ended_once: bool,
    verdict: Verdict,
}

impl Default for FollowState {
    fn default() -> Self {
        Self {
            progress: Progress::default(),
            bytes: 0,
            at: None,
            partial: None,
            replay: None,
            reported: 0,
            nonce: None,
            pod_uid: String::new(),
            last_output: Instant::now(),
            ended_once: false,
            verdict: Verdict::Reading,
        }
    }
}

/// What the reconciler may rely on, from [`FollowState::view`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowView {
    /// Whether any stream has ended (a stopped container's first read is done).
    pub ended_once: bool,
    /// Whether the stopped container's output was read whole.
    pub verdict: Verdict,
    /// The checkpoint to record with a status decided from this progress.
    pub checkpoint: Checkpoint,
}

impl FollowState {
    /// How long the tool container has printed nothing, as this follower saw it (from its
    /// start, after a failover).
    pub fn idle_for(&self) -> Duration {
        self.last_output.elapsed()
    }

    /// What the reconciler may rely on now.
    pub fn view(&self) -> FollowView {
        let checkpoint = match &self.replay {
            // Still what the status was decided from: a checkpoint never goes back.
            Some(replay) => replay.checkpoint.clone(),
            None => Checkpoint {
                pod_uid: self.pod_uid.clone(),
                bytes: self.bytes,
                warnings: self.reported,
                at: self.at,
            },
        };
        FollowView {
            ended_once: self.ended_once,
            verdict: self.verdict.clone(),
            checkpoint,
        }
    }

    /// A progress as a replay or a resumed state starts: from what the status showed.
    fn resumed(&self, resume: &Resume) -> Progress {
        Progress::default()
            .with_nonce(self.nonce.clone())
            .resumed(resume.status_message.clone(), resume.input_requests.clone())
    }
}

/// What the reconciler must do about the logs before it decides, from [`logs_needed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogsNeeded {
    /// Nothing: decide now.
    No,
    /// Wait for the follower (look again after [`LOGS_PENDING`]).
    Wait,
    /// The stopped container's output could not be read whole: the task fails, saying why.
    Unavailable(String),
}

/// Whether a task with `workload` can be decided from a follower's `view` now; `told` says
/// whether the tool's result or error message has been read (it settles the task by itself).
///
/// - A running tool: at once (a resumed follower starts from what the status shows).
/// - A tool that exited: only from output read whole ([`Verdict::Complete`]); after
///   [`MAX_READS`] disagreeing or [`MAX_FAILED_READS`] failed reads, never
///   ([`LogsNeeded::Unavailable`]).
/// - A failed pod: once the first read has ended (a result read before the failure counts).
pub fn logs_needed(workload: &Workload, view: &FollowView, told: bool) -> LogsNeeded {
    if told {
        return LogsNeeded::No;
    }
    let waiting = match workload {
        // What the status showed is where a resumed follower starts: never a reason to wait.
        Workload::Running => false,
        Workload::Exited { .. } => match &view.verdict {
            Verdict::Reading => true,
            Verdict::Complete => false,
            Verdict::Unavailable(why) => return LogsNeeded::Unavailable(why.clone()),
        },
        // NB: a lost node's log stream may never end (no kubelet ends it): its task does not
        // wait for it.
        Workload::Failed {
            reason: FailureReason::NodeLost,
            ..
        } => false,
        Workload::Failed { .. } => !view.ended_once && view.verdict == Verdict::Reading,
        Workload::NoJob | Workload::Starting { .. } => false,
    };
    if waiting {
        LogsNeeded::Wait
    } else {
        LogsNeeded::No
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

/// What a follower tells its task's reconciler.
#[derive(Debug, Clone, PartialEq)]
pub enum News {
    /// New output was read: reconcile soon (throttled).
    Output,
    /// What the task's terminal status waits on: the tool's result (or error) message, or the
    /// verdict on a stopped container's output. Each comes once per read of the log: reconcile
    /// now, not throttled.
    Decisive,
    /// The stopped container's output could not be read whole (counted in the metrics).
    Unavailable,
    /// A tool-output warning, the `ordinal`-th of the task's log (1-based).
    Warning {
        /// Which warning of the log this is, counting from its start.
        ordinal: u64,
        /// The warning.
        warning: ProgressWarning,
    },
}

/// Called by a follower with its news.
pub type Notify = Arc<dyn Fn(News) + Send + Sync>;

/// Where a follower reads its pod's log and its pod: the log from the API server, the pod's
/// container state from the operator's pod cache when it has the pod (a stream ends several
/// times over a task's life, and each end looks at the pod). A pod the cache lacks (deleted,
/// or the cache is still syncing) is looked up by one request: the cache's word alone never
/// ends a follower.
#[derive(Clone)]
pub struct PodReads {
    /// The pods of the task's namespace, for the log and the confirming look-up.
    pub api: Api<Pod>,
    /// The task's namespace.
    pub namespace: String,
    /// The operator's pod cache, once it has had its first full list.
    pub cache: Option<Store<Pod>>,
}

impl PodReads {
    /// Reads through `api` only: no cache.
    pub fn uncached(api: Api<Pod>, namespace: &str) -> Self {
        Self {
            api,
            namespace: namespace.to_owned(),
            cache: None,
        }
    }
}

struct Follower {
    pod_uid: String,
    state: Arc<Mutex<FollowState>>,
    task: JoinHandle<()>,
}

/// The followers of all tasks, keyed by task UID.
#[derive(Clone)]
pub struct Followers {
    inner: Arc<Mutex<HashMap<String, Follower>>>,
    /// Followers that may open their stream and replay to their checkpoint at once.
    starts: Arc<Semaphore>,
    /// The HTTP/2 connections followers read through (`None`: each reads through its
    /// [`PodReads`], over HTTP/1.1).
    pub logs: Option<LogClients>,
}

/// Followers that may start at once by default (`MCP_OPERATOR_MAX_FOLLOWER_STARTS`).
pub const DEFAULT_FOLLOWER_STARTS: usize = 32;

impl Default for Followers {
    fn default() -> Self {
        Self::new(DEFAULT_FOLLOWER_STARTS)
    }
}

impl std::fmt::Debug for Followers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Followers")
            .field("count", &lock(&self.inner).len())
            .finish()
    }
}

impl Followers {
    /// No followers yet; at most `max_starts` of them start (open their stream and replay
    /// their log up to the task's checkpoint) at once.
    pub fn new(max_starts: usize) -> Self {
        Self {
            inner: Arc::default(),
            starts: Arc::new(Semaphore::new(max_starts.max(1))),
            logs: None,
        }
    }

    /// The state of the follower of `task_uid`, if one ever ran (it outlives its pod).
    pub fn state(&self, task_uid: &str) -> Option<Arc<Mutex<FollowState>>> {
        lock(&self.inner)
            .get(task_uid)
            .map(|f| Arc::clone(&f.state))
    }

    /// Makes sure a follower reads the logs of `source`, starting a fresh one when there is
    /// none or the pod changed. A fresh follower resumes from `resume` when its checkpoint
    /// names the same pod (the task's status was decided from that far into this pod's log).
    pub fn ensure(
        &self,
        task_uid: &str,
        mut pods: PodReads,
        source: LogSource<'_>,
        resume: Option<&Resume>,
        notify: Notify,
    ) -> Arc<Mutex<FollowState>> {
        let mut followers = lock(&self.inner);
        if let Some(existing) = followers.get(task_uid)
            && existing.pod_uid == source.pod_uid
        {
            return Arc::clone(&existing.state);
        }
        let mut fresh = FollowState {
            nonce: source.nonce.map(str::to_owned),
            pod_uid: source.pod_uid.to_owned(),
            ..FollowState::default()
        };
        fresh.progress = Progress::default().with_nonce(fresh.nonce.clone());
        if let Some(resume) = resume.filter(|r| r.checkpoint.pod_uid == source.pod_uid) {
            fresh.progress = fresh.resumed(resume);
            fresh.reported = resume.checkpoint.warnings;
            fresh.replay = Some(Replay {
                checkpoint: resume.checkpoint.clone(),
                resume: resume.clone(),
            });
        }
        let state = Arc::new(Mutex::new(fresh));
        // The follower's place on a log connection, held for as long as it reads. A client
        // that cannot be made (its TLS settings were read for the operator's own client, so
        // this is not expected) leaves the follower on its HTTP/1.1 `PodReads`.
        let lease = self.logs.as_ref().and_then(|logs| {
            logs.lease()
                .inspect_err(|e| tracing::warn!(error = %e, "no HTTP/2 log client; reading over the shared one"))
                .ok()
        });
        if let Some(lease) = &lease {
            pods.api = Api::namespaced(lease.client.clone(), &pods.namespace);
        }
        let reader = Reader::new(
            pods,
            source,
            Arc::clone(&state),
            notify,
            Arc::clone(&self.starts),
        );
        let task = tokio::spawn(async move {
            let _lease = lease;
            reader.run().await;
        });
        let replaced = followers.insert(
            task_uid.to_owned(),
            Follower {
                pod_uid: source.pod_uid.to_owned(),
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

mod checkpoint;
mod fold;
mod read;
mod stamp;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cache;
#[cfg(test)]
mod tests_resume;
