//! An `McpServer`'s pod template made to run through the bridge: an init container copies
//! `mcp-bridge` from the bridge image into an emptyDir, and the server container (renamed
//! `tool`, the contract's container) starts the bridge, which starts the server's own command.
//! The server's image needs nothing of ours: the bridge is a static binary.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, ObjectFieldSelector,
    PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile, SecurityContext, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use mcp_task_operator_crds::McpServer;
use mcp_task_operator_crds::mcp_server::SERVER_CONTAINER_NAME;
use mcp_task_operator_crds::mcp_tool::TOOL_CONTAINER_NAME;

use crate::contract::{MESSAGE_NONCE_ENV, POD_MESSAGE_NONCE_ANNOTATION};

/// The volume and the directory holding the bridge in the pod.
pub const BRIDGE_VOLUME: &str = "mcp-bridge";
const BRIDGE_DIR: &str = "/mcp-bridge-bin";
/// The bridge's path in the tool container: the first word of the command of a container
/// that runs through the bridge.
pub const BRIDGE_BINARY: &str = "/mcp-bridge-bin/mcp-bridge";
/// Where the bridge image keeps the binary.
const BRIDGE_IN_IMAGE: &str = "/mcp-bridge";

/// What the pod does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode<'a> {
    /// `initialize` and `tools/list`: discovery.
    Discover,
    /// One call of the server's tool of this name.
    Call(&'a str),
}

/// Why a server's template cannot be bridged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// No container named `server`, and not exactly one container.
    #[error(
        "the template has no container named '{SERVER_CONTAINER_NAME}' and not exactly one container"
    )]
    NoServerContainer,
    /// The server container has no command.
    #[error(
        "the server container sets no command: the operator starts the server through the bridge and cannot read an image's entrypoint"
    )]
    NoCommand,
    /// The template already uses the bridge's volume name or init container name.
    #[error("the template already has a volume or init container named '{BRIDGE_VOLUME}'")]
    NameTaken,
}

/// `server`'s template for `mode`, with the bridge from `bridge_image`.
pub fn bridged(
    server: &McpServer,
    bridge_image: &str,
    mode: Mode<'_>,
) -> Result<PodTemplateSpec, TemplateError> {
    let mut template = server.spec.template.clone();
    let pod = template.spec.get_or_insert_with(Default::default);
    let index = match pod.containers.as_slice() {
        [_] => 0,
        many => many
            .iter()
            .position(|c| c.name == SERVER_CONTAINER_NAME)
            .ok_or(TemplateError::NoServerContainer)?,
    };
    let taken = pod
        .volumes
        .iter()
        .flatten()
        .any(|v| v.name == BRIDGE_VOLUME)
        || pod
            .init_containers
            .iter()
            .flatten()
            .any(|c| c.name == BRIDGE_VOLUME);
    if taken {
        return Err(TemplateError::NameTaken);
    }
    let container = &mut pod.containers[index];
    let command = container
        .command
        .take()
        .filter(|c| !c.is_empty())
        .ok_or(TemplateError::NoCommand)?;
    let mut bridge = vec![BRIDGE_BINARY.to_owned()];
    if mode == Mode::Discover {
        bridge.push("--list".into());
    }
    bridge.push("--".into());
    bridge.extend(command);
    bridge.extend(container.args.take().unwrap_or_default());
    container.command = Some(bridge);
    container.name = TOOL_CONTAINER_NAME.into();
    if let Mode::Call(tool) = mode {
        let env = container.env.get_or_insert_with(Vec::new);
        env.push(EnvVar {
            name: "MCP_BRIDGE_TOOL".into(),
            value: Some(tool.into()),
            ..EnvVar::default()
        });
        // The nonce through the environment, never a file: the server runs in this container,
        // as this user, and must not sign lines (the bridge hides its own environment).
        let annotation = format!("metadata.annotations['{POD_MESSAGE_NONCE_ANNOTATION}']");
        env.push(EnvVar {
            name: MESSAGE_NONCE_ENV.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: annotation,
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        });
    }
    mount_bridge(pod, index, bridge_image);
    Ok(template)
}

/// Gives the container `index` of `pod` the bridge: an emptyDir at [`BRIDGE_DIR`] that an
/// init container fills from `bridge_image`.
pub fn mount_bridge(pod: &mut PodSpec, index: usize, bridge_image: &str) {
    pod.containers[index]
        .volume_mounts
        .get_or_insert_with(Vec::new)
        .push(VolumeMount {
            name: BRIDGE_VOLUME.into(),
            mount_path: BRIDGE_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    pod.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: BRIDGE_VOLUME.into(),
        empty_dir: Some(EmptyDirVolumeSource {
            size_limit: Some(Quantity("32Mi".into())),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    });
    pod.init_containers
        .get_or_insert_with(Vec::new)
        .push(install_container(bridge_image));
}

/// The init container that copies the bridge: it passes the "restricted" Pod Security level
/// whatever the server's own container does.
fn install_container(image: &str) -> Container {
    let small = || {
        [
            ("cpu".to_owned(), Quantity("100m".into())),
            ("memory".to_owned(), Quantity("32Mi".into())),
        ]
        .into_iter()
        .collect()
    };
    Container {
        name: BRIDGE_VOLUME.into(),
        image: Some(image.into()),
        command: Some(vec![
            BRIDGE_IN_IMAGE.into(),
            "--install".into(),
            format!("{BRIDGE_DIR}/mcp-bridge"),
        ]),
        volume_mounts: Some(vec![VolumeMount {
            name: BRIDGE_VOLUME.into(),
            mount_path: BRIDGE_DIR.into(),
            ..VolumeMount::default()
        }]),
        resources: Some(ResourceRequirements {
            limits: Some(small()),
            requests: Some(small()),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            run_as_user: Some(65532),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..SeccompProfile::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn server(containers: serde_json::Value) -> McpServer {
        serde_json::from_value(json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
            "metadata": {"name": "time", "namespace": "tools"},
            "spec": {"template": {"spec": {"containers": containers}}}
        }))
        .unwrap()
    }

    #[test]
    fn a_call_runs_the_servers_command_through_the_bridge_in_the_tool_container() {
        let s = server(
            json!([{"name": "srv", "image": "time:1", "command": ["python3", "-m", "mcp_server_time"], "args": ["--local-timezone", "UTC"]}]),
        );
        let t = bridged(&s, "bridge:1", Mode::Call("convert_time")).unwrap();
        let pod = t.spec.unwrap();
        let c = &pod.containers[0];
        assert_eq!(c.name, "tool");
        assert_eq!(
            c.command.as_deref().unwrap(),
            [
                "/mcp-bridge-bin/mcp-bridge",
                "--",
                "python3",
                "-m",
                "mcp_server_time",
                "--local-timezone",
                "UTC"
            ]
        );
        assert_eq!(c.args, None);
        let env = c.env.as_ref().unwrap();
        assert_eq!(
            (env[0].name.as_str(), env[0].value.as_deref()),
            ("MCP_BRIDGE_TOOL", Some("convert_time"))
        );
        let nonce = env[1]
            .value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref());
        assert_eq!(
            (env[1].name.as_str(), nonce.map(|f| f.field_path.as_str())),
            (
                "MCP_MESSAGE_NONCE",
                Some("metadata.annotations['mcptasks.io/message-nonce']")
            )
        );
        let init = &pod.init_containers.unwrap()[0];
        assert_eq!(init.image.as_deref(), Some("bridge:1"));
        assert_eq!(init.command.as_deref().unwrap()[1], "--install");
        assert_eq!(pod.volumes.unwrap()[0].name, "mcp-bridge");
    }

    #[test]
    fn discovery_lists_and_picks_the_container_named_server() {
        let s = server(json!([
            {"name": "sidecar", "image": "s:1"},
            {"name": "server", "image": "e:1", "command": ["node", "index.js", "stdio"]}
        ]));
        let pod = bridged(&s, "bridge:1", Mode::Discover)
            .unwrap()
            .spec
            .unwrap();
        assert_eq!(pod.containers[0].name, "sidecar");
        assert_eq!(pod.containers[1].name, "tool");
        assert_eq!(
            pod.containers[1].command.as_deref().unwrap(),
            [
                "/mcp-bridge-bin/mcp-bridge",
                "--list",
                "--",
                "node",
                "index.js",
                "stdio"
            ]
        );
        assert_eq!(pod.containers[1].env, None);
    }

    #[test]
    fn templates_that_cannot_be_bridged_say_why() {
        let no_command = server(json!([{"name": "s", "image": "e:1"}]));
        assert_eq!(
            bridged(&no_command, "b", Mode::Discover),
            Err(TemplateError::NoCommand)
        );
        let two = server(
            json!([{"name": "a", "image": "e:1", "command": ["x"]}, {"name": "b", "image": "e:1"}]),
        );
        assert_eq!(
            bridged(&two, "b", Mode::Discover),
            Err(TemplateError::NoServerContainer)
        );
        let mut taken = server(json!([{"name": "s", "image": "e:1", "command": ["x"]}]));
        taken.spec.template.spec.as_mut().unwrap().volumes = Some(vec![Volume {
            name: "mcp-bridge".into(),
            ..Volume::default()
        }]);
        assert_eq!(
            bridged(&taken, "b", Mode::Discover),
            Err(TemplateError::NameTaken)
        );
    }
}
