//! Helpers for `McpServer` tests and the bridge benchmark: the minimal Rust MCP server's image
//! (`src/bin/rust-mcp-server.rs`), an operator that knows the bridge image, and an McpServer
//! applied and waited Ready.

use std::sync::OnceLock;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use mcp_task_operator_crds::McpServer;
use serde_json::{Value, json};

use crate::operator::Operator;
use crate::stack::image_tag;

/// The image [`ensure_rust_mcp_server_image`] builds: the minimal Rust MCP server alone, at
/// `/usr/local/bin/rust-mcp-server`, user 65532, in the same base as `localhost/rust-tool:v1`.
pub const RUST_MCP_SERVER_IMAGE: &str = "localhost/rust-mcp-server:v1";
/// Longest a server's discovery (image start, initialize, tools/list) may take here.
pub const DISCOVERY_WAIT: Duration = Duration::from_secs(180);

/// Packages the Rust MCP server binary (pass `env!("CARGO_BIN_EXE_rust-mcp-server")`) as
/// [`RUST_MCP_SERVER_IMAGE`] and imports it, once per process.
pub fn ensure_rust_mcp_server_image(binary: &str) {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let binary = format!("{binary}:/usr/local/bin/rust-mcp-server");
        let args = [
            "build",
            RUST_MCP_SERVER_IMAGE,
            "--binary",
            &binary,
            "--user",
            "65532:65532",
        ];
        crate::run_script("hack/images.sh", &args);
    });
}

/// The bridge image of this build (`localhost/mcp-bridge:$MTO_IMAGE_TAG`).
pub fn bridge_image() -> String {
    format!("localhost/mcp-bridge:{}", image_tag())
}

/// An operator for `ns` with the bridge image, leading.
pub async fn start_operator(ns: &str) -> Operator {
    let bridge = bridge_image();
    let operator = Operator::start(
        ns,
        &format!("{ns}-lease"),
        "operator-0",
        &[("BRIDGE_IMAGE", &bridge)],
    )
    .await;
    operator.wait_leading().await;
    operator
}

/// Applies the McpServer `server` (a JSON object with metadata.name) in `ns` and waits until
/// it is Ready, its tools discovered.
pub async fn apply_ready(client: &Client, ns: &str, server: Value) -> McpServer {
    let servers: Api<McpServer> = Api::namespaced(client.clone(), ns);
    let name = server["metadata"]["name"]
        .as_str()
        .expect("the McpServer has metadata.name")
        .to_owned();
    servers
        .patch(
            &name,
            &PatchParams::apply("mto-tests").force(),
            &Patch::Apply(&server),
        )
        .await
        .unwrap_or_else(|e| panic!("cannot apply McpServer {name}: {e}"));
    crate::wait_for(
        &servers,
        &name,
        |s: Option<&McpServer>| {
            s.and_then(|s| s.status.as_ref()).is_some_and(|st| {
                st.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
        },
        DISCOVERY_WAIT,
    )
    .await
}

/// The restricted-level pod security of the test McpServers' pods.
pub fn pod_security() -> Value {
    json!({
        "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

/// The restricted-level security of the test McpServers' containers.
pub fn container_security() -> Value {
    json!({
        "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"]},
    })
}

/// An McpServer of the minimal Rust MCP server (`work`, `write-file`, and what `env` asks
/// for: `RUST_MCP_SERVER_EXTRA_TOOLS`, `RUST_MCP_SERVER_EXTRA_SCHEMA_BYTES`,
/// `RUST_MCP_SERVER_FORGE`), at the restricted level.
pub fn rust_server(name: &str, env: &[(&str, &str)]) -> Value {
    let env: Vec<Value> = env
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!({
        "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "automountServiceAccountToken": false,
            "securityContext": pod_security(),
            "containers": [{
                "name": "server", "image": RUST_MCP_SERVER_IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["/usr/local/bin/rust-mcp-server"], "env": env,
                "securityContext": container_security(),
            }],
        }}},
    })
}
