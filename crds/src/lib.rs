//! The mcp-task-operator API: the `McpTool` and `McpTask` custom resources.
//!
//! This crate holds no client calls and no async runtime: it is the shared vocabulary of the
//! front end, the operator and the tests. [`wire`] maps an `McpTask` to the MCP Tasks extension's
//! JSON; [`task_id`] mints task IDs.
#![deny(missing_docs)]

pub mod budget;
pub mod generate;
pub mod mcp_server;
pub mod mcp_task;
pub mod mcp_tool;
pub mod raw_json;
mod schema;
pub mod start_input;
pub mod task_id;
pub mod task_status;
pub mod warm_pool;
pub mod wire;

pub use generate::crds;
pub use mcp_server::{McpServer, McpServerSpec, McpServerStatus};
pub use mcp_task::{
    CANCEL_REQUESTED_ANNOTATION, McpTask, McpTaskSpec, McpTaskStatus, TRACEPARENT_ANNOTATION,
};
pub use mcp_tool::{McpTool, McpToolSpec, McpToolStatus, TaskSupport, ToolAnnotations};
pub use raw_json::RawJson;
pub use start_input::{ElicitationMode, ElicitationParams, StartInput, StartInputMethod};
pub use task_status::{TaskError, TaskStatus};
pub use warm_pool::WarmPool;

/// API group of every custom resource in this crate.
pub const GROUP: &str = "mcptasks.io";
/// API version of every custom resource in this crate.
pub const VERSION: &str = "v1alpha1";
/// Label the Kubernetes Job controller puts on every pod of a Job (its value: the Job's name,
/// which for a task's Job is the task's name). The operator and the CLI find a task's pods by it.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// Label the operator puts on each task's Job and pods (its value: the task's ID).
pub const TASK_LABEL: &str = "mcptasks.io/task";
/// Annotation the chart puts on the front end's Service in `tokenreview` mode: the audience
/// callers mint tokens for (the first of `frontend.auth.tokenReview.audiences`, by default the
/// release's own `mcp-task-operator.<namespace>.<fullname>`). `kubectl mcp` reads it.
pub const TOKEN_AUDIENCE_ANNOTATION: &str = "mcptasks.io/token-audience";
