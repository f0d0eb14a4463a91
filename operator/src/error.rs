//! The operator's error type: each variant names the operation that failed.
//!
//! [`Error::category`] maps every variant to a fixed, low-cardinality label for the
//! `failures{category}` metric and for Warning Event reasons.

use crate::controller::mcp_task::build::BuildError;

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The task's Job could not be built (a tool problem the tool's Ready condition reports).
    #[error("failed to build the Job of task {task}")]
    BuildJob {
        /// The task's name.
        task: String,
        /// Why.
        #[source]
        source: BuildError,
    },
    /// A Kubernetes API call failed.
    #[error("failed to {op} {kind} {name}")]
    Kube {
        /// What was attempted.
        op: KubeOp,
        /// The kind of object (`Job`, `Pod`, `McpTask`...), `McpTask status` for status writes.
        kind: &'static str,
        /// The object's name (or namespace, for lists).
        name: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// An object lacks a field the API server always sets (it was never stored).
    #[error("{kind} has no {field}")]
    MissingField {
        /// The kind of object.
        kind: &'static str,
        /// The missing field.
        field: &'static str,
    },
}

impl Error {
    /// A fixed label for metrics and Event reasons; never derived from `Debug` output.
    pub fn category(&self) -> &'static str {
        match self {
            Self::BuildJob { .. } => "build_job",
            Self::Kube { op, .. } => op.category(),
            Self::MissingField { .. } => "missing_field",
        }
    }

    /// Shorthand for an [`Error::Kube`] variant.
    pub fn kube(
        op: KubeOp,
        kind: &'static str,
        name: impl Into<String>,
        source: kube::Error,
    ) -> Self {
        Self::Kube {
            op,
            kind,
            name: name.into(),
            source,
        }
    }
}

/// A Kubernetes API operation, as named in error messages and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeOp {
    /// Read one object.
    Get,
    /// List objects.
    List,
    /// Server-side apply an object.
    Apply,
    /// Create an object.
    Create,
    /// Patch an object (or its status).
    Patch,
    /// Delete an object.
    Delete,
    /// Read a pod's logs.
    ReadLogs,
}

impl KubeOp {
    fn category(self) -> &'static str {
        match self {
            Self::Get => "kube_get",
            Self::List => "kube_list",
            Self::Apply => "kube_apply",
            Self::Create => "kube_create",
            Self::Patch => "kube_patch",
            Self::Delete => "kube_delete",
            Self::ReadLogs => "kube_logs",
        }
    }
}

impl std::fmt::Display for KubeOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Apply => "apply",
            Self::Create => "create",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::ReadLogs => "read the logs of",
        })
    }
}

/// The operator's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_operation_and_categories_are_fixed() {
        let err = Error::MissingField {
            kind: "McpTask",
            field: "metadata.namespace",
        };
        assert_eq!(err.to_string(), "McpTask has no metadata.namespace");
        assert_eq!(err.category(), "missing_field");
        let err = Error::BuildJob {
            task: "t".into(),
            source: BuildError::NoToolContainer { tool: "x".into() },
        };
        assert_eq!(err.to_string(), "failed to build the Job of task t");
        assert_eq!(err.category(), "build_job");
    }

    #[test]
    fn kube_errors_are_categorised_by_operation() {
        let api = |op| Error::kube(op, "Pod", "p", kube::Error::LinesCodecMaxLineLengthExceeded);
        assert_eq!(api(KubeOp::Apply).to_string(), "failed to apply Pod p");
        assert_eq!(api(KubeOp::Apply).category(), "kube_apply");
        assert_eq!(
            api(KubeOp::ReadLogs).to_string(),
            "failed to read the logs of Pod p"
        );
        assert_eq!(api(KubeOp::ReadLogs).category(), "kube_logs");
    }
}
