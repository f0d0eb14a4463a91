//! Which McpTool a task runs: the object its call was authorized on (`spec.toolUid`, at
//! `spec.toolGeneration`), never another that answers to the same MCP name by the time the
//! Job is created (a duplicate, a tool deleted and re-created, a spec edited since the call).
//! Tasks of earlier front ends, without these fields, run whichever tool answers.

use kube::ResourceExt;
use mcp_task_operator_crds::{McpTask, McpTool};

/// What changed in `tool` since `task`'s call was authorized on it, in one sentence for the
/// task's error: another object (UID), or another spec (generation). `None` when `tool` is the
/// object and generation the task recorded, or the task recorded neither.
pub fn tool_changed(task: &McpTask, tool: &McpTool) -> Option<String> {
    let name = tool.name_any();
    if let Some(authorized) = task.spec.tool_uid.as_deref() {
        let uid = tool.uid();
        if uid.as_deref() != Some(authorized) {
            return Some(format!(
                "McpTool {name} answering to {} has UID {}, not the UID {authorized} the call \
                 was authorized on: it was deleted and re-created, or is another object",
                task.spec.tool,
                uid.as_deref().unwrap_or("(none)"),
            ));
        }
    }
    if let Some(authorized) = task.spec.tool_generation {
        let generation = tool.metadata.generation;
        if generation != Some(authorized) {
            return Some(format!(
                "McpTool {name} is at generation {}, not the generation {authorized} the call \
                 was authorized on: its spec changed since",
                generation.map_or_else(|| "(none)".to_owned(), |g| g.to_string()),
            ));
        }
    }
    None
}

/// Whether `tool` is the object `task`'s call was authorized on (any tool, for a task that
/// recorded none): [`super::apply::find_tool`] prefers it among tools of the same MCP name.
pub fn is_authorized(task: &McpTask, tool: &McpTool) -> bool {
    task.spec
        .tool_uid
        .as_deref()
        .is_none_or(|authorized| tool.uid().as_deref() == Some(authorized))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(uid: Option<&str>, generation: Option<i64>) -> McpTask {
        serde_json::from_value(json!({
            "metadata": {"name": "t", "namespace": "tools"},
            "spec": {"tool": "echo", "owner": "o", "toolUid": uid, "toolGeneration": generation},
        }))
        .expect("an McpTask")
    }

    fn tool(uid: &str, generation: i64) -> McpTool {
        serde_json::from_value(json!({
            "metadata": {"name": "echo-v2", "namespace": "tools", "uid": uid,
                         "generation": generation},
            "spec": {"name": "echo", "inputSchema": {"type": "object"},
                     "template": {"spec": {"containers": [{"name": "tool", "image": "x"}]}}},
        }))
        .expect("an McpTool")
    }

    #[test]
    fn the_authorized_object_at_its_generation_has_not_changed() {
        assert_eq!(
            tool_changed(&task(Some("u1"), Some(2)), &tool("u1", 2)),
            None
        );
        assert!(is_authorized(&task(Some("u1"), Some(2)), &tool("u1", 2)));
    }

    #[test]
    fn another_object_of_the_same_mcp_name_is_a_change_of_uid() {
        let changed = tool_changed(&task(Some("u1"), Some(1)), &tool("u2", 1)).expect("changed");
        assert!(changed.contains("has UID u2, not the UID u1"), "{changed}");
        assert!(
            changed.contains("McpTool echo-v2 answering to echo"),
            "{changed}"
        );
        assert!(!is_authorized(&task(Some("u1"), None), &tool("u2", 1)));
    }

    #[test]
    fn the_same_object_with_an_edited_spec_is_a_change_of_generation() {
        let changed = tool_changed(&task(Some("u1"), Some(1)), &tool("u1", 2)).expect("changed");
        assert!(
            changed.contains("generation 2, not the generation 1"),
            "{changed}"
        );
    }

    #[test]
    fn a_task_of_an_earlier_front_end_runs_whichever_tool_answers() {
        assert_eq!(tool_changed(&task(None, None), &tool("u2", 7)), None);
        assert!(is_authorized(&task(None, None), &tool("u2", 7)));
    }
}
