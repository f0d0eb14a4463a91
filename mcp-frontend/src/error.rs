//! Errors of the front end and their JSON-RPC form.
//!
//! Every handler failure is an [`Error`]; [`Error::to_error_data`] turns it into the JSON-RPC
//! error object rmcp sends, and [`http_status`] gives the HTTP status the specification
//! asks for (`docs/DESIGN.md#http-status`) (used by the routes rmcp does not serve, such as `subscriptions/listen`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcp_task_operator_crds::wire::tool_error::wire_error;
use rmcp::model::{ClientCapabilities, ErrorCode, ErrorData, JsonRpcError, RequestId};
use serde_json::json;

use crate::authz::AuthzError;
use crate::store::StoreError;

/// Crate-wide result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Message of the -32602 answer for unknown, foreign and purged tasks (one text for all, so
/// that existence does not leak). `docs/DESIGN.md#expired-task` fixes the wording; the spec's examples
/// prefix it with "Failed to retrieve task: ", which would be wrong for `tasks/cancel` and
/// `tasks/update`, so the message is the bare reason on every task method.
pub const TASK_NOT_FOUND: &str = "Task not found";
/// Message of the -32602 answer for an expired task, shown to its owner only
/// (`docs/DESIGN.md#expired-task`).
pub const TASK_EXPIRED: &str = "Task has expired";

/// Message of the -32603 answer when this replica cannot reach the Kubernetes API server (a
/// probe says so, an API call timed out or found no server). Retrying reaches another replica
/// or this one once the server is back; the answer says so in `data.retryAfterMs`.
pub const API_SERVER_UNREACHABLE: &str =
    "Kubernetes API server unreachable from this server replica; retry the request";
/// Message of the -32603 answer while this replica's task cache is (re)loading, at startup and
/// after an API server outage: until then it could show a task's older state.
pub const TASK_CACHE_SYNCING: &str = "this server replica is loading its task cache from the Kubernetes API server; retry the request";
/// Message of the -32603 answer when a caller's access to tools could not be checked (the
/// SubjectAccessReview failed).
pub const AUTHORIZATION_UNAVAILABLE: &str =
    "authorization check unavailable on this server replica; retry the request";
/// Message of the -32603 answer when a bearer token could not be checked (the TokenReview
/// failed); sent with HTTP 503 before the request body is read, so with a null `id`.
pub const AUTHENTICATION_UNAVAILABLE: &str =
    "authentication check unavailable on this server replica; retry the request";
/// `data.retryAfterMs` of [`API_SERVER_UNREACHABLE`] and [`TASK_CACHE_SYNCING`] answers.
pub const UNREACHABLE_RETRY_AFTER_MS: u64 = 1000;

/// JSON-RPC code of a per-caller rate limit (`tools/call`, `tasks/get` polls): the caller may
/// retry after `data.retryAfterMs`. Application codes lie outside -32768..=-32000, which
/// JSON-RPC reserves for itself.
pub const RATE_LIMITED: ErrorCode = ErrorCode(-31001);
/// JSON-RPC code of a per-caller quota (active tasks): `data.limit` is the quota and
/// `data.active` what the caller holds; retrying helps only once one of its tasks ends.
pub const QUOTA_EXCEEDED: ErrorCode = ErrorCode(-31002);

/// The JSON-RPC error object of [`API_SERVER_UNREACHABLE`].
pub fn api_server_unreachable() -> ErrorData {
    unavailable(API_SERVER_UNREACHABLE)
}

/// A -32603 with `message` that asks the client to retry after [`UNREACHABLE_RETRY_AFTER_MS`].
pub fn unavailable(message: &'static str) -> ErrorData {
    ErrorData::internal_error(
        message,
        Some(json!({ "retryAfterMs": UNREACHABLE_RETRY_AFTER_MS })),
    )
}

/// A request the front end could not serve.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `tools/call` named a tool that is not served (or not Ready).
    #[error("Unknown tool: {name}")]
    UnknownTool {
        /// The MCP name asked for.
        name: String,
    },
    /// `tools/call` arguments do not match the tool's `inputSchema`.
    #[error("Invalid arguments for tool {tool}: {reason}")]
    InvalidArguments {
        /// The MCP tool name.
        tool: String,
        /// Which argument is wrong and why.
        reason: String,
    },
    /// The task does not exist, belongs to someone else, or has been deleted.
    #[error("{TASK_NOT_FOUND}")]
    TaskNotFound,
    /// The caller's own task outlived its `ttlMs`.
    #[error("{TASK_EXPIRED}")]
    TaskExpired,
    /// The call needs a task but the request did not declare the tasks extension.
    #[error(
        "tool {tool} runs only as a task; call it on MCP 2026-07-28 declaring the io.modelcontextprotocol/tasks extension"
    )]
    TasksCapabilityRequired {
        /// The MCP tool name.
        tool: String,
    },
    /// The tool asks start inputs but the request cannot receive elicitations.
    #[error(
        "tool {tool} asks for input before it starts; the client must declare elicitation ({mode} mode) on MCP 2026-07-28"
    )]
    ElicitationRequired {
        /// The MCP tool name.
        tool: String,
        /// The elicitation mode the unanswerable question needs: `form` or `url`.
        mode: &'static str,
    },
    /// An answer in `inputResponses` has the wrong shape.
    #[error("Invalid input response {key}: {reason}")]
    InvalidInputResponse {
        /// The input key answered.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A tool's `startInputs` entry is not a valid MCP input request.
    #[error("start inputs of tool {tool} are invalid: {reason}")]
    InvalidStartInput {
        /// The MCP tool name.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// A synchronous call's task failed with a JSON-RPC error, answered as that error.
    #[error("tool failed")]
    ToolFailed(Option<mcp_task_operator_crds::TaskError>),
    /// The client went away while a synchronous call waited.
    #[error("the client abandoned the call")]
    CallAbandoned,
    /// A synchronous call's task was deleted (its `McpTask` removed) before it finished.
    #[error("task {task_id} was deleted before it finished; the call has no result")]
    TaskDeleted {
        /// The deleted task's ID.
        task_id: String,
    },
    /// The caller sends `method` faster than its configured per-caller rate.
    #[error(
        "rate limited: {method} is limited to {per_second} per second per caller; retry in {retry_after_ms} ms"
    )]
    RateLimited {
        /// The JSON-RPC method limited (`tools/call`, `tasks/get`).
        method: &'static str,
        /// The configured rate.
        per_second: f64,
        /// When the caller may try again, in milliseconds.
        retry_after_ms: u64,
    },
    /// The caller polls one of its tasks faster than the task's advertised `pollIntervalMs`.
    #[error(
        "rate limited: task {task_id} is polled faster than its pollIntervalMs of {poll_interval_ms} ms allows (bursts of {burst}); retry in {retry_after_ms} ms"
    )]
    PolledTooOften {
        /// The task polled.
        task_id: String,
        /// The interval its answers advertise.
        poll_interval_ms: u64,
        /// Polls allowed at once.
        burst: u64,
        /// When the caller may poll again, in milliseconds.
        retry_after_ms: u64,
    },
    /// The caller already holds as many active tasks as it may.
    #[error(
        "quota exceeded: this caller has {active} active tasks and the limit is {limit}; wait for one to finish or cancel one"
    )]
    ActiveTaskQuota {
        /// The caller's tasks not yet completed, failed or cancelled (this replica's view).
        active: usize,
        /// `MAX_ACTIVE_TASKS_PER_CALLER`.
        limit: usize,
    },
    /// The caller already has as many tasks stored (finished ones included) as it may.
    #[error(
        "quota exceeded: this caller has {stored} stored tasks (finished ones count until their TTL deletes them) and the limit (MAX_STORED_TASKS_PER_CALLER) is {limit}; wait for older tasks to expire"
    )]
    StoredTaskQuota {
        /// The caller's stored tasks (this replica's view).
        stored: usize,
        /// `MAX_STORED_TASKS_PER_CALLER`.
        limit: usize,
    },
    /// The caller's stored tasks already hold as many bytes as it may.
    #[error(
        "quota exceeded: this caller's stored tasks hold {bytes} bytes of arguments, answers and results (finished tasks count until their TTL deletes them) and the limit (MAX_STORED_BYTES_PER_CALLER) is {limit}; wait for older tasks to expire"
    )]
    StoredBytesQuota {
        /// Bytes of the caller's stored tasks' inputs and results (this replica's view).
        bytes: usize,
        /// `MAX_STORED_BYTES_PER_CALLER`.
        limit: usize,
    },
    /// A value the request would have stored is larger than its limit.
    #[error("{what}: {bytes} bytes exceed the {limit}-byte limit")]
    TooLarge {
        /// What was too large (`inputResponses`, ...).
        what: &'static str,
        /// Its size as it would be stored.
        bytes: usize,
        /// The configured limit.
        limit: usize,
    },
    /// A `subscriptions/listen` names more task IDs than one listen may.
    #[error("notifications.taskIds names {count} tasks; at most {limit} per listen")]
    TooManyListenTasks {
        /// IDs named.
        count: usize,
        /// `MAX_LISTEN_TASK_IDS`.
        limit: usize,
    },
    /// `tools/list` received a cursor this server never issued.
    #[error("Invalid cursor")]
    InvalidCursor,
    /// The request reached the handler without an authenticated caller (a wiring bug).
    #[error("request carries no caller identity")]
    MissingCaller,
    /// A stored task could not be turned into its MCP form.
    #[error("task {task_id} cannot be shown: {reason}")]
    TaskMapping {
        /// The task ID.
        task_id: String,
        /// What is wrong with the stored object.
        reason: String,
    },
    /// The stored task breaks a wire rule (e.g. completed without a result).
    #[error("stored task cannot be shown")]
    Wire(#[from] mcp_task_operator_crds::wire::WireError),
    /// The task or tool store failed.
    #[error("task store failed")]
    Store(#[from] StoreError),
    /// Whether the caller may call a tool could not be checked (RBAC review failed).
    #[error("authorization check failed")]
    Authorization(#[from] AuthzError),
}

impl Error {
    /// Low-cardinality name of the error, for metric labels and logs.
    pub fn category(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::TaskNotFound => "task_not_found",
            Self::TaskExpired => "task_expired",
            Self::TasksCapabilityRequired { .. } => "tasks_capability_required",
            Self::ElicitationRequired { .. } => "elicitation_required",
            Self::InvalidInputResponse { .. } => "invalid_input_response",
            Self::InvalidCursor => "invalid_cursor",
            Self::RateLimited { .. } | Self::PolledTooOften { .. } => "rate_limited",
            Self::ActiveTaskQuota { .. } => "active_task_quota",
            Self::StoredTaskQuota { .. } => "stored_task_quota",
            Self::StoredBytesQuota { .. } => "stored_bytes_quota",
            Self::TooLarge { .. } => "too_large",
            Self::TooManyListenTasks { .. } => "too_many_listen_tasks",
            Self::InvalidStartInput { .. } => "invalid_start_input",
            Self::ToolFailed(_) => "tool_failed",
            Self::CallAbandoned => "call_abandoned",
            Self::TaskDeleted { .. } => "task_deleted",
            Self::MissingCaller => "missing_caller",
            Self::TaskMapping { .. } => "task_mapping",
            Self::Wire(_) => "wire",
            Self::Store(_) => "store",
            Self::Authorization(_) => "authorization",
        }
    }

    /// The JSON-RPC error object for this error. Server-side failures are logged here, once,
    /// and answered with a generic message.
    pub fn to_error_data(&self) -> ErrorData {
        match self {
            Self::UnknownTool { .. }
            | Self::InvalidArguments { .. }
            | Self::TaskNotFound
            | Self::TaskExpired
            | Self::InvalidInputResponse { .. }
            | Self::TooLarge { .. }
            | Self::TooManyListenTasks { .. }
            | Self::InvalidCursor => ErrorData::invalid_params(self.to_string(), None),
            Self::TasksCapabilityRequired { .. } => {
                let mut error = ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                );
                error.message = self.to_string().into();
                error
            }
            // Mode-aware, as MRTR asks: a URL question needs `elicitation.url`.
            Self::ElicitationRequired { mode, .. } => ErrorData::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                self.to_string(),
                Some(json!({ "requiredCapabilities": { "elicitation": { *mode: {} } } })),
            ),
            Self::RateLimited {
                per_second,
                retry_after_ms,
                ..
            } => ErrorData::new(
                RATE_LIMITED,
                self.to_string(),
                Some(json!({ "retryAfterMs": retry_after_ms, "limitPerSecond": per_second })),
            ),
            Self::PolledTooOften {
                poll_interval_ms,
                retry_after_ms,
                ..
            } => ErrorData::new(
                RATE_LIMITED,
                self.to_string(),
                Some(json!({ "retryAfterMs": retry_after_ms, "pollIntervalMs": poll_interval_ms })),
            ),
            Self::ActiveTaskQuota { active, limit } => ErrorData::new(
                QUOTA_EXCEEDED,
                self.to_string(),
                Some(json!({ "limit": limit, "active": active })),
            ),
            Self::StoredTaskQuota { stored, limit } => ErrorData::new(
                QUOTA_EXCEEDED,
                self.to_string(),
                Some(json!({ "limit": limit, "stored": stored })),
            ),
            Self::StoredBytesQuota { bytes, limit } => ErrorData::new(
                QUOTA_EXCEEDED,
                self.to_string(),
                Some(json!({ "limit": limit, "storedBytes": bytes })),
            ),
            Self::ToolFailed(Some(error)) => {
                // The same mapping as tasks/get: a reserved tool code becomes -32603.
                let error = wire_error(error);
                ErrorData::new(
                    ErrorCode(i32::try_from(error.code).unwrap_or(-32603)),
                    error.message,
                    error.data,
                )
            }
            Self::TaskDeleted { task_id } => {
                ErrorData::internal_error(self.to_string(), Some(json!({ "taskId": task_id })))
            }
            Self::ToolFailed(None) | Self::CallAbandoned => {
                ErrorData::internal_error("Tool execution failed", None)
            }
            Self::Store(
                store @ (StoreError::Timeout { .. }
                | StoreError::Api {
                    source: kube::Error::HyperError(_) | kube::Error::Service(_),
                    ..
                }),
            ) => {
                tracing::warn!(error = %ErrorChain(store), "Kubernetes API server unreachable");
                api_server_unreachable()
            }
            // Nothing the caller did: log it and ask for a retry, as for an unreachable API.
            Self::Authorization(error) => {
                tracing::error!(error = %ErrorChain(error), "authorization check failed");
                unavailable(AUTHORIZATION_UNAVAILABLE)
            }
            Self::MissingCaller
            | Self::InvalidStartInput { .. }
            | Self::TaskMapping { .. }
            | Self::Wire(_)
            | Self::Store(_) => {
                tracing::error!(error = %ErrorChain(self), category = self.category(), "request failed");
                ErrorData::internal_error("Internal error", None)
            }
        }
    }
}

impl From<Error> for ErrorData {
    fn from(error: Error) -> Self {
        error.to_error_data()
    }
}

/// Displays an error with its whole `source()` chain, for logs.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

/// HTTP status of a JSON-RPC error response, per `docs/DESIGN.md#http-status`: 400 for
/// -32020/-32021/-32022 and for a -32602 about missing `_meta`, 404 for -32601, else 200.
pub fn http_status(code: ErrorCode, meta_malformed: bool) -> StatusCode {
    match code {
        ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if meta_malformed => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// A JSON-RPC error response with the HTTP status it travels with.
#[derive(Debug)]
pub struct JsonRpcErrorResponse {
    /// HTTP status.
    pub status: StatusCode,
    /// The JSON-RPC error message.
    pub body: JsonRpcError,
}

impl JsonRpcErrorResponse {
    /// An error answer to request `id`; the status follows [`http_status`].
    pub fn new(id: Option<RequestId>, error: ErrorData, meta_malformed: bool) -> Self {
        Self {
            status: http_status(error.code, meta_malformed),
            body: JsonRpcError::new(id, error),
        }
    }
}

impl IntoResponse for JsonRpcErrorResponse {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_reference() {
        for (code, malformed, expected) in [
            (ErrorCode::HEADER_MISMATCH, false, StatusCode::BAD_REQUEST),
            (ErrorCode::METHOD_NOT_FOUND, false, StatusCode::NOT_FOUND),
            (ErrorCode::INVALID_PARAMS, true, StatusCode::BAD_REQUEST),
            (ErrorCode::INVALID_PARAMS, false, StatusCode::OK),
            (ErrorCode::INTERNAL_ERROR, false, StatusCode::OK),
        ] {
            assert_eq!(
                http_status(code, malformed),
                expected,
                "{code:?}, {malformed}"
            );
        }
    }

    #[test]
    fn missing_tasks_capability_names_the_extension() {
        let data = Error::TasksCapabilityRequired { tool: "t".into() }.to_error_data();
        assert_eq!(data.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        let value = serde_json::to_value(&data).unwrap();
        assert_eq!(
            value["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json!({})
        );
    }

    #[test]
    fn application_limits_use_codes_outside_the_reserved_range() {
        for code in [RATE_LIMITED, QUOTA_EXCEEDED] {
            assert!(!(-32768..=-32000).contains(&code.0), "{code:?}");
        }
        let data = Error::ActiveTaskQuota {
            active: 3,
            limit: 3,
        }
        .to_error_data();
        assert_eq!(data.code, QUOTA_EXCEEDED);
        assert_eq!(data.data, Some(json!({ "limit": 3, "active": 3 })));
    }

    #[test]
    fn unknown_and_foreign_tasks_share_one_message() {
        let data = Error::TaskNotFound.to_error_data();
        assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(data.message, TASK_NOT_FOUND);
    }
}
