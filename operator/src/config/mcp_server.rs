//! The bounds on what an `McpServer`'s image can make the operator store: how many McpTools
//! one server makes, the bytes of one tool's description and schemas, and the bytes of all its
//! McpTools together. An image lists whatever it likes; these keep the result bounded.

use super::{ConfigError, parse, setting};

/// Most McpTools [`ServerLimits::max_tools`] may allow: a server's status lists each offered
/// tool, and 1024 of them keep it well within the API server's 1.5 MiB request limit.
pub const MAX_TOOLS_CEILING: u64 = 1024;
/// Most bytes [`ServerLimits::max_tool_bytes`] may allow: one McpTool is one etcd object.
pub const MAX_TOOL_BYTES_CEILING: u64 = 1024 * 1024;
/// Most bytes [`ServerLimits::max_bytes`] may allow.
pub const MAX_BYTES_CEILING: u64 = 64 * 1024 * 1024;

/// Bounds on one McpServer's discovered tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most McpTools one server makes (`MCP_OPERATOR_MCP_SERVER_MAX_TOOLS`, default 256, 1 to
    /// 1024). A server offering more (after `spec.tools`) is not Ready, `TooManyTools`, and
    /// none of its tools is offered.
    pub max_tools: usize,
    /// Most bytes of one tool's title, description, schemas and annotations as the McpTool
    /// holds them (`MCP_OPERATOR_MCP_SERVER_MAX_TOOL_BYTES`, default 65536, 1024 to 1 MiB). A
    /// larger tool is left out, with the reason in `status.skipped`.
    pub max_tool_bytes: usize,
    /// Most bytes of all of one server's McpTools, templates included
    /// (`MCP_OPERATOR_MCP_SERVER_MAX_BYTES`, default 2097152, at least the per-tool bound, at
    /// most 64 MiB). A server over it is not Ready, `ToolsTooLarge`, and none of its tools is
    /// offered.
    pub max_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_tools: 256,
            max_tool_bytes: 64 * 1024,
            max_bytes: 2 * 1024 * 1024,
        }
    }
}

impl ServerLimits {
    /// Reads the settings through `lookup` (a variable's value by full name).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let ranged = |suffix: &str, default: usize, min: u64, max: u64, expected| {
            let (name, value) = setting(&lookup, suffix);
            let n: u64 = parse((name.clone(), value), &default.to_string(), expected)?;
            if n < min || n > max {
                return Err(ConfigError {
                    name,
                    value: n.to_string(),
                    expected,
                });
            }
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        };
        let d = Self::default();
        let max_tools = ranged(
            "MCP_SERVER_MAX_TOOLS",
            d.max_tools,
            1,
            MAX_TOOLS_CEILING,
            "a number of tools from 1 to 1024",
        )?;
        let max_tool_bytes = ranged(
            "MCP_SERVER_MAX_TOOL_BYTES",
            d.max_tool_bytes,
            1024,
            MAX_TOOL_BYTES_CEILING,
            "a number of bytes from 1024 to 1048576",
        )?;
        let max_bytes = ranged(
            "MCP_SERVER_MAX_BYTES",
            d.max_bytes,
            max_tool_bytes as u64,
            MAX_BYTES_CEILING,
            "a number of bytes from MCP_OPERATOR_MCP_SERVER_MAX_TOOL_BYTES to 67108864",
        )?;
        Ok(Self {
            max_tools,
            max_tool_bytes,
            max_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(vars: &[(&'static str, &'static str)]) -> Result<ServerLimits, ConfigError> {
        ServerLimits::from_lookup(|n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn defaults_hold_and_values_outside_the_bounds_name_the_variable() {
        assert_eq!(limits(&[]).unwrap(), ServerLimits::default());
        assert_eq!(ServerLimits::default().max_tools, 256);
        let set = limits(&[("MCP_OPERATOR_MCP_SERVER_MAX_TOOLS", "8")]).unwrap();
        assert_eq!(set.max_tools, 8);
        let err = limits(&[("MCP_OPERATOR_MCP_SERVER_MAX_TOOLS", "1025")]).unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_MCP_SERVER_MAX_TOOLS");
        assert!(err.to_string().contains("from 1 to 1024"), "{err}");
        let err = limits(&[("MCP_OPERATOR_MCP_SERVER_MAX_TOOL_BYTES", "100")]).unwrap_err();
        assert!(err.to_string().contains("from 1024"), "{err}");
        // The total holds at least one tool of the largest size.
        let err = limits(&[
            ("MCP_OPERATOR_MCP_SERVER_MAX_TOOL_BYTES", "8192"),
            ("MCP_OPERATOR_MCP_SERVER_MAX_BYTES", "4096"),
        ])
        .unwrap_err();
        assert_eq!(err.name, "MCP_OPERATOR_MCP_SERVER_MAX_BYTES");
        let err = limits(&[("MCP_OPERATOR_MCP_SERVER_MAX_BYTES", "lots")]).unwrap_err();
        assert!(err.to_string().contains("\"lots\""), "{err}");
    }
}
