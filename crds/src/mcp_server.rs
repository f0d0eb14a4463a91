//! The `McpServer` custom resource: an existing MCP server image (a stdio server) whose tools
//! become `McpTool`s. The operator discovers the tools by running the server once, then each
//! call of one of them runs the server in a Job of its own, spoken to by the bridge
//! (`mcp-bridge`, copied into the pod by an init container).

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp_tool::{
    TaskSupport, default_cancel_grace_period_seconds, default_sync_timeout_seconds, default_ttl_ms,
};

/// Name of the container that runs the server when the pod template has more than one.
pub const SERVER_CONTAINER_NAME: &str = "server";
/// Default `spec.discoveryTimeoutSeconds`.
pub const DEFAULT_DISCOVERY_TIMEOUT_SECONDS: i64 = 120;

/// An MCP server image whose tools are offered as task tools.
// NB: clippy reads the repeated `type_ = "string"` of the printcolumns as duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "mcptasks.io",
    version = "v1alpha1",
    kind = "McpServer",
    namespaced,
    status = "McpServerStatus",
    shortname = "mserver",
    category = "mcp",
    doc = "McpServer registers an existing MCP server image that speaks MCP over stdio. The \
           operator runs it once to discover its tools and creates one McpTool per offered \
           tool; each call then runs the server in a Job of its own, bridged to the tool \
           container contract.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Tools",
        type_ = "integer",
        description = "Tools offered",
        json_path = ".status.toolCount"
    ),
    printcolumn(
        name = "Server",
        type_ = "string",
        description = "The server's own name and version",
        json_path = ".status.serverVersion"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct McpServerSpec {
    /// Pod template that runs the server. The server runs in the container named `server`, or
    /// in the only container; that container must set `command` (and may set `args`): the
    /// operator starts the server through the bridge and cannot read an image's entrypoint.
    /// Each call adds the task's environment and files, as for an McpTool.
    #[x_kube(
        validation = Rule::new("has(self.spec)").message("template.spec is required"),
        validation = Rule::new(
            "!has(self.spec) || size(self.spec.containers) == 1 || self.spec.containers.exists(c, c.name == 'server')"
        ).message("a template with more than one container must have one named 'server'"),
        validation = Rule::new(
            "!has(self.spec) || self.spec.containers.all(c, has(c.image) && size(c.image) > 0)"
        ).message("every container in template.spec.containers needs an image"),
        validation = Rule::new(
            "!has(self.spec) || self.spec.containers.exists(c, (size(self.spec.containers) == 1 || c.name == 'server') && has(c.command) && size(c.command) > 0)"
        ).message("the server container must set command: the operator starts it through the bridge")
    )]
    pub template: PodTemplateSpec,

    /// Which of the server's tools to offer, and under which names. Empty: every tool, under
    /// its own name (with namePrefix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub tools: Vec<ServerTool>,

    /// Prepended to the MCP name of every offered tool, such as `time_`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]{0,64}$"))]
    pub name_prefix: Option<String>,

    /// How calls of the offered tools run (see McpTool spec.taskSupport); default optional.
    #[serde(default)]
    pub task_support: TaskSupport,

    /// Task lifetime of the offered tools in milliseconds (see McpTool spec.ttlMs); default
    /// one hour.
    #[serde(default = "default_ttl_ms")]
    #[schemars(range(min = 0))]
    pub ttl_ms: i64,

    /// Run-time limit of each call's Job in seconds (see McpTool spec.activeDeadlineSeconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub active_deadline_seconds: Option<i64>,

    /// How long the server may keep running after a cancel before its pod is deleted, in
    /// seconds; default 30. The bridge sends the server `notifications/cancelled` at once.
    #[serde(default = "default_cancel_grace_period_seconds")]
    #[schemars(range(min = 0, max = 3600))]
    pub cancel_grace_period_seconds: i64,

    /// How long a synchronous call waits for its result, in seconds (1 to 3600; default 60).
    #[serde(default = "default_sync_timeout_seconds")]
    #[schemars(range(min = 1, max = 3600))]
    pub sync_timeout_seconds: i64,

    /// Polling interval suggested to clients for tasks of the offered tools, in milliseconds
    /// (100 to 600000; see McpTool spec.pollIntervalMs); unset: the McpTool default, 2000. A
    /// tool's own `spec.tools[].pollIntervalMs` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 600000))]
    pub poll_interval_ms: Option<i64>,

    /// How long a tools/call of an offered tool that becomes a task waits for the task to
    /// finish before it answers, in milliseconds (0 to 30000; see McpTool
    /// spec.immediateResultMs): a call that completes within it is answered as a plain result.
    /// Unset: 0, the task handle at once. A tool's own `spec.tools[].immediateResultMs` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 30000))]
    pub immediate_result_ms: Option<i64>,

    /// A warm pool for each offered tool (see McpTool spec.warmPool): pods whose server is
    /// started and initialized before any call, each claimed by one call. Each tool gets a
    /// pool of its own; set it on the quick tools only, in `spec.tools[].warmPool`, which wins.
    /// A warm server is initialized before it knows its caller, so it is told of no client
    /// capability (docs/tool-contract.md, "Warm pods").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_pool: Option<crate::WarmPool>,

    /// Limit on the discovery run (initialize and tools/list), in seconds; default 120.
    #[serde(default = "default_discovery_timeout_seconds")]
    #[schemars(range(min = 5, max = 3600))]
    pub discovery_timeout_seconds: i64,
}

/// One tool of the server to offer.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServerTool {
    /// The tool's name on the server.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// Its MCP name here (namePrefix is not added); default the server's name with namePrefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]{1,128}$"))]
    pub mcp_name: Option<String>,
    /// How its calls run; default the server's spec.taskSupport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Its polling interval in milliseconds (100 to 600000); default the server's
    /// spec.pollIntervalMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 600000))]
    pub poll_interval_ms: Option<i64>,
    /// Its wait for an immediate result in milliseconds (0 to 30000); default the server's
    /// spec.immediateResultMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 30000))]
    pub immediate_result_ms: Option<i64>,
    /// Its warm pool; default the server's spec.warmPool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_pool: Option<crate::WarmPool>,
}

/// What the operator last discovered about an `McpServer`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, KubeSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// `Ready` is True once the tools of the current generation are discovered and offered;
    /// False with the reason otherwise: Discovering, InvalidTemplate, BridgeNotConfigured,
    /// TemplateNotAllowed, DiscoveryFailed, DiscoveryJobNotOwned (a Job of the discovery Job's
    /// name is not this server's), TooManyTools or ToolsTooLarge (over the operator's bounds;
    /// not run again until the spec changes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The metadata.generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the tools were last discovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered_at: Option<Time>,
    /// The server's name and version as it reported them (`serverInfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The MCP revision the server answered `initialize` with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// How many tools are offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<i64>,
    /// The offered tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<OfferedTool>,
    /// The server's tools that are not offered, and why (the first 100; the `Ready`
    /// condition's message counts them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedTool>,
}

/// A tool of the server offered as an McpTool.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OfferedTool {
    /// Its name on the server.
    pub name: String,
    /// Its MCP name here.
    pub mcp_name: String,
    /// The McpTool that offers it.
    pub mcp_tool: String,
}

/// A tool of the server that is not offered.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SkippedTool {
    /// Its name on the server.
    pub name: String,
    /// Why it is not offered.
    pub reason: String,
}

fn default_discovery_timeout_seconds() -> i64 {
    DEFAULT_DISCOVERY_TIMEOUT_SECONDS
}

impl McpServer {
    /// The container that runs the server: the one named `server`, or the only one.
    pub fn server_container(&self) -> Option<&Container> {
        let containers = &self.spec.template.spec.as_ref()?.containers;
        match containers.as_slice() {
            [only] => Some(only),
            many => many.iter().find(|c| c.name == SERVER_CONTAINER_NAME),
        }
    }
}

/// The discovered server's answer, as the bridge prints it with `--list`.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// The revision the server answered `initialize` with.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// The server's `serverInfo`.
    #[serde(default)]
    pub server_info: Map<String, Value>,
    /// Every tool of `tools/list`, as the server described it.
    #[serde(default)]
    pub tools: Vec<Map<String, Value>>,
}
