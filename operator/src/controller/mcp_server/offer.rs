//! Which of a server's discovered tools become `McpTool`s, under which names, and the tools
//! themselves: the server's own description, title, schemas and annotations, the server's
//! template run through the bridge, and the server's task settings; within the operator's
//! bounds on what one server makes (`ServerLimits`).

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};
use mcp_task_operator_crds::McpServer;
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_crds::mcp_server::{Discovery, OfferedTool, SkippedTool};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::bridged::{Mode, bridged};
use super::limits::{Refused, json_bytes, skip};
use crate::config::ServerLimits;

/// Label naming the McpServer an McpTool was made from.
pub const SERVER_LABEL: &str = "mcptasks.io/server";
/// Longest object name made (a label value holds 63 characters).
const MAX_NAME: usize = 63;

/// What to offer.
#[derive(Debug, Default)]
pub struct Offer {
    /// The McpTools to apply.
    pub tools: Vec<McpTool>,
    /// What the status lists as offered.
    pub offered: Vec<OfferedTool>,
    /// What is left out, and why.
    pub skipped: Vec<SkippedTool>,
}

/// The McpTools for `discovery` of `server`, with the bridge from `bridge_image`, or why none
/// is offered: a template that cannot be bridged, or more or larger tools than `limits` allow.
pub fn offer(
    server: &McpServer,
    discovery: &Discovery,
    bridge_image: &str,
    limits: &ServerLimits,
) -> Result<Offer, Refused> {
    let spec = &server.spec;
    let mut offer = Offer::default();
    // Tools that would be offered, counted past the limit (their McpTools are not built), and
    // the bytes of the McpTools built.
    let (mut offerable, mut bytes) = (0, 0);
    let wanted: Option<BTreeSet<&str>> =
        (!spec.tools.is_empty()).then(|| spec.tools.iter().map(|t| t.name.as_str()).collect());
    let mut seen = BTreeSet::new();
    for tool in &discovery.tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if !seen.insert(name.to_owned()) {
            offer
                .skipped
                .push(skip(name, "the server lists this name twice"));
            continue;
        }
        if wanted.as_ref().is_some_and(|w| !w.contains(name)) {
            offer.skipped.push(skip(name, "not in spec.tools"));
            continue;
        }
        let chosen = spec.tools.iter().find(|t| t.name == name);
        let mcp_name = match chosen.and_then(|t| t.mcp_name.clone()) {
            Some(n) => n,
            None => format!("{}{name}", spec.name_prefix.as_deref().unwrap_or("")),
        };
        if !is_mcp_name(&mcp_name) {
            offer.skipped.push(skip(name, &format!("`{mcp_name}` cannot be an MCP name here (1 to 128 letters, digits, '_', '-', '.')")));
            continue;
        }
        let input_schema = tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        if input_schema.get("type") != Some(&json!("object")) {
            offer
                .skipped
                .push(skip(name, "its inputSchema is not of type object"));
            continue;
        }
        let task_support = chosen
            .and_then(|t| t.task_support)
            .unwrap_or(spec.task_support);
        let mut tool_spec = json!({
            "name": mcp_name,
            "inputSchema": input_schema,
            "taskSupport": task_support,
            "ttlMs": spec.ttl_ms,
            "cancelGracePeriodSeconds": spec.cancel_grace_period_seconds,
            "syncTimeoutSeconds": spec.sync_timeout_seconds,
            // The server's output reaches the pod's log: only the bridge's signed lines count.
            "messageNonce": true,
        });
        for (key, field) in [
            ("title", "title"),
            ("description", "description"),
            ("outputSchema", "outputSchema"),
        ] {
            if let Some(value) = tool.get(key).filter(|v| !v.is_null()) {
                tool_spec[field] = value.clone();
            }
        }
        if let Some(annotations) = tool.get("annotations").and_then(Value::as_object) {
            tool_spec["annotations"] = Value::Object(known_annotations(annotations));
        }
        if let Some(deadline) = spec.active_deadline_seconds {
            tool_spec["activeDeadlineSeconds"] = json!(deadline);
        }
        // The tool's own timing wins over the server's; unset leaves the McpTool's defaults.
        let poll = chosen
            .and_then(|t| t.poll_interval_ms)
            .or(spec.poll_interval_ms);
        if let Some(poll) = poll {
            tool_spec["pollIntervalMs"] = json!(poll);
        }
        let immediate = chosen
            .and_then(|t| t.immediate_result_ms)
            .or(spec.immediate_result_ms);
        if let Some(immediate) = immediate {
            tool_spec["immediateResultMs"] = json!(immediate);
        }
        let warm = chosen
            .and_then(|t| t.warm_pool.as_ref())
            .or(spec.warm_pool.as_ref());
        if let Some(warm) = warm {
            tool_spec["warmPool"] = json!(warm);
        }
        let tool_bytes = json_bytes(&tool_spec);
        if tool_bytes > limits.max_tool_bytes {
            let reason = format!(
                "its title, description, schemas and annotations are {tool_bytes} bytes, over the \
                 limit of {} (MCP_OPERATOR_MCP_SERVER_MAX_TOOL_BYTES)",
                limits.max_tool_bytes
            );
            offer.skipped.push(skip(name, &reason));
            continue;
        }
        offerable += 1;
        if offerable > limits.max_tools {
            continue;
        }
        let template = bridged(server, bridge_image, Mode::Call(name))?;
        tool_spec["template"] = json!(template);
        let object_name = tool_object_name(&server.name_any(), name);
        let made = json!({
            "apiVersion": McpTool::api_version(&()),
            "kind": McpTool::kind(&()),
            "metadata": {
                "name": object_name,
                "namespace": server.namespace(),
                "labels": { SERVER_LABEL: server.name_any() },
                "ownerReferences": [owner(server)],
            },
            "spec": tool_spec,
        });
        match serde_json::from_value::<McpTool>(made) {
            Ok(made) => {
                bytes += json_bytes(&made);
                offer.offered.push(OfferedTool {
                    name: name.to_owned(),
                    mcp_name,
                    mcp_tool: object_name,
                });
                offer.tools.push(made);
            }
            Err(e) => offer.skipped.push(skip(
                name,
                &format!("its description cannot be an McpTool: {e}"),
            )),
        }
    }
    for wanted in &spec.tools {
        if !seen.contains(&wanted.name) {
            offer.skipped.push(skip(
                &wanted.name,
                "in spec.tools but the server does not list it",
            ));
        }
    }
    if offerable > limits.max_tools {
        return Err(Refused::TooManyTools {
            offered: offerable,
            limit: limits.max_tools,
        });
    }
    if bytes > limits.max_bytes {
        return Err(Refused::ToolsTooLarge {
            offered: offer.offered.len(),
            bytes,
            limit: limits.max_bytes,
        });
    }
    Ok(offer)
}

fn is_mcp_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// The MCP tool annotations an McpTool carries (the rest are dropped).
fn known_annotations(annotations: &Map<String, Value>) -> Map<String, Value> {
    const KNOWN: [&str; 5] = [
        "title",
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    annotations
        .iter()
        .filter(|(k, v)| {
            KNOWN.contains(&k.as_str())
                && (v.is_boolean() || (k.as_str() == "title" && v.is_string()))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `<server>-<tool>` in lowercase letters, digits and dashes; when that is too long or loses
/// too much, the readable part is cut and a hash of the exact names keeps it unique.
pub fn tool_object_name(server: &str, tool: &str) -> String {
    let mut slug = String::new();
    for c in tool.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let plain = format!("{server}-{slug}");
    let exact = slug.replace('-', "") == tool.to_ascii_lowercase().replace(['-', '_', '.'], "")
        && tool
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if plain.len() <= MAX_NAME && exact && !slug.is_empty() {
        return plain;
    }
    let hash = Sha256::digest(format!("{server}/{tool}").as_bytes());
    let hash: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME - hash.len() - 1;
    let mut readable: String = plain.chars().take(keep).collect();
    while readable.ends_with('-') {
        readable.pop();
    }
    format!("{readable}-{hash}")
}

/// A controller owner reference to `server`, so what it owns (its McpTools, its discovery Jobs)
/// goes with it.
pub fn owner(server: &McpServer) -> OwnerReference {
    OwnerReference {
        api_version: McpServer::api_version(&()).into_owned(),
        kind: McpServer::kind(&()).into_owned(),
        name: server.name_any(),
        uid: server.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(extra: Value) -> McpServer {
        let mut spec = json!({"template": {"spec": {"containers": [{"name": "s", "image": "time:1", "command": ["mcp-server-time"]}]}}});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
            "metadata": {"name": "time", "namespace": "tools", "uid": "server-uid"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn discovery(tools: Value) -> Discovery {
        serde_json::from_value(
            json!({"protocolVersion": "2025-11-25", "serverInfo": {"name": "t"}, "tools": tools}),
        )
        .unwrap()
    }

    #[test]
    fn each_tool_keeps_the_servers_own_description_and_runs_through_the_bridge() {
        let found = discovery(json!([{
            "name": "get_current_time", "title": "Current time", "description": "Now, somewhere",
            "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "vendorHint": 3}
        }]));
        let offer = offer(
            &server(json!({"namePrefix": "time_"})),
            &found,
            "bridge:1",
            &ServerLimits::default(),
        )
        .unwrap();
        assert!(offer.skipped.is_empty(), "{:?}", offer.skipped);
        let tool = &offer.tools[0];
        assert!(
            tool.name_any().starts_with("time-get-current-time-"),
            "{}",
            tool.name_any()
        );
        assert_eq!(tool.spec.name.as_deref(), Some("time_get_current_time"));
        assert_eq!(tool.spec.title.as_deref(), Some("Current time"));
        assert_eq!(tool.spec.description.as_deref(), Some("Now, somewhere"));
        assert!(tool.spec.message_nonce);
        assert_eq!(
            tool.spec.annotations.as_ref().unwrap().read_only_hint,
            Some(true)
        );
        assert_eq!(tool.labels()[SERVER_LABEL], "time");
        assert_eq!(tool.owner_references()[0].uid, "server-uid");
        let container = tool.tool_container().unwrap();
        assert_eq!(
            container.env.as_ref().unwrap()[0].value.as_deref(),
            Some("get_current_time")
        );
        assert_eq!(offer.offered[0].mcp_name, "time_get_current_time");
    }

    #[test]
    fn only_listed_tools_are_offered_and_every_left_out_tool_says_why() {
        let found = discovery(json!([
            {"name": "a", "inputSchema": {"type": "object"}},
            {"name": "b", "inputSchema": {"type": "object"}},
            {"name": "bad name!", "inputSchema": {"type": "object"}},
            {"name": "c", "inputSchema": {"type": "array"}},
            {"name": "a", "inputSchema": {"type": "object"}}
        ]));
        let s = server(json!({"tools": [
            {"name": "a", "mcpName": "alpha"}, {"name": "bad name!"}, {"name": "c"}, {"name": "gone"}
        ]}));
        let offer = offer(&s, &found, "bridge:1", &ServerLimits::default()).unwrap();
        let offered: Vec<&str> = offer.offered.iter().map(|o| o.mcp_name.as_str()).collect();
        assert_eq!(offered, ["alpha"]);
        let skipped: Vec<(&str, &str)> = offer
            .skipped
            .iter()
            .map(|s| (s.name.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(skipped[0], ("b", "not in spec.tools"));
        assert!(
            skipped[1]
                .1
                .starts_with("`bad name!` cannot be an MCP name"),
            "{skipped:?}"
        );
        assert_eq!(skipped[2], ("c", "its inputSchema is not of type object"));
        assert_eq!(skipped[3], ("a", "the server lists this name twice"));
        assert_eq!(
            skipped[4],
            ("gone", "in spec.tools but the server does not list it")
        );
    }

    #[test]
    fn timing_comes_from_the_tool_entry_then_the_server_then_the_mcp_tool_defaults() {
        let found = discovery(json!([
            {"name": "fast", "inputSchema": {"type": "object"}},
            {"name": "slow", "inputSchema": {"type": "object"}}
        ]));
        let s = server(json!({
            "pollIntervalMs": 500, "immediateResultMs": 3000,
            "tools": [{"name": "fast", "immediateResultMs": 10000, "pollIntervalMs": 100}, {"name": "slow"}]
        }));
        let offered = offer(&s, &found, "bridge:1", &ServerLimits::default()).unwrap();
        let timing: Vec<(i64, i64)> = offered
            .tools
            .iter()
            .map(|t| (t.spec.poll_interval_ms, t.spec.immediate_result_ms))
            .collect();
        assert_eq!(timing, [(100, 10000), (500, 3000)]);
        let plain = offer(
            &server(json!({})),
            &found,
            "bridge:1",
            &ServerLimits::default(),
        )
        .unwrap();
        assert_eq!(
            (
                plain.tools[0].spec.poll_interval_ms,
                plain.tools[0].spec.immediate_result_ms
            ),
            (2000, 0)
        );
    }

    #[test]
    fn a_warm_pool_comes_from_the_tool_entry_then_the_server() {
        let found = discovery(json!([
            {"name": "quick", "inputSchema": {"type": "object"}},
            {"name": "other", "inputSchema": {"type": "object"}}
        ]));
        let s = server(json!({
            "warmPool": {"minReady": 1, "maxReady": 2},
            "tools": [{"name": "quick", "warmPool": {"minReady": 3, "maxReady": 5}}, {"name": "other"}]
        }));
        let offered = offer(&s, &found, "bridge:1", &ServerLimits::default()).unwrap();
        let pools: Vec<Option<(i64, i64)>> = offered
            .tools
            .iter()
            .map(|t| {
                t.spec
                    .warm_pool
                    .as_ref()
                    .map(|p| (p.min_ready, p.max_ready))
            })
            .collect();
        assert_eq!(pools, [Some((3, 5)), Some((1, 2))]);
        let plain = offer(
            &server(json!({})),
            &found,
            "bridge:1",
            &ServerLimits::default(),
        );
        assert!(
            plain
                .unwrap()
                .tools
                .iter()
                .all(|t| t.spec.warm_pool.is_none())
        );
    }

    #[test]
    fn object_names_are_readable_when_they_can_be_and_unique_always() {
        assert_eq!(
            tool_object_name("everything", "get-sum"),
            "everything-get-sum"
        );
        let snake = tool_object_name("time", "get_current_time");
        assert!(
            snake.starts_with("time-get-current-time-") && snake.len() == 30,
            "{snake}"
        );
        assert_ne!(tool_object_name("s", "a_b"), tool_object_name("s", "a-b"));
        let long = tool_object_name("everything", &"x".repeat(100));
        assert_eq!(long.len(), 63);
        assert!(
            tool_object_name("s", "Über")
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}
