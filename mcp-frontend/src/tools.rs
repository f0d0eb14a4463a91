//! The tools the front end serves: each Ready `McpTool` turned into an MCP `Tool`, with its
//! compiled argument validator and call settings.
//!
//! [`ToolCatalog`] is the trait the handler reads; [`CatalogSnapshot`] is the immutable value a
//! watch publishes after every change, so `tools/list` never waits on a lock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use mcp_task_operator_crds::mcp_tool::{
    MAX_IMMEDIATE_RESULT_MS, MAX_POLL_INTERVAL_MS, MIN_POLL_INTERVAL_MS,
};
use mcp_task_operator_crds::{McpTool, StartInput, TaskSupport};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

/// A tool as served: what `tools/list` shows plus how its calls run.
#[derive(Debug)]
pub struct ToolEntry {
    /// The MCP tool, schemas exactly as written in the `McpTool`.
    pub tool: Tool,
    /// The `McpTool`'s object name (`metadata.name`), which RBAC rules name in
    /// `resourceNames` (see [`crate::authz`]); the MCP name may differ (`spec.name`).
    pub object_name: String,
    /// The `McpTool`'s `metadata.uid`: a task records the object its call was authorized on
    /// (`McpTask.spec.toolUid`), and the operator runs that object only.
    pub uid: Option<String>,
    /// The `McpTool`'s `metadata.generation` as served (`McpTask.spec.toolGeneration`).
    pub generation: Option<i64>,
    /// Whether calls become tasks.
    pub task_support: TaskSupport,
    /// How long a synchronous call waits for its task.
    pub sync_timeout: Duration,
    /// `ttlMs` of new tasks; `None` is unlimited.
    pub ttl_ms: Option<i64>,
    /// `pollIntervalMs` of new tasks, within the bounds of `McpTool.spec.pollIntervalMs`.
    pub poll_interval_ms: i64,
    /// How long a call that becomes a task waits for it to finish before answering with the
    /// handle (`spec.immediateResultMs`); zero answers with the handle at once.
    pub immediate_result: Duration,
    /// Questions asked before a task is created, by key.
    pub start_inputs: BTreeMap<String, StartInput>,
    /// Whether the input schema maps an argument to a header (`x-mcp-header`, SEP-2243), which
    /// rmcp checks against `Mcp-Param-*` headers: such calls take the full path.
    pub maps_headers: bool,
    validator: jsonschema::Validator,
}

/// Why an `McpTool` cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The input schema does not compile.
    #[error("inputSchema of tool {tool} is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The MCP tool name.
        tool: String,
        /// The compiler's complaint.
        reason: String,
    },
}

/// Whether `schema` has an `x-mcp-header` key anywhere.
fn maps_headers(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| key == "x-mcp-header" || maps_headers(value)),
        Value::Array(items) => items.iter().any(maps_headers),
        _ => false,
    }
}

impl ToolEntry {
    /// Builds the served form of `mcp_tool`, compiling its input schema once.
    pub fn new(mcp_tool: &McpTool) -> Result<Self, ToolError> {
        let spec = &mcp_tool.spec;
        let name = mcp_tool.mcp_name();
        let input_schema = Value::Object(spec.input_schema.clone());
        // NB: built without remote resolution (default features off), so a `$ref` to a URL
        // fails here instead of making the front end fetch it.
        let validator =
            jsonschema::validator_for(&input_schema).map_err(|e| ToolError::InvalidSchema {
                tool: name.clone(),
                reason: e.to_string(),
            })?;
        let mut tool = Tool::default();
        tool.name = name.into();
        tool.title = spec.title.clone();
        tool.description = spec.description.clone().map(Into::into);
        tool.input_schema = Arc::new(spec.input_schema.clone());
        tool.output_schema = spec.output_schema.clone().map(Arc::new);
        tool.annotations = spec.annotations.as_ref().map(|a| {
            let mut out = ToolAnnotations::default();
            out.title = a.title.clone();
            out.read_only_hint = a.read_only_hint;
            out.destructive_hint = a.destructive_hint;
            out.idempotent_hint = a.idempotent_hint;
            out.open_world_hint = a.open_world_hint;
            out
        });
        Ok(Self {
            tool,
            object_name: mcp_tool.name_any(),
            uid: mcp_tool.metadata.uid.clone(),
            generation: mcp_tool.metadata.generation,
            task_support: spec.task_support,
            sync_timeout: Duration::from_secs(spec.sync_timeout_seconds.max(1).unsigned_abs()),
            ttl_ms: mcp_tool.task_ttl_ms(),
            // Objects stored before the schema bounded these keep working, within the bounds.
            poll_interval_ms: spec
                .poll_interval_ms
                .clamp(MIN_POLL_INTERVAL_MS, MAX_POLL_INTERVAL_MS),
            immediate_result: Duration::from_millis(
                spec.immediate_result_ms
                    .clamp(0, MAX_IMMEDIATE_RESULT_MS)
                    .unsigned_abs(),
            ),
            start_inputs: spec.start_inputs.clone().unwrap_or_default(),
            maps_headers: maps_headers(&input_schema),
            validator,
        })
    }

    /// The MCP name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// Checks `arguments` against the input schema; the error says which argument is wrong
    /// and why (every violation, joined).
    pub fn validate_arguments(&self, arguments: &JsonObject) -> Result<(), String> {
        let instance = Value::Object(arguments.clone());
        let problems: Vec<String> = self
            .validator
            .iter_errors(&instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "arguments".to_owned()
                } else {
                    format!("arguments{path}")
                };
                format!("{at}: {e}")
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// An immutable set of served tools, sorted by MCP name.
#[derive(Debug, Default)]
pub struct CatalogSnapshot {
    tools: BTreeMap<String, Arc<ToolEntry>>,
}

impl CatalogSnapshot {
    /// Builds a snapshot from `McpTool`s: only Ready ones; a tool whose schema does not
    /// compile is logged and left out.
    pub fn from_tools<'a>(tools: impl IntoIterator<Item = &'a McpTool>) -> Self {
        let mut out = BTreeMap::new();
        for mcp_tool in tools.into_iter().filter(|t| t.is_ready()) {
            match ToolEntry::new(mcp_tool) {
                Ok(entry) => {
                    out.insert(entry.name().to_owned(), Arc::new(entry));
                }
                Err(error) => tracing::warn!(error = %error, "skipping tool"),
            }
        }
        Self { tools: out }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.tools.get(name).cloned()
    }

    /// All tools, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.tools.values()
    }
}

/// Read access to the served tools.
pub trait ToolCatalog: Send + Sync + 'static {
    /// The current snapshot.
    fn snapshot(&self) -> Arc<CatalogSnapshot>;
    /// Whether the watch behind the catalog has completed its initial list.
    fn is_synced(&self) -> bool;
    /// A receiver marked changed whenever the `tools/list` answer changes, for
    /// `notifications/tools/list_changed`. The default never changes (its sender is gone).
    fn list_changes(&self) -> tokio::sync::watch::Receiver<()> {
        tokio::sync::watch::channel(()).1
    }
}

impl CatalogSnapshot {
    /// Whether `other` would give the same `tools/list` answer.
    pub fn lists_like(&self, other: &Self) -> bool {
        self.iter()
            .map(|e| &e.tool)
            .eq(other.iter().map(|e| &e.tool))
    }
}

/// A catalog that never changes; for tests and for a front end without a cluster.
#[derive(Debug, Default)]
pub struct StaticCatalog(pub Arc<CatalogSnapshot>);

impl ToolCatalog for StaticCatalog {
    fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.0.clone()
    }

    fn is_synced(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, ready: bool, schema: Value) -> McpTool {
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTool",
            "metadata": {"name": name},
            "spec": {"inputSchema": schema, "template": {"spec": {"containers": [{"name": "tool", "image": "x"}]}}},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap()
    }

    #[test]
    fn snapshot_keeps_ready_tools_with_compiling_schemas_sorted_by_name() {
        let tools = [
            tool("zeta", true, json!({"type": "object"})),
            tool("alpha", true, json!({"type": "object"})),
            tool("not-ready", false, json!({"type": "object"})),
            tool(
                "broken",
                true,
                json!({"type": "object", "properties": {"a": {"type": 7}}}),
            ),
        ];
        let snapshot = CatalogSnapshot::from_tools(tools.iter());
        let names: Vec<&str> = snapshot.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
    }

    #[test]
    fn lists_like_compares_only_what_tools_list_shows() {
        let object = || json!({"type": "object"});
        let one = CatalogSnapshot::from_tools([&tool("a", true, object())]);
        let with_unready =
            CatalogSnapshot::from_tools([&tool("a", true, object()), &tool("b", false, object())]);
        assert!(one.lists_like(&with_unready));
        let new_schema = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        assert!(!one.lists_like(&CatalogSnapshot::from_tools([&tool("a", true, new_schema)])));
        assert!(!one.lists_like(&CatalogSnapshot::from_tools([
            &tool("a", true, object()),
            &tool("b", true, object()),
        ])));
    }

    #[test]
    fn validation_names_every_wrong_argument() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
            "required": ["n"], "additionalProperties": false});
        let entry = ToolEntry::new(&tool("t", true, schema)).unwrap();
        let args = json!({"s": 1, "extra": true});
        let reason = entry
            .validate_arguments(args.as_object().unwrap())
            .unwrap_err();
        assert!(reason.contains("arguments/s"), "{reason}");
        assert!(reason.contains("\"n\" is a required property"), "{reason}");
        assert!(reason.contains("extra"), "{reason}");
        assert!(
            entry
                .validate_arguments(json!({"n": 1}).as_object().unwrap())
                .is_ok()
        );
    }
}
