//! What a server's image can make the operator do, bounded: the discoveries refused as a whole
//! (too many tools, too many bytes), the size of one tool, and a status that stays small
//! whatever the server lists (`ServerLimits`, operator/README.md).

use std::io;

use mcp_task_operator_crds::mcp_server::SkippedTool;
use serde::Serialize;

use super::bridged::TemplateError;

/// Most left-out tools the status lists (the condition's message counts them all).
pub const MAX_SKIPPED_IN_STATUS: usize = 100;
/// Longest tool name a `status.skipped` entry keeps, in characters.
const MAX_SKIPPED_NAME_CHARS: usize = 128;
/// Longest reason a `status.skipped` entry keeps, in characters.
const MAX_SKIPPED_REASON_CHARS: usize = 256;
/// Longest `status.serverVersion` and `status.protocolVersion`, in characters: the server
/// chooses them.
const MAX_INFO_CHARS: usize = 256;

/// Why none of a server's tools is offered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The server's template cannot be bridged.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// More tools to offer than `MCP_OPERATOR_MCP_SERVER_MAX_TOOLS`.
    #[error(
        "the server offers {offered} tools, over the limit of {limit} \
         (MCP_OPERATOR_MCP_SERVER_MAX_TOOLS): choose at most {limit} in spec.tools"
    )]
    TooManyTools {
        /// Tools the server would offer.
        offered: usize,
        /// The operator's limit.
        limit: usize,
    },
    /// The McpTools together would be larger than `MCP_OPERATOR_MCP_SERVER_MAX_BYTES`.
    #[error(
        "the server's {offered} McpTools would hold {bytes} bytes, over the limit of {limit} \
         bytes (MCP_OPERATOR_MCP_SERVER_MAX_BYTES): choose fewer tools in spec.tools"
    )]
    ToolsTooLarge {
        /// Tools the server would offer.
        offered: usize,
        /// Their McpTools' bytes.
        bytes: usize,
        /// The operator's limit.
        limit: usize,
    },
}

impl Refused {
    /// The `Ready` condition's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Template(_) => INVALID_TEMPLATE,
            Self::TooManyTools { .. } => TOO_MANY_TOOLS,
            Self::ToolsTooLarge { .. } => TOOLS_TOO_LARGE,
        }
    }
}

/// `Ready` reason of a server whose template cannot be bridged.
pub const INVALID_TEMPLATE: &str = "InvalidTemplate";
/// `Ready` reason of a server offering more tools than the operator allows.
pub const TOO_MANY_TOOLS: &str = "TooManyTools";
/// `Ready` reason of a server whose McpTools would be larger than the operator allows.
pub const TOOLS_TOO_LARGE: &str = "ToolsTooLarge";

/// Whether a `Ready` reason settles the generation: the discovery is not run again until the
/// spec changes (the same image and template would list the same tools).
pub fn is_settled_refusal(reason: &str) -> bool {
    [TOO_MANY_TOOLS, TOOLS_TOO_LARGE, INVALID_TEMPLATE].contains(&reason)
}

/// A left-out tool, its name and reason cut to what a status entry keeps.
pub fn skip(name: &str, reason: &str) -> SkippedTool {
    SkippedTool {
        name: name.chars().take(MAX_SKIPPED_NAME_CHARS).collect(),
        reason: reason.chars().take(MAX_SKIPPED_REASON_CHARS).collect(),
    }
}

/// `text` the server chose, cut to what the status keeps of it.
pub fn server_text(text: &str) -> String {
    text.chars().take(MAX_INFO_CHARS).collect()
}

/// The first [`MAX_SKIPPED_IN_STATUS`] of `skipped`, and the condition's message.
pub fn summarize(offered: usize, mut skipped: Vec<SkippedTool>) -> (Vec<SkippedTool>, String) {
    let total = skipped.len();
    let mut message = format!("{offered} tools offered, {total} left out");
    if total > MAX_SKIPPED_IN_STATUS {
        skipped.truncate(MAX_SKIPPED_IN_STATUS);
        message.push_str(&format!(
            " (the first {MAX_SKIPPED_IN_STATUS} in status.skipped)"
        ));
    }
    (skipped, message)
}

/// Bytes of `value` as JSON, as the API server stores it (without building the text).
pub fn json_bytes(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // NB: writing to a counter cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use k8s_openapi::jiff::Timestamp;
    use mcp_task_operator_crds::mcp_server::{McpServerStatus, OfferedTool};

    use mcp_task_operator_crds::McpServer;
    use mcp_task_operator_crds::mcp_server::Discovery;
    use serde_json::json;

    use super::super::offer::offer;
    use super::*;
    use crate::config::{MAX_TOOLS_CEILING, ServerLimits};

    #[test]
    fn the_status_stays_small_whatever_the_server_lists() {
        // The worst case: the most tools the operator may allow, with the longest names each
        // field admits: 256 named in spec.tools (up to 256 characters, of 4 bytes each), the
        // others under their own names (an MCP name: at most 128 ASCII characters, prefix
        // included); 20,000 left-out tools with long names and reasons; the longest texts.
        let long = "\u{10348}".repeat(10_000);
        let offered = (0..MAX_TOOLS_CEILING)
            .map(|i| OfferedTool {
                name: if i < 256 {
                    long.chars().take(256).collect()
                } else {
                    format!("{i:0>128}")
                },
                mcp_name: format!("{i:0>128}"),
                mcp_tool: format!("{i:0>63}"),
            })
            .collect();
        let skipped = (0..20_000).map(|_| skip(&long, &long)).collect();
        let (skipped, message) = summarize(1024, skipped);
        assert!(message.ends_with("20000 left out (the first 100 in status.skipped)"));
        let status = McpServerStatus {
            conditions: vec![Condition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: "Discovered".into(),
                message: long.chars().take(1024).collect(),
                last_transition_time: Time(Timestamp::now()),
                observed_generation: Some(i64::MAX),
            }],
            observed_generation: Some(i64::MAX),
            server_version: Some(server_text(&long)),
            protocol_version: Some(server_text(&long)),
            tool_count: Some(1024),
            tools: offered,
            skipped,
            ..McpServerStatus::default()
        };
        let bytes = json_bytes(&status);
        // The API server takes requests of up to 1.5 MiB (etcd's default limit).
        assert!(bytes < 1024 * 1024, "{bytes} bytes");
        println!("largest status: {bytes} bytes");
    }

    fn server(spec: serde_json::Value) -> McpServer {
        let mut full = json!({"template": {"spec": {"containers": [{"name": "s", "image": "s:1", "command": ["serve"]}]}}});
        if let (Some(full), Some(spec)) = (full.as_object_mut(), spec.as_object()) {
            full.extend(spec.clone());
        }
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
            "metadata": {"name": "srv", "namespace": "tools", "uid": "server-uid"},
            "spec": full,
        }))
        .unwrap()
    }

    /// A discovery of `count` tools whose descriptions are `bytes` long.
    fn listing(count: usize, bytes: usize) -> Discovery {
        let tools: Vec<_> = (0..count)
            .map(|i| json!({"name": format!("t{i}"), "description": "d".repeat(bytes), "inputSchema": {"type": "object"}}))
            .collect();
        serde_json::from_value(json!({"tools": tools})).unwrap()
    }

    fn limits(max_tools: usize, max_tool_bytes: usize, max_bytes: usize) -> ServerLimits {
        ServerLimits {
            max_tools,
            max_tool_bytes,
            max_bytes,
        }
    }

    #[test]
    fn more_tools_than_the_limit_offer_none_and_are_all_counted() {
        let refused = offer(
            &server(json!({})),
            &listing(2002, 0),
            "b:1",
            &limits(256, 65536, 1 << 26),
        );
        assert_eq!(
            refused.unwrap_err(),
            Refused::TooManyTools {
                offered: 2002,
                limit: 256
            }
        );
        // The limit counts what would be offered: spec.tools may pick a few of many.
        let picked = json!({"tools": [{"name": "t7"}, {"name": "t1999"}]});
        let offered = offer(
            &server(picked),
            &listing(2002, 0),
            "b:1",
            &limits(256, 65536, 1 << 26),
        )
        .unwrap();
        assert_eq!(offered.tools.len(), 2);
        let (skipped, message) = summarize(offered.offered.len(), offered.skipped);
        assert_eq!(skipped.len(), MAX_SKIPPED_IN_STATUS);
        assert_eq!(
            message,
            "2 tools offered, 2000 left out (the first 100 in status.skipped)"
        );
    }

    #[test]
    fn a_tool_over_its_size_is_left_out_and_a_server_over_its_total_offers_none() {
        let mut found = listing(2, 100);
        found.tools.push(listing(1, 5000).tools.remove(0));
        found.tools[2]["name"] = json!("big");
        let offered = offer(
            &server(json!({})),
            &found,
            "b:1",
            &limits(256, 4096, 1 << 20),
        )
        .unwrap();
        assert_eq!(offered.tools.len(), 2);
        assert_eq!(offered.skipped[0].name, "big");
        assert!(
            offered.skipped[0].reason.contains("are 5")
                && offered.skipped[0].reason.ends_with(
                    "bytes, over the limit of 4096 (MCP_OPERATOR_MCP_SERVER_MAX_TOOL_BYTES)"
                ),
            "{}",
            offered.skipped[0].reason
        );
        // Each of 60 tools fits; together, with their templates, they do not.
        let refused = offer(
            &server(json!({})),
            &listing(60, 3000),
            "b:1",
            &limits(256, 4096, 128 * 1024),
        );
        match refused {
            Err(Refused::ToolsTooLarge {
                offered: 60,
                bytes,
                limit: 131_072,
            }) => assert!(bytes > 60 * 3000, "{bytes}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refusals_name_the_count_and_the_limit() {
        let many = Refused::TooManyTools {
            offered: 2002,
            limit: 256,
        };
        assert_eq!(many.reason(), "TooManyTools");
        assert!(many.to_string().starts_with(
            "the server offers 2002 tools, over the limit of 256 (MCP_OPERATOR_MCP_SERVER_MAX_TOOLS)"
        ));
        let large = Refused::ToolsTooLarge {
            offered: 60,
            bytes: 2_500_000,
            limit: 2_097_152,
        };
        assert_eq!(large.reason(), "ToolsTooLarge");
        assert!(large.to_string().contains("limit of 2097152 bytes"));
        assert!(is_settled_refusal(large.reason()) && is_settled_refusal(many.reason()));
        assert!(!is_settled_refusal("DiscoveryFailed"));
        assert_eq!(json_bytes(&serde_json::json!({"a": [1, "é"]})), 14);
    }
}
