//! Validating an `McpTool`: what the CRD schema cannot check, with messages a user can act on.
//!
//! Pure: the tool, the other tools of its namespace and the operator's tool policy in, a
//! [`ValidTool`] or the first [`ToolInvalid`] out, and the `Ready` condition that reports it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_crds::mcp_tool::READY_CONDITION;
use serde_json::Value;

use crate::contract::validate_input_request;
use crate::policy::{PolicyViolation, ToolPolicy, check_template};

/// What validation learnt about a valid tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidTool {
    /// The tool's MCP name.
    pub mcp_name: String,
    /// The tool container's image.
    pub image: String,
}

/// Why a tool is not Ready; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolInvalid {
    /// The MCP name has characters or a length MCP does not allow.
    #[error(
        "MCP name {name:?} is invalid: use 1 to 128 letters, digits, '_', '-' or '.' \
         (set spec.name when metadata.name does not qualify)"
    )]
    InvalidName {
        /// The offending name.
        name: String,
    },
    /// No container in the template runs the tool.
    #[error(
        "spec.template has no tool container: use exactly one container, or name one of them \"tool\""
    )]
    NoToolContainer,
    /// The tool container has no image.
    #[error("tool container {container:?} in spec.template has no image")]
    NoImage {
        /// The container's name.
        container: String,
    },
    /// The pod template asks for something the operator's tool policy does not allow.
    #[error(transparent)]
    TemplateNotAllowed(#[from] PolicyViolation),
    /// A schema does not compile as a JSON Schema.
    #[error("spec.{field} is not a valid JSON Schema: {detail}")]
    InvalidSchema {
        /// `inputSchema` or `outputSchema`.
        field: &'static str,
        /// What the JSON Schema compiler said.
        detail: String,
    },
    /// A schema's root is not `type: object`, as MCP requires.
    #[error("spec.{field} must declare \"type\": \"object\" at its root, as MCP requires")]
    SchemaNotObject {
        /// `inputSchema` or `outputSchema`.
        field: &'static str,
    },
    /// A start input is not a valid MCP input request.
    #[error("spec.startInputs[{key:?}] is not a valid MCP input request: {detail}")]
    InvalidStartInput {
        /// The start input's key.
        key: String,
        /// What is wrong with it.
        detail: String,
    },
    /// Another tool of the namespace already has this MCP name.
    #[error(
        "MCP name {name:?} is already used by McpTool {other:?}, which is older; \
         give this tool another spec.name"
    )]
    DuplicateName {
        /// The contested name.
        name: String,
        /// The tool that keeps it.
        other: String,
    },
}

impl ToolInvalid {
    /// The `Ready=False` condition reason and Event reason (PascalCase).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidName { .. } => "InvalidName",
            Self::NoToolContainer => "NoToolContainer",
            Self::NoImage { .. } => "NoImage",
            Self::TemplateNotAllowed(_) => "TemplateNotAllowed",
            Self::InvalidSchema { .. } => "InvalidSchema",
            Self::SchemaNotObject { .. } => "InvalidSchema",
            Self::InvalidStartInput { .. } => "InvalidStartInput",
            Self::DuplicateName { .. } => "DuplicateName",
        }
    }
}

/// Validates `tool` against the other tools of its namespace (`namespace_tools` may include it)
/// and the operator's tool `policy`.
pub fn validate_tool(
    tool: &McpTool,
    namespace_tools: &[McpTool],
    policy: &ToolPolicy,
) -> Result<ValidTool, ToolInvalid> {
    let mcp_name = tool.mcp_name();
    if !is_valid_mcp_name(&mcp_name) {
        return Err(ToolInvalid::InvalidName { name: mcp_name });
    }
    let container = tool.tool_container().ok_or(ToolInvalid::NoToolContainer)?;
    let image = container
        .image
        .clone()
        .filter(|i| !i.trim().is_empty())
        .ok_or_else(|| ToolInvalid::NoImage {
            container: container.name.clone(),
        })?;
    check_template(&tool.spec.template, policy)?;
    validate_schema(
        "inputSchema",
        &Value::Object(tool.spec.input_schema.clone()),
    )?;
    if let Some(output) = &tool.spec.output_schema {
        validate_schema("outputSchema", &Value::Object(output.clone()))?;
    }
    for (key, input) in tool.spec.start_inputs.iter().flatten() {
        let invalid = |detail: String| ToolInvalid::InvalidStartInput {
            key: key.clone(),
            detail,
        };
        let request = serde_json::to_value(input).map_err(|e| invalid(e.to_string()))?;
        validate_input_request(&request).map_err(|e| invalid(e.to_string()))?;
    }
    if let Some(owner) = name_owner(&mcp_name, namespace_tools)
        && owner.uid() != tool.uid()
    {
        return Err(ToolInvalid::DuplicateName {
            name: mcp_name,
            other: owner.name_any(),
        });
    }
    Ok(ValidTool { mcp_name, image })
}

/// The `Ready` condition for a validation result; keeps `lastTransitionTime` when the status
/// is unchanged from `previous`.
pub fn ready_condition(
    result: &Result<ValidTool, ToolInvalid>,
    generation: Option<i64>,
    previous: Option<&Condition>,
    now: Timestamp,
) -> Condition {
    let (status, reason, message) = match result {
        Ok(valid) => (
            "True",
            "Valid",
            format!("Tool {:?} is offered to MCP clients", valid.mcp_name),
        ),
        Err(invalid) => ("False", invalid.reason(), invalid.to_string()),
    };
    let last_transition_time = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => Time(now),
    };
    Condition {
        type_: READY_CONDITION.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: generation,
        last_transition_time,
    }
}

fn is_valid_mcp_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn validate_schema(field: &'static str, schema: &Value) -> Result<(), ToolInvalid> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ToolInvalid::SchemaNotObject { field });
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| ToolInvalid::InvalidSchema {
            field,
            detail: e.to_string(),
        })
}

/// The tool that keeps `name`: the oldest live one using it (by creation time, then name).
fn name_owner<'a>(name: &str, tools: &'a [McpTool]) -> Option<&'a McpTool> {
    tools
        .iter()
        .filter(|t| t.metadata.deletion_timestamp.is_none() && t.mcp_name() == name)
        .min_by_key(|t| (t.creation_timestamp().map(|c| c.0), t.name_any()))
}

#[cfg(test)]
mod tests;
