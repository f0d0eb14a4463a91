//! Serialized `tasks/get` answers, one per task state: built the first time a state is
//! polled, then copied into each response with the request's `id` (and, for a task not yet
//! terminal, the `pollIntervalMs` advised at that moment) spliced in. The response body is
//! those pieces as they are ([`Chunks`]): a large answer is not copied per poll. A large
//! answer without a spliced interval is also sent gzip-coded to a client that accepts it,
//! compressed once per state ([`super::gzip`]).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use mcp_task_operator_crds::McpTask;
use mcp_task_operator_crds::wire::poll::advised_poll_interval_ms;
use rmcp::model::GetTaskResult;

use super::gzip::Compressed;
use crate::error::Result;
use crate::state::server_info_meta;
use crate::wire;

/// The key rmcp's `Task` serializes the advised interval under (it precedes every payload
/// member, see [`Answer::build`]).
const POLL_KEY: &[u8] = b"\"pollIntervalMs\":";

/// What every response starts with, before the request's `id`.
const PREFIX: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";

/// What follows the `id`, before the answer.
const RESULT: &[u8] = b",\"result\":";

/// The start of the response to the request whose `id` is `id_json`, up to the answer.
fn start(id_json: &[u8]) -> Vec<u8> {
    let mut start = Vec::with_capacity(PREFIX.len() + id_json.len() + RESULT.len());
    start.extend_from_slice(PREFIX);
    start.extend_from_slice(id_json);
    start.extend_from_slice(RESULT);
    start
}

/// One task state's answer, and what a poll must check before it is served.
#[derive(Debug)]
pub struct Answer {
    /// `metadata.resourceVersion` of the state it shows.
    pub version: String,
    /// `spec.owner`: only the owner is served.
    pub owner: String,
    /// Whether the state is terminal (served without a confirm read).
    pub terminal: bool,
    /// Whether the task is being deleted (never served).
    pub deleted: bool,
    /// When the task expires, if it has ended and does ([`McpTask::is_expired`]).
    expires_at: Option<Timestamp>,
    /// The tool's interval and the creation time, to advise the interval at each poll.
    poll: Option<(i64, Timestamp)>,
    /// The interval the serialized JSON carries.
    fixed_interval_ms: Option<u64>,
    /// The `result` JSON up to and including `"pollIntervalMs":`, or all of it when the
    /// interval is fixed (terminal or absent).
    head: Bytes,
    /// The rest after the interval's digits; empty when `head` holds everything.
    tail: Bytes,
    /// Whether the answer may be sent gzip-coded: `head` holds everything and is at least
    /// the configured size, and the answer is kept (so it is compressed once, not per poll).
    compressible: bool,
    /// `head` compressed, on the first poll that accepts gzip (`None` inside: it did not
    /// compress).
    gzip: tokio::sync::OnceCell<Option<Compressed>>,
}

impl Answer {
    /// The answer for `task` as stored, to be sent gzip-coded when it has at least
    /// `gzip_min` bytes; `None` when the task has no resource version.
    pub fn build(task: &McpTask, gzip_min: Option<usize>) -> Result<Option<Self>> {
        let Some(version) = task.resource_version() else {
            return Ok(None);
        };
        let created = task.created_at();
        let terminal = task.is_terminal();
        // Serialized at creation, so the interval is the tool's own; a poll of a task not yet
        // terminal splices in the interval advised at that moment.
        let at = created.unwrap_or_else(Timestamp::now);
        let mut result = GetTaskResult::new(wire::detailed_task_at(task, at)?);
        let fixed_interval_ms = result.task.task.poll_interval_ms;
        result.meta = Some(server_info_meta());
        let json = serde_json::to_vec(&result).map_err(|e| crate::error::Error::TaskMapping {
            task_id: task.task_id().to_owned(),
            reason: e.to_string(),
        })?;
        let json = Bytes::from(json);
        let poll = match (task.spec.poll_interval_ms, created) {
            (Some(base), Some(created)) if !terminal => Some((base, created)),
            _ => None,
        };
        // `_meta` (the server's name and version) precedes the task's members, and the
        // interval precedes the payload, so the first occurrence of the key is the interval.
        let split = poll.and_then(|_| {
            let start = json.windows(POLL_KEY.len()).position(|w| w == POLL_KEY)? + POLL_KEY.len();
            let digits = json[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            Some((start, start + digits))
        });
        let (head, tail, poll) = match split {
            Some((start, end)) => (json.slice(..start), json.slice(end..), poll),
            None => (json, Bytes::new(), None),
        };
        let compressible = poll.is_none() && gzip_min.is_some_and(|min| head.len() >= min);
        Ok(Some(Self {
            version: version.to_owned(),
            owner: task.spec.owner.clone(),
            terminal,
            deleted: crate::store::is_deleted(task),
            expires_at: task.expires_at().filter(|_| terminal),
            poll,
            fixed_interval_ms,
            head,
            tail,
            compressible,
            gzip: tokio::sync::OnceCell::new(),
        }))
    }

    /// Whether the task has expired at `now`: it has ended and its expiry has passed.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// The interval the answer advises at `now`, as `tasks/get` computes it.
    pub fn poll_interval_ms(&self, now: Timestamp) -> Option<u64> {
        let Some((base, created)) = self.poll else {
            return self.fixed_interval_ms;
        };
        advised_poll_interval_ms(Some(base), created, now).and_then(|ms| u64::try_from(ms).ok())
    }

    /// The whole JSON-RPC response: `{"jsonrpc":"2.0","id":<id>,"result":<answer>}`, advising
    /// `interval_ms` when the interval is spliced. Only the parts around the kept bytes are
    /// new; the kept bytes are shared, not copied.
    pub fn render(&self, id_json: &[u8], interval_ms: Option<u64>) -> Chunks {
        let mut parts = VecDeque::with_capacity(5);
        parts.push_back(Bytes::from(start(id_json)));
        parts.push_back(self.head.clone());
        if self.poll.is_some() {
            let digits = interval_ms.unwrap_or_default().to_string();
            parts.push_back(Bytes::from(digits));
            parts.push_back(self.tail.clone());
        }
        parts.push_back(Bytes::from_static(b"}"));
        Chunks::new(parts)
    }

    /// The response of [`Self::render`], gzip-coded: one member around the kept bytes,
    /// compressed by the first call (off the request's thread; concurrent first calls wait
    /// for the one compression). `None` when the answer is not compressible or did not
    /// compress.
    pub async fn render_gzip(&self, id_json: &[u8]) -> Option<Chunks> {
        if !self.compressible {
            return None;
        }
        let compressed = self
            .gzip
            .get_or_init(|| {
                let head = self.head.clone();
                async move {
                    tokio::task::spawn_blocking(move || Compressed::of(&head))
                        .await
                        .ok()
                        .flatten()
                }
            })
            .await
            .as_ref()?;
        Some(Chunks::new(compressed.member(&start(id_json))?.into()))
    }

    /// The bytes this answer holds, counting the compressed copy it may come to hold at the
    /// most it may take.
    pub fn size(&self) -> usize {
        let compressed = if self.compressible {
            super::gzip::max_size(self.head.len())
        } else {
            0
        };
        self.head.len() + self.tail.len() + compressed + self.version.len() + self.owner.len()
    }
}

/// A response body of a few byte pieces, each sent as it is (hyper writes them to the socket
/// in one vectored write), with its exact length known up front (`Content-Length`).
#[derive(Debug)]
pub struct Chunks {
    parts: VecDeque<Bytes>,
    len: u64,
}

impl Chunks {
    fn new(parts: VecDeque<Bytes>) -> Self {
        let len = parts.iter().map(|p| p.len() as u64).sum();
        Self { parts, len }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let part = self.parts.pop_front();
        if let Some(part) = &part {
            self.len -= part.len() as u64;
        }
        Poll::Ready(part.map(|p| Ok(Frame::data(p))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

/// The answers of polled tasks by task ID, the newest state polled of each, within a byte
/// budget: when a new answer would exceed it, the answers kept so far are dropped (they are
/// rebuilt on their next poll), and an answer larger than a quarter of it is never kept.
#[derive(Debug)]
pub struct Answers {
    budget: usize,
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_id: HashMap<String, Arc<Answer>>,
    bytes: usize,
}

impl Answers {
    /// An empty cache of at most `budget` bytes.
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            inner: Mutex::default(),
        }
    }

    /// The answer kept for `id` when it shows `version`.
    pub fn get(&self, id: &str, version: &str) -> Option<Arc<Answer>> {
        let kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        kept.by_id.get(id).filter(|a| a.version == version).cloned()
    }

    /// Keeps `answer` as the one for `id` (within the budget) and returns it.
    pub fn keep(&self, id: &str, mut answer: Answer) -> Arc<Answer> {
        if answer.size() + id.len() > self.budget / 4 {
            // Kept without its compressed copy if that fits; else built again for each poll,
            // and then never compressed, which would cost that per poll.
            answer.compressible = false;
            if answer.size() + id.len() > self.budget / 4 {
                return Arc::new(answer);
            }
        }
        let size = answer.size() + id.len();
        let answer = Arc::new(answer);
        let mut kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = kept.by_id.remove(id) {
            kept.bytes -= old.size() + id.len();
        }
        if kept.bytes + size > self.budget {
            kept.by_id.clear();
            kept.bytes = 0;
        }
        kept.bytes += size;
        kept.by_id.insert(id.to_owned(), answer.clone());
        answer
    }

    /// Bytes held by the kept answers, and how many there are.
    pub fn usage(&self) -> (usize, usize) {
        let kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (kept.bytes, kept.by_id.len())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;
    use rmcp::model::{JsonRpcResponse, JsonRpcVersion2_0, RequestId};
    use serde_json::json;

    use super::*;

    fn working_since(age: SignedDuration) -> McpTask {
        let created = (Timestamp::now() - age).to_string();
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTask",
            "metadata": {"name": "t", "creationTimestamp": created, "resourceVersion": "42"},
            "spec": {"tool": "x", "owner": "o", "pollIntervalMs": 2000},
            "status": {"status": "working"},
        }))
        .expect("an McpTask")
    }

    /// What the full path sends at `now`: rmcp's response around the mapped task.
    fn full(task: &McpTask, id: RequestId, now: Timestamp) -> Vec<u8> {
        let mut result = GetTaskResult::new(wire::detailed_task_at(task, now).unwrap());
        result.meta = Some(server_info_meta());
        let response = JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id,
            result,
        };
        serde_json::to_vec(&response).unwrap()
    }

    #[test]
    fn the_interval_advised_at_each_poll_is_spliced_into_the_cached_bytes() {
        for age in [0, 59, 61, 3_600, 86_400 * 30] {
            let task = working_since(SignedDuration::from_secs(age));
            let answer = Answer::build(&task, None).unwrap().unwrap();
            let now = Timestamp::now();
            for id in [RequestId::Number(7), RequestId::String("a\"b".into())] {
                let spliced = answer.render(
                    &super::super::request::id_json(&id),
                    answer.poll_interval_ms(now),
                );
                let length = http_body::Body::size_hint(&spliced).exact();
                let spliced: Vec<u8> = spliced.parts.iter().flatten().copied().collect();
                assert_eq!(length, Some(spliced.len() as u64), "Content-Length");
                assert_eq!(
                    String::from_utf8(spliced).unwrap(),
                    String::from_utf8(full(&task, id, now)).unwrap(),
                    "age {age} s"
                );
            }
        }
    }

    fn completed(text: &str) -> McpTask {
        let mut task = working_since(SignedDuration::ZERO);
        task.status = Some(
            serde_json::from_value(json!({"status": "completed",
            "result": {"content": [{"type": "text", "text": text}]}}))
            .unwrap(),
        );
        task
    }

    fn bytes_of(chunks: Chunks) -> Vec<u8> {
        let length = http_body::Body::size_hint(&chunks).exact();
        let bytes: Vec<u8> = chunks.parts.iter().flatten().copied().collect();
        assert_eq!(length, Some(bytes.len() as u64), "Content-Length");
        bytes
    }

    #[tokio::test]
    async fn a_gzip_coded_answer_decodes_to_the_plain_one_and_only_large_kept_ones_are_coded() {
        let text: String = (0..4000)
            .map(|n| format!("line {n} of the tool's output\n"))
            .collect();
        let answers = Answers::new(64 << 20);
        let id = br#""req-1""#;
        let large = answers.keep(
            "t",
            Answer::build(&completed(&text), Some(8192))
                .unwrap()
                .unwrap(),
        );
        let coded = bytes_of(large.render_gzip(id).await.expect("coded"));
        let mut decoded = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&coded[..]), &mut decoded)
            .unwrap();
        assert_eq!(decoded, bytes_of(large.render(id, None)));
        assert!(
            coded.len() * 4 < decoded.len(),
            "{} of {}",
            coded.len(),
            decoded.len()
        );
        // Compressed once: a second poll shares the same compressed bytes.
        let again = large.render_gzip(id).await.unwrap();
        let first = large.render_gzip(id).await.unwrap();
        assert_eq!(again.parts[1].as_ptr(), first.parts[1].as_ptr());

        let small = Answer::build(&completed("hi"), Some(8192))
            .unwrap()
            .unwrap();
        assert!(small.render_gzip(id).await.is_none(), "below the size");
        let off = Answer::build(&completed(&text), None).unwrap().unwrap();
        assert!(off.render_gzip(id).await.is_none(), "turned off");
        let mut working = working_since(SignedDuration::ZERO);
        working.status = Some(
            serde_json::from_value(json!({"status": "working",
            "statusMessage": "x".repeat(10_000)}))
            .unwrap(),
        );
        let spliced = Answer::build(&working, Some(8192)).unwrap().unwrap();
        assert!(spliced.render_gzip(id).await.is_none(), "interval spliced");
        let tight = Answers::new(4 * 1024);
        let unkept = tight.keep(
            "t",
            Answer::build(&completed(&text), Some(8192))
                .unwrap()
                .unwrap(),
        );
        assert!(
            unkept.render_gzip(id).await.is_none(),
            "not kept: never compressed"
        );
        // An answer that fits a quarter of the budget only without its compressed copy is
        // kept, and sent as it is.
        let size = Answer::build(&completed(&text), None)
            .unwrap()
            .unwrap()
            .size();
        let snug = Answers::new(4 * (size + 1));
        let kept = snug.keep(
            "t",
            Answer::build(&completed(&text), Some(8192))
                .unwrap()
                .unwrap(),
        );
        assert_eq!(snug.usage().1, 1, "kept");
        assert!(
            kept.render_gzip(id).await.is_none(),
            "kept without compression"
        );
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let answers = Answers::new(4096);
        let task = working_since(SignedDuration::ZERO);
        for n in 0..100 {
            answers.keep(
                &format!("t{n}"),
                Answer::build(&task, None).unwrap().unwrap(),
            );
            assert!(answers.usage().0 <= 4096, "{:?}", answers.usage());
        }
        let mut big = task.clone();
        big.status = Some(
            serde_json::from_value(json!({"status": "completed",
            "result": {"content": [{"type": "text", "text": "z".repeat(2048)}]}}))
            .unwrap(),
        );
        let kept = answers.keep("big", Answer::build(&big, None).unwrap().unwrap());
        assert!(kept.terminal);
        assert!(
            answers.get("big", "42").is_none(),
            "larger than a quarter: not kept"
        );
    }
}
