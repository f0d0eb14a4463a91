//! Progress of one task, folded from the bytes of its tool container's stdout.
//!
//! [`Progress`] is what the log follower keeps per task: the latest status message, every input
//! request issued, the first terminal message and the bounded plain output. It is rebuilt from
//! the start of the log after an operator restart, so it holds nothing the cluster does not.

use std::collections::BTreeMap;

use mcp_task_operator_crds::TaskError;
use serde_json::{Map, Value};

use super::lines::{LineSplitter, RawLine};
use super::message::{Line, Malformed, Message, parse_signed_line};
use super::output::OutputBuffer;
use super::{
    MAX_INPUT_REQUESTS, MAX_INPUT_TOTAL_BYTES, MAX_LINE_BYTES, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES,
};

/// The message that ended the task from the container's side.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    /// A valid result message: the task completes with this `CallToolResult`.
    Result(Map<String, Value>),
    /// An error message: the task fails with this JSON-RPC error.
    Error(TaskError),
    /// A result message over the size bound: the task fails saying so.
    ResultTooLarge {
        /// Size of the result in bytes.
        bytes: usize,
    },
}

/// Something wrong in a tool's output: logged and surfaced as a Warning Event on the task.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProgressWarning {
    /// A line meant as a message is not a valid one.
    #[error("malformed {} message from the tool: {}", .0.kind.as_deref().unwrap_or("mcp"), .0.reason)]
    Malformed(Malformed),
    /// An input message reused a key with a different request; keys are unique per task.
    #[error("input request key {key:?} was already used for another request; ignored")]
    DuplicateInputKey {
        /// The reused key.
        key: String,
    },
    /// The tool asked for more input requests (or bytes of them) than a task may issue.
    #[error(
        "input request {key:?} exceeds the per-task limit of {max_requests} input requests \
         or {max_bytes} bytes of them; ignored"
    )]
    TooManyInputRequests {
        /// The key that was dropped.
        key: String,
        /// The most requests a task may issue.
        max_requests: usize,
        /// The most bytes of requests a task may issue.
        max_bytes: usize,
    },
    /// A log line was longer than the line bound; only its start was kept.
    #[error("output line of {bytes} bytes cut to the {max}-byte limit")]
    LineCut {
        /// Full length of the line.
        bytes: usize,
        /// The line bound.
        max: usize,
    },
    /// A log line is not valid UTF-8; it was kept with replacement characters.
    #[error("output line is not valid UTF-8; undecodable bytes were replaced")]
    InvalidUtf8,
    /// A `{"mcp": ...}` line without the task's message nonce was kept as plain output;
    /// reported for the first such line only.
    #[error(
        "an {{\"mcp\": ...}} line without the task's message nonce was kept as plain output \
         (the tool sets messageNonce); further ones are counted, not reported"
    )]
    UnsignedMessage,
    /// A message arrived after the result or error message; it is ignored.
    #[error("{kind} message after the task's result or error; ignored")]
    AfterTerminal {
        /// The late message's kind.
        kind: &'static str,
    },
}

impl ProgressWarning {
    /// The PascalCase Event reason for this warning (low cardinality).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "MalformedMessage",
            Self::DuplicateInputKey { .. } => "DuplicateInputKey",
            Self::TooManyInputRequests { .. } => "TooManyInputRequests",
            Self::AfterTerminal { .. } => "MessageAfterResult",
            Self::LineCut { .. } => "OutputLineCut",
            Self::InvalidUtf8 => "OutputNotUtf8",
            Self::UnsignedMessage => "UnsignedMessageIgnored",
        }
    }
}

/// Everything learnt so far from one container's stdout.
#[derive(Debug)]
pub struct Progress {
    splitter: LineSplitter,
    max_line_bytes: usize,
    status_message: Option<String>,
    input_requests: BTreeMap<String, Value>,
    /// Serialized size of `input_requests`, keys included.
    input_bytes: usize,
    terminal: Option<Terminal>,
    output: OutputBuffer,
    /// The message nonce lines must carry, if the tool signs its messages.
    nonce: Option<String>,
    /// How many `{"mcp": ...}` lines lacked the nonce.
    unsigned_messages: usize,
}

impl Default for Progress {
    fn default() -> Self {
        Self::with_bounds(MAX_LINE_BYTES, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES)
    }
}

impl Progress {
    /// Progress with explicit bounds: longest kept line, and plain-output head and tail sizes.
    pub fn with_bounds(max_line_bytes: usize, head_bytes: usize, tail_bytes: usize) -> Self {
        Self {
            splitter: LineSplitter::new(max_line_bytes),
            max_line_bytes,
            status_message: None,
            input_requests: BTreeMap::new(),
            input_bytes: 0,
            terminal: None,
            output: OutputBuffer::new(head_bytes, tail_bytes),
            nonce: None,
            unsigned_messages: 0,
        }
    }

    /// The same progress, taking as messages only lines signed with `nonce` (if any).
    pub fn with_nonce(mut self, nonce: Option<String>) -> Self {
        self.nonce = nonce;
        self
    }

    /// The same progress, resumed from what a task's status shows: its latest status message
    /// and its outstanding input requests (bounded as if the tool had sent them).
    pub fn resumed(
        mut self,
        status_message: Option<String>,
        input_requests: BTreeMap<String, Value>,
    ) -> Self {
        self.status_message = status_message;
        drop(self.add_input_requests(input_requests));
        self
    }

    /// Forgets the partial last line: the log is being read again, and that read delivers it
    /// whole.
    pub fn discard_partial_line(&mut self) {
        self.splitter.discard_partial();
    }

    /// Feeds a chunk of the log stream; returns the warnings its complete lines raised.
    pub fn push_bytes(&mut self, chunk: &[u8]) -> Vec<ProgressWarning> {
        let lines = self.splitter.push(chunk);
        lines
            .iter()
            .filter_map(|raw| self.observe_raw(raw))
            .collect()
    }

    /// Ends the stream (the container has stopped): a partial last line counts as a line.
    pub fn finish(&mut self) -> Vec<ProgressWarning> {
        let last = self.splitter.finish();
        last.and_then(|raw| self.observe_raw(&raw))
            .into_iter()
            .collect()
    }

    /// Parses and folds one raw line; a cut or undecodable log line is worth a warning too.
    fn observe_raw(&mut self, raw: &RawLine) -> Option<ProgressWarning> {
        let line = parse_signed_line(raw, self.max_line_bytes, self.nonce.as_deref());
        let notice = match &line {
            Line::Log(_) if raw.is_truncated() => Some(ProgressWarning::LineCut {
                bytes: raw.len,
                max: self.max_line_bytes,
            }),
            // A line cut inside a character is not the tool's fault; only judge whole lines.
            Line::Log(_) if std::str::from_utf8(&raw.bytes).is_err() => {
                Some(ProgressWarning::InvalidUtf8)
            }
            _ => None,
        };
        self.observe(line).or(notice)
    }

    /// Folds one parsed line into the progress.
    pub fn observe(&mut self, line: Line) -> Option<ProgressWarning> {
        match line {
            Line::Log(text) => {
                self.output.push_line(&text);
                None
            }
            Line::Malformed(malformed) => {
                self.output.push_line(&malformed.text);
                Some(ProgressWarning::Malformed(malformed))
            }
            Line::Unsigned(text) => {
                self.output.push_line(&text);
                self.unsigned_messages += 1;
                (self.unsigned_messages == 1).then_some(ProgressWarning::UnsignedMessage)
            }
            Line::Message(message) => self.observe_message(message),
        }
    }

    fn observe_message(&mut self, message: Message) -> Option<ProgressWarning> {
        if self.terminal.is_some() {
            return match message {
                // A goodbye status after the result is harmless; keep the result's state.
                Message::Status { .. } => None,
                Message::Input { .. } => Some(ProgressWarning::AfterTerminal { kind: "input" }),
                Message::Result { .. } | Message::ResultTooLarge { .. } => {
                    Some(ProgressWarning::AfterTerminal { kind: "result" })
                }
                Message::Error { .. } => Some(ProgressWarning::AfterTerminal { kind: "error" }),
            };
        }
        match message {
            Message::Status { message } => self.status_message = Some(message),
            Message::Input { requests } => return self.add_input_requests(requests),
            Message::Result { result } => self.terminal = Some(Terminal::Result(result)),
            Message::ResultTooLarge { bytes } => {
                self.terminal = Some(Terminal::ResultTooLarge { bytes });
            }
            Message::Error { error } => self.terminal = Some(Terminal::Error(error)),
        }
        None
    }

    fn add_input_requests(&mut self, requests: BTreeMap<String, Value>) -> Option<ProgressWarning> {
        let mut warning = None;
        for (key, request) in requests {
            match self.input_requests.get(&key) {
                // Re-printing the same request (e.g. after a tool restart) is idempotent.
                Some(existing) if *existing == request => {}
                Some(_) => warning = Some(ProgressWarning::DuplicateInputKey { key }),
                None => {
                    // Requests end up in the task's status: bound them to fit an etcd object.
                    let bytes =
                        key.len() + serde_json::to_vec(&request).map_or(usize::MAX, |v| v.len());
                    let total = self.input_bytes.saturating_add(bytes);
                    if self.input_requests.len() >= MAX_INPUT_REQUESTS
                        || total > MAX_INPUT_TOTAL_BYTES
                    {
                        warning = Some(ProgressWarning::TooManyInputRequests {
                            key,
                            max_requests: MAX_INPUT_REQUESTS,
                            max_bytes: MAX_INPUT_TOTAL_BYTES,
                        });
                    } else {
                        self.input_bytes = total;
                        self.input_requests.insert(key, request);
                    }
                }
            }
        }
        warning
    }

    /// The latest status message, if the tool sent one.
    pub fn status_message(&self) -> Option<&str> {
        self.status_message.as_deref()
    }

    /// Every input request the tool has issued, answered or not, by key.
    pub fn input_requests(&self) -> &BTreeMap<String, Value> {
        &self.input_requests
    }

    /// The issued input requests whose keys `is_answered` does not accept.
    pub fn outstanding_input(&self, is_answered: impl Fn(&str) -> bool) -> BTreeMap<String, Value> {
        self.input_requests
            .iter()
            .filter(|(key, _)| !is_answered(key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect()
    }

    /// The first result or error message, if one has arrived.
    pub fn terminal(&self) -> Option<&Terminal> {
        self.terminal.as_ref()
    }

    /// How many `{"mcp": ...}` lines lacked the task's message nonce (kept as plain output).
    pub fn unsigned_messages(&self) -> usize {
        self.unsigned_messages
    }

    /// The plain output so far.
    pub fn output(&self) -> &OutputBuffer {
        &self.output
    }
}

#[cfg(test)]
mod tests;
