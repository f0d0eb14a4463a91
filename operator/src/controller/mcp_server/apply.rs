//! The server's McpTools written, and only the server's. An McpTool of the same name that the
//! server does not control (its controller owner reference, by UID) is left alone and reported
//! in `status.skipped`. A name taken between the listing and the write is not taken over
//! either: an update names the UID it expects, and a create is not forced, so the fields of
//! someone else's McpTool conflict with the server's. Only the server's own McpTools are deleted.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use mcp_task_operator_crds::McpTool;
use mcp_task_operator_crds::mcp_server::McpServerStatus;

use super::limits::skip;
use super::offer::{Offer, SERVER_LABEL, tool_object_name};
use crate::FIELD_MANAGER;
use crate::error::{Error, KubeOp, Result};

/// Whether `owners` name the object of `uid` as the controller.
pub fn controlled_by(owners: &[OwnerReference], uid: &str) -> bool {
    owners
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// The reason a tool is left out when its McpTool's name is taken.
pub fn not_owned(kind: &str, name: &str) -> String {
    format!("{kind} {name} exists and is not owned by this server")
}

/// The McpTool names that `status` reports as taken by McpTools the server `server` does not
/// control.
pub fn blocked_names(server: &str, status: &McpServerStatus) -> BTreeSet<String> {
    status
        .skipped
        .iter()
        .map(|s| tool_object_name(server, &s.name))
        .filter(|object| {
            let reason = not_owned("McpTool", object);
            status.skipped.iter().any(|s| s.reason == reason)
        })
        .collect()
}

/// The names of the namespace's McpTools that the server (named `name`, of UID `uid`) does not
/// control.
pub async fn taken_by_others(
    api: &Api<McpTool>,
    name: &str,
    uid: &str,
) -> Result<BTreeSet<String>> {
    let listed = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| Error::kube(KubeOp::List, "McpTool", name, e))?;
    Ok(listed
        .items
        .iter()
        .filter(|m| !controlled_by(m.owner_references(), uid))
        .map(ResourceExt::name_any)
        .collect())
}

/// The namespace's McpTools by name: `Some(uid)` for those the server controls, `None` for
/// the others.
pub type Existing = BTreeMap<String, Option<String>>;

/// Moves the tools of `offer` whose McpTool name is taken by an object the server does not
/// control into `offer.skipped`.
pub fn leave_foreign(offer: &mut Offer, existing: &Existing) {
    let mut index = 0;
    while index < offer.tools.len() {
        let name = offer.tools[index].name_any();
        if matches!(existing.get(&name), Some(None)) {
            offer.tools.remove(index);
            let tool = offer.offered.remove(index);
            offer
                .skipped
                .push(skip(&tool.name, &not_owned("McpTool", &name)));
        } else {
            index += 1;
        }
    }
}

/// Applies the server's McpTools (`server` named `name`, of UID `uid`), leaving out those
/// whose names are taken, and deletes its McpTools no longer offered.
pub async fn apply_tools(
    api: &Api<McpTool>,
    name: &str,
    uid: &str,
    offer: &mut Offer,
) -> Result<()> {
    let listed = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| Error::kube(KubeOp::List, "McpTool", name, e))?;
    let existing: Existing = listed
        .items
        .iter()
        .map(|m| {
            let ours = controlled_by(m.owner_references(), uid);
            (m.name_any(), ours.then(|| m.uid().unwrap_or_default()))
        })
        .collect();
    leave_foreign(offer, &existing);
    let mut refused = Vec::new();
    for (index, tool) in offer.tools.iter_mut().enumerate() {
        let tool_name = tool.name_any();
        // NB: an apply naming a UID never creates (the API server answers "uid mismatch"), so
        // a new McpTool is applied without one, and without force: nothing conflicts unless
        // someone else created it meanwhile. The server's own McpTools take force (a user's
        // `kubectl edit` is undone) and their UID. Both are Apply operations of one field
        // manager, so a field the server stops offering leaves the object.
        let expected = existing.get(&tool_name).cloned().flatten();
        let params = match &expected {
            Some(_) => PatchParams::apply(FIELD_MANAGER).force(),
            None => PatchParams::apply(FIELD_MANAGER),
        };
        tool.metadata.uid = expected;
        match api.patch(&tool_name, &params, &Patch::Apply(&*tool)).await {
            Ok(_) => {}
            // Taken meanwhile (a conflict, or the UID differs), or refused by the McpTool
            // schema: either way this tool, not the server, is what failed.
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 422 => {
                // A list, not a get: the operator's role may list McpTools, not get them.
                let one = ListParams::default().fields(&format!("metadata.name={tool_name}"));
                let now = api
                    .list_metadata(&one)
                    .await
                    .map_err(|e| Error::kube(KubeOp::List, "McpTool", &tool_name, e))?;
                let theirs = now
                    .items
                    .iter()
                    .any(|m| !controlled_by(m.owner_references(), uid));
                let reason = if theirs {
                    not_owned("McpTool", &tool_name)
                } else {
                    format!("the API server refused its McpTool: {}", s.message)
                };
                refused.push((index, reason));
            }
            Err(e) => return Err(Error::kube(KubeOp::Apply, "McpTool", tool_name, e)),
        }
    }
    for (index, reason) in refused.into_iter().rev() {
        offer.tools.remove(index);
        let tool = offer.offered.remove(index);
        offer.skipped.push(skip(&tool.name, &reason));
    }
    let offered: BTreeSet<&str> = offer.offered.iter().map(|o| o.mcp_tool.as_str()).collect();
    for object in &listed.items {
        let tool_name = object.name_any();
        let labelled = object.labels().get(SERVER_LABEL).is_some_and(|s| s == name);
        if !labelled
            || !controlled_by(object.owner_references(), uid)
            || offered.contains(tool_name.as_str())
        {
            continue;
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: object.uid(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&tool_name, &params).await {
            Ok(_) => {}
            // Gone already, or replaced (the UID differs): not the server's to delete.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(Error::kube(KubeOp::Delete, "McpTool", tool_name, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use mcp_task_operator_crds::mcp_server::OfferedTool;
    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> McpTool {
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpTool",
            "metadata": {"name": name},
            "spec": {"inputSchema": {"type": "object"}, "template": {"spec": {"containers": [{"name": "tool", "image": "t:1"}]}}},
        }))
        .unwrap()
    }

    #[test]
    fn a_name_taken_by_an_object_the_server_does_not_control_is_left_out_and_said() {
        let mut offer = Offer::default();
        for (tool_name, object) in [
            ("work", "srv-work"),
            ("write-file", "srv-write-file"),
            ("new", "srv-new"),
        ] {
            offer.tools.push(tool(object));
            offer.offered.push(OfferedTool {
                name: tool_name.into(),
                mcp_name: tool_name.into(),
                mcp_tool: object.into(),
            });
        }
        let existing: Existing = [
            ("srv-work".to_owned(), None),
            ("srv-write-file".to_owned(), Some("tool-uid".to_owned())),
        ]
        .into();
        leave_foreign(&mut offer, &existing);
        let offered: Vec<&str> = offer.offered.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(offered, ["write-file", "new"]);
        assert_eq!(offer.tools.len(), 2);
        assert_eq!(offer.skipped[0].name, "work");
        assert_eq!(
            offer.skipped[0].reason,
            "McpTool srv-work exists and is not owned by this server"
        );
    }

    #[test]
    fn the_names_reported_taken_are_found_again_from_the_status() {
        let status = McpServerStatus {
            skipped: vec![
                skip("work", &not_owned("McpTool", "srv-work")),
                skip("other", "not in spec.tools"),
            ],
            ..McpServerStatus::default()
        };
        assert_eq!(
            blocked_names("srv", &status),
            ["srv-work".to_owned()].into()
        );
        assert!(blocked_names("srv", &McpServerStatus::default()).is_empty());
    }

    #[test]
    fn only_a_controller_reference_of_the_same_uid_owns() {
        let reference = |uid: &str, controller| OwnerReference {
            uid: uid.into(),
            controller,
            ..OwnerReference::default()
        };
        assert!(controlled_by(&[reference("a", Some(true))], "a"));
        assert!(!controlled_by(&[reference("a", None)], "a"));
        assert!(!controlled_by(&[reference("b", Some(true))], "a"));
        assert!(!controlled_by(&[], "a"));
    }
}
