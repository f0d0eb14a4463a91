//! mcp-task-operator: reconciles `McpTool` and `McpTask` resources into validated tools and
//! Kubernetes Jobs that run them.
//!
//! The pure core (the tool container contract, Job building, outcome mapping) lives in
//! [`contract`] and [`controller`]; the IO edges talk to the API server.
#![deny(missing_docs)]

pub mod api_count;
pub mod config;
pub mod context;
pub mod contract;
pub mod controller;
pub mod deadline;
pub mod error;
pub mod events;
pub mod fence;
pub mod http;
pub mod leader;
pub mod liveness;
pub mod lock;
pub mod log_clients;
pub mod metrics;
pub mod policy;
pub mod resource_version;
pub mod state;

pub use error::{Error, Result};
pub use lock::lock;

/// The operator's name, defined once: the field manager of its server-side applies, the value
/// of `app.kubernetes.io/managed-by` on what it makes, its default Lease and its service name
/// in traces.
pub const NAME: &str = "mcp-task-operator";
/// Field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = NAME;

#[cfg(test)]
mod fixtures;
