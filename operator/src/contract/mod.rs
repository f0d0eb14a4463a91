//! The tool container contract (v1): what a tool image sees and how its stdout is read.
//!
//! Everything here is pure: the names a container is given, the splitting of its log byte
//! stream into bounded lines, the parsing of `{"mcp": ...}` messages and the accumulation of
//! plain output. The controller feeds it bytes and reads back a [`Progress`].

pub mod env;
pub mod input;
pub mod lines;
pub mod message;
pub mod output;
pub mod progress;
pub mod yaml_safe;

pub use env::{EnvTooLarge, MAX_ENV_VAR_BYTES, check_env_size, kubelet_literal};
pub use input::{
    InputRequestError, check_elicitation_url, validate_input_key, validate_input_request,
};
pub use lines::{LineSplitter, RawLine};
pub use message::{Line, Malformed, MalformedReason, Message, parse_line, parse_signed_line};
pub use output::OutputBuffer;
pub use progress::{Progress, ProgressWarning, Terminal};

/// Env var holding the task ID (the McpTask's name).
pub const ENV_TASK_ID: &str = "MCP_TASK_ID";
/// Env var holding the MCP name of the tool.
pub const ENV_TOOL_NAME: &str = "MCP_TOOL_NAME";
/// Env var holding the call's arguments as a JSON object.
pub const ENV_TOOL_ARGUMENTS: &str = "MCP_TOOL_ARGUMENTS";
/// Env var holding the answers to the tool's `startInputs`, as JSON, when it has any.
pub const ENV_START_INPUTS: &str = "MCP_START_INPUTS";
/// Env var holding the client capabilities the creating `tools/call` declared (a JSON object,
/// `{}` when none): which input request kinds the client can answer.
pub const ENV_CLIENT_CAPABILITIES: &str = "MCP_CLIENT_CAPABILITIES";
/// Env var holding the task's W3C trace context (`00-<trace id>-<span id>-<flags>`), when the
/// task has one: the tool's own spans join the task's trace with it as their parent.
pub const ENV_TRACEPARENT: &str = "TRACEPARENT";

/// Mount path of the downward-API volume in the tool container.
pub const MOUNT_PATH: &str = "/var/run/mcp";
/// Name of the downward-API volume in the pod.
pub const VOLUME_NAME: &str = "mcp-task";
/// File (under [`MOUNT_PATH`]) that is empty until cancel, then holds the RFC 3339 request time:
/// the projection of the pod's copy of the task's cancel annotation
/// ([`mcp_task_operator_crds::CANCEL_REQUESTED_ANNOTATION`]), which the operator sets on the live pod.
pub const CANCEL_FILE: &str = "cancel-requested";
/// File (under [`MOUNT_PATH`]) holding the client's answers as a JSON object (`{}` until then).
pub const INPUT_RESPONSES_FILE: &str = "input-responses";

/// File (under [`MOUNT_PATH`]) holding the task's message nonce, for tools with
/// `messageNonce: true` only: a contract message must carry `"nonce": "<its content>"`.
pub const MESSAGE_NONCE_FILE: &str = "message-nonce";
/// Environment variable that gives a tool container the message nonce instead of
/// [`MESSAGE_NONCE_FILE`]: a container that declares it (from the
/// [`POD_MESSAGE_NONCE_ANNOTATION`]) gets no nonce file. The bridge does, so that the server it
/// starts in the same container cannot read the nonce (docs/SECURITY.md, "Bridged servers").
pub const MESSAGE_NONCE_ENV: &str = "MCP_MESSAGE_NONCE";

/// Pod annotation projected into [`INPUT_RESPONSES_FILE`]; the operator keeps it in step.
pub const POD_INPUT_RESPONSES_ANNOTATION: &str = "mcptasks.io/input-responses";
/// Pod template annotation of a task's Job projected into [`MESSAGE_NONCE_FILE`]; the Job is
/// where the operator reads the nonce back (after a restart too).
pub const POD_MESSAGE_NONCE_ANNOTATION: &str = "mcptasks.io/message-nonce";

/// Longest stdout line kept, in bytes; longer lines are cut and reported.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Largest serialized `CallToolResult` a task may store (it must fit an etcd object).
pub const MAX_RESULT_BYTES: usize = 512 * 1024;
/// Largest serialized `inputRequests` object a single input message may carry.
pub const MAX_INPUT_MESSAGE_BYTES: usize = 64 * 1024;
/// Most input requests a task may issue over its lifetime.
pub const MAX_INPUT_REQUESTS: usize = 64;
/// Most bytes of input requests (keys and serialized requests) a task may issue over its
/// lifetime; with the other status fields this keeps the task well inside an etcd object.
pub const MAX_INPUT_TOTAL_BYTES: usize = 256 * 1024;
/// Longest status message kept, in characters; longer ones are shortened with an ellipsis.
pub const MAX_STATUS_MESSAGE_CHARS: usize = 1024;
/// Bytes of plain output kept from the start of the stream.
pub const OUTPUT_HEAD_BYTES: usize = 16 * 1024;
/// Bytes of plain output kept from the end of the stream (the tail reported on failure).
pub const OUTPUT_TAIL_BYTES: usize = 48 * 1024;
