//! The mcp-task-operator API: the `McpTool` and `McpTask` custom resources.
//!
//! This crate holds no client calls and no async runtime: it is the shared vocabulary of the
//! front end, the operator and the tests.
#![deny(missing_docs)]

/// API group of every custom resource in this crate.
pub const GROUP: &str = "mcptasks.io";
/// API version of every custom resource in this crate.
pub const VERSION: &str = "v1alpha1";
