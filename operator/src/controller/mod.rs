//! The controllers: `McpTask` (task -> Job -> status) and `McpTool` validation.

pub mod mcp_task;
pub mod mcp_tool;

/// Field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "mcp-task-operator";
