//! `spec.warmPool` of an `McpTool`: pods started before any call, each claimed by one task.
//!
//! A warm pod runs the tool's template with its command behind the launcher (`mcp-bridge
//! --launch`, or `--warm` for a bridged server), which waits, holding no task data, until the
//! operator claims it for exactly one task over a channel only the operator can use; then the
//! tool runs as in a pod made for that task, and the pod is never used again
//! (docs/tool-contract.md, "Warm pods").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Label on a warm Job and its pod: the name of the `McpTool` whose pool it is in. It stays
/// on a claimed Job (the claim changes the Job's owner, not this label).
pub const WARM_POOL_LABEL: &str = "mcptasks.io/warm-pool";
/// Largest `minReady` and `maxReady`.
pub const MAX_WARM_PODS: i64 = 50;
/// Default `idleSeconds`: a waiting pod is replaced after ten minutes.
pub const DEFAULT_WARM_IDLE_SECONDS: i64 = 600;

/// How many pods of a tool wait, started, for a call.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.minReady <= self.maxReady",
    "message": "warmPool.minReady may not exceed warmPool.maxReady"
}]))]
pub struct WarmPool {
    /// Fewest pods kept waiting (0 to 50, default 1). The pool grows above it, up to
    /// maxReady, with the calls of the last minute (one waiting pod per ten calls a minute).
    #[serde(default = "default_min_ready")]
    #[schemars(range(min = 0, max = 50))]
    pub min_ready: i64,
    /// Most pods kept waiting (1 to 50, default 1). Waiting pods count against the tool's
    /// maxConcurrentTasks (and, as Jobs like any other, its Kueue queue's quota): a pool never
    /// holds a slot a call could use.
    #[serde(default = "default_max_ready")]
    #[schemars(range(min = 1, max = 50))]
    pub max_ready: i64,
    /// How long a pod waits for a call before it is replaced, in seconds (10 to 86400, default
    /// 600): a template or image change reaches the pool within this, and a pool the calls no
    /// longer need shrinks to minReady.
    #[serde(default = "default_idle_seconds")]
    #[schemars(range(min = 10, max = 86400))]
    pub idle_seconds: i64,
    /// For a bridged MCP server that keeps state in its process (a browser session, an open
    /// database, a loaded model): `perCaller` keeps a caller's pod after its call, and that
    /// caller's next call to the server (any of its tools) runs in the same server process,
    /// one call at a time; a pod is never shared between callers (spec.owner), and it ends
    /// after idleSeconds without a call. Unset: each pod serves one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<Reuse>,
}

/// How a warm pod may serve more than one call.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Reuse {
    /// One caller's calls, one at a time, in the same server process.
    PerCaller,
}

impl Default for WarmPool {
    fn default() -> Self {
        Self {
            min_ready: default_min_ready(),
            max_ready: default_max_ready(),
            idle_seconds: default_idle_seconds(),
            reuse: None,
        }
    }
}

fn default_min_ready() -> i64 {
    1
}

fn default_max_ready() -> i64 {
    1
}

fn default_idle_seconds() -> i64 {
    DEFAULT_WARM_IDLE_SECONDS
}
