//! Section 6: what the bridge adds to a call. The same trivial work, run one call at a time
//! and interleaved in one run, as a contract-native tool (the Rust tool, `{"steps": 0}`) and
//! as an MCP server's tool through the bridge (the minimal Rust MCP server's `work`, in the
//! same base image), with mcp-server-time's `get_current_time` (Python) for context.
//!
//! Per call: McpTask created → the pod's tool container running, and created → terminal status
//! seen by a watch; then the bridged call over the native call of the same round, as a ratio
//! and as added milliseconds.

use std::time::{Duration, SystemTime};

use kube::{Client, ResourceExt};
use mcp_task_operator_crds::TaskStatus;
use mcp_task_operator_harness::mcp_servers::{
    RUST_MCP_SERVER_IMAGE, apply_ready, ensure_rust_mcp_server_image,
};
use mcp_task_operator_harness::operator::{
    Operator, RUST_TOOL_IMAGE, TaskRecorder, create_task, create_tool, ensure_example_images,
    ensure_rust_tool_image, tool,
};
use serde_json::{Value, json};

use crate::phases::PhaseRecorder;
use crate::report::Section;
use crate::sections::Bench;
use crate::stats::{ms, nearest_rank, quantile};

/// The three kinds of call, in the order of a round (rotated every round).
const KINDS: [Kind; 3] = [Kind::Native, Kind::Bridged, Kind::Time];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Native,
    Bridged,
    Time,
}

impl Kind {
    fn tool(self) -> &'static str {
        match self {
            Kind::Native => "native",
            Kind::Bridged => "bridged",
            Kind::Time => "time_get_current_time",
        }
    }

    fn arguments(self) -> Value {
        match self {
            Kind::Native => json!({"steps": 0}),
            Kind::Bridged => json!({}),
            Kind::Time => json!({"timezone": "Etc/UTC"}),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Native => "native Rust tool",
            Kind::Bridged => "Rust MCP server, bridged",
            Kind::Time => "mcp-server-time (Python), bridged",
        }
    }
}

/// One call's figures.
#[derive(Clone, Copy, Default)]
struct Call {
    to_running: Option<Duration>,
    to_terminal: Duration,
}

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    let tool_bin = config.require_rust_tool_bin()?;
    let server_bin = config
        .rust_mcp_server_bin
        .as_deref()
        .ok_or("MTO_RUST_MCP_SERVER_BIN is not set (make bench builds rust-mcp-server)")?;
    tokio::task::block_in_place(|| {
        ensure_rust_tool_image(tool_bin);
        ensure_rust_mcp_server_image(server_bin);
        ensure_example_images();
    });
    mcp_task_operator_harness::ensure_crds(&client).await;
    let operator = Operator::start(
        ns,
        &format!("{ns}-lease"),
        "operator-0",
        &[("BRIDGE_IMAGE", &config.bridge_image)],
    )
    .await;
    operator.wait_leading().await;
    register(&client, ns).await;
    let recorder = TaskRecorder::start(&client, ns).await;
    let phases = PhaseRecorder::start(&client, ns);

    let mut calls: [Vec<Call>; 3] = Default::default();
    for round in 0..config.runs {
        for i in 0..KINDS.len() {
            let index = (round + i) % KINDS.len();
            let kind = KINDS[index];
            let created = SystemTime::now();
            let name = create_task(&client, ns, kind.tool(), kind.arguments())
                .await
                .name_any();
            let (_, seen) =
                super::life::ended(&client, ns, &recorder, &name, TaskStatus::Completed)
                    .await
                    .map_err(|e| format!("{} call: {e}", kind.tool()))?;
            calls[index].push(Call {
                to_running: phases.of(&name).running.map(|r| since(created, r)),
                to_terminal: since(created, seen),
            });
        }
    }

    for (kind, calls) in KINDS.iter().zip(&calls) {
        let mut running: Vec<Duration> = calls.iter().filter_map(|c| c.to_running).collect();
        let mut terminal: Vec<Duration> = calls.iter().map(|c| c.to_terminal).collect();
        section.row(durations(
            &format!("{}: created → pod running", kind.label()),
            &mut running,
        ));
        section.row(durations(
            &format!("{}: created → terminal", kind.label()),
            &mut terminal,
        ));
    }
    for (index, kind) in [(1, Kind::Bridged), (2, Kind::Time)] {
        let pairs = || calls[0].iter().zip(&calls[index]);
        let ratios: Vec<f64> = pairs()
            .map(|(n, b)| b.to_terminal.as_secs_f64() / n.to_terminal.as_secs_f64().max(1e-9))
            .collect();
        let added: Vec<f64> = pairs()
            .map(|(n, b)| (b.to_terminal.as_secs_f64() - n.to_terminal.as_secs_f64()) * 1000.0)
            .collect();
        section.row(spread(
            &format!("{} / native, created → terminal", kind.label()),
            ratios,
            |r| format!("{r:.2}×"),
        ));
        section.row(spread(
            &format!("{} − native, created → terminal", kind.label()),
            added,
            |d| format!("{d:+.0} ms"),
        ));
    }
    section.note(format!(
        "One call at a time, {} rounds of the three calls, the order rotated every round; ratio \
         and difference are per round (a bridged call over the native call of its round). The \
         bridged pods run the bridge image {} (an init container copies it in).",
        config.runs, config.bridge_image
    ));
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "6. The bridge's cost per call",
        &["figure", "n", "median", "p90", "worst"],
    )
}

/// The native tool, the minimal Rust MCP server and mcp-server-time, registered and Ready.
async fn register(client: &Client, ns: &str) {
    let resources = json!({
        "requests": {"cpu": "10m", "memory": "16Mi"},
        "limits": {"memory": "128Mi"},
    });
    create_tool(
        client,
        ns,
        &tool("native", RUST_TOOL_IMAGE, &[], json!({}), json!({})),
    )
    .await;
    apply_ready(
        client,
        ns,
        json!({
            "apiVersion": "mcptasks.io/v1alpha1", "kind": "McpServer",
            "metadata": {"name": "minimal"},
            "spec": {
                "tools": [{"name": "work", "mcpName": "bridged"}],
                "template": {"spec": {
                    "terminationGracePeriodSeconds": 2,
                    "containers": [{
                        "name": "server",
                        "image": RUST_MCP_SERVER_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/usr/local/bin/rust-mcp-server"],
                        "resources": resources,
                    }],
                }},
            },
        }),
    )
    .await;
    let time: Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            mcp_task_operator_harness::chart_dir().join("../../examples/mcp-servers/time.yaml"),
        )
        .expect("examples/mcp-servers/time.yaml"),
    )
    .expect("time.yaml is YAML");
    apply_ready(client, ns, time).await;
}

fn since(earlier: SystemTime, later: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or_default()
}

fn durations(what: &str, samples: &mut [Duration]) -> Vec<String> {
    let n = samples.len();
    let median = quantile(samples, 0.5);
    let p90 = quantile(samples, 0.9);
    let worst = quantile(samples, 1.0);
    vec![
        what.to_owned(),
        n.to_string(),
        ms(median),
        ms(p90),
        ms(worst),
    ]
}

fn spread(what: &str, mut samples: Vec<f64>, show: impl Fn(f64) -> String) -> Vec<String> {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| nearest_rank(&samples, q).map_or_else(|| "n/a".to_owned(), &show);
    vec![
        what.to_owned(),
        samples.len().to_string(),
        at(0.5),
        at(0.9),
        at(1.0),
    ]
}
