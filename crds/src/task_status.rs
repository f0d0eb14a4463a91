//! The MCP status of a task and the JSON-RPC error of a failed one: shared by the `McpTask`
//! status and the wire mapping.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema;

/// Status of an MCP task. `completed`, `failed` and `cancelled` are terminal.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The task is being processed.
    #[default]
    Working,
    /// The task waits for answers to its inputRequests.
    InputRequired,
    /// The task finished with a result (which may be a tool error, `isError: true`).
    Completed,
    /// The task ended with a JSON-RPC error.
    Failed,
    /// The task was cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the status is final: `completed`, `failed` or `cancelled`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The status as MCP spells it (`input_required`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A JSON-RPC error object, as a failed task reports it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TaskError {
    /// JSON-RPC error code, e.g. -32603 (internal error).
    pub code: i64,
    /// One-sentence description of the error.
    pub message: String,
    /// Further detail, any JSON value; the operator puts the failure reason in `data.reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::any_value")]
    pub data: Option<Value>,
}
