//! The follower's checkpoint as the task's status records it, and what a follower started after
//! a failover resumes from (see the parent module).

use std::collections::BTreeMap;

use mcp_task_operator_crds::{McpTaskStatus, TaskStatus};
use serde_json::Value;

use super::LinePos;
use crate::controller::mcp_task::status::checkpoint_of;

/// Where a task's status left off in its pod's log; kept in the status (see `status.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// The pod whose log this is.
    pub pod_uid: String,
    /// Log bytes folded when the status was decided (since the follower started).
    pub bytes: u64,
    /// Output warnings reported (as Events) so far.
    pub warnings: u64,
    /// The last line folded when the status was decided (`None` before the first, and in
    /// checkpoints written before lines had places).
    pub at: Option<LinePos>,
}

impl Checkpoint {
    /// The checkpoint as the status condition's message reads it: `pod <uid>: <bytes> log
    /// bytes read (last line logged <time> #<nth>), <warnings> output warnings reported`.
    pub fn message(&self) -> String {
        let at = self
            .at
            .map(|at| format!(" (last line logged {at})"))
            .unwrap_or_default();
        format!(
            "pod {}: {} log bytes read{at}, {} output warnings reported",
            self.pod_uid, self.bytes, self.warnings
        )
    }

    /// The checkpoint of a condition message written by [`Checkpoint::message`] (the place of
    /// the last line is missing from the messages of older operators).
    pub fn parse(message: &str) -> Option<Self> {
        let (pod, rest) = message.strip_prefix("pod ")?.split_once(": ")?;
        let (bytes, rest) = rest.split_once(" log bytes read")?;
        let (at, rest) = match rest.strip_prefix(" (last line logged ") {
            Some(rest) => {
                let (at, rest) = rest.split_once("), ")?;
                (Some(at.parse().ok()?), rest)
            }
            None => (None, rest.strip_prefix(", ")?),
        };
        let warnings = rest.strip_suffix(" output warnings reported")?;
        Some(Self {
            pod_uid: pod.to_owned(),
            bytes: bytes.parse().ok()?,
            warnings: warnings.parse().ok()?,
            at,
        })
    }
}

/// What a follower started after a failover resumes from: the status's checkpoint and what the
/// status shows, from [`resume_of`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resume {
    /// Where the status left off.
    pub checkpoint: Checkpoint,
    /// The tool's latest status message, as the status shows it.
    pub status_message: Option<String>,
    /// The input requests the status shows as outstanding.
    pub input_requests: BTreeMap<String, Value>,
}

/// Messages the operator shows for a running tool that sent none of its own (outcome.rs): not
/// the tool's, so not resumed as its status message.
const OPERATOR_MESSAGES: [&str; 2] = ["Running", "Waiting for input"];

/// What a follower of the task whose status is `status` resumes from, if it recorded a
/// checkpoint and is still running.
pub fn resume_of(status: &McpTaskStatus) -> Option<Resume> {
    let checkpoint = checkpoint_of(status)?;
    let running = matches!(
        status.status,
        TaskStatus::Working | TaskStatus::InputRequired
    );
    let message = status
        .status_message
        .clone()
        .filter(|m| running && !OPERATOR_MESSAGES.contains(&m.as_str()))
        .filter(|m| !m.starts_with("Cancel"));
    let requests = match status.status {
        TaskStatus::InputRequired => status.input_requests.clone().unwrap_or_default(),
        _ => BTreeMap::new(),
    };
    Some(Resume {
        checkpoint,
        status_message: message,
        input_requests: requests,
    })
}
