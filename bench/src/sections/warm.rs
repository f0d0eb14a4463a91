//! Section 8: warm starts (issue 38). The same calls with and without a warm pool, interleaved
//! in one run: a trivial busybox tool (`sh -c` noting its start time and printing one result
//! line) and mcp-server-time's `get_current_time` through an McpServer, each with a pool of one
//! and without, one call at a time through the real front end, the order rotated every round;
//! beside them the floor of a bridged call, a `tools/call` over stdio to an already-running copy
//! of mcp-server-time on this machine. Then the pool's hit rate and idle pods under a steady
//! Poisson load at 80 % of a tool's `maxConcurrentTasks` ([`steady`]).
//!
//! Before each warm call the section waits until the pool has a ready pod (not timed): a warm
//! figure is a call that found one. Whether it did is checked, not assumed: the task's
//! `status.jobName` is a pool Job's, not its own name.

mod floor;
mod setup;
mod steady;
mod table;

use std::time::{Duration, SystemTime};

use kube::{Client, ResourceExt};
use mcp_task_operator_crds::{McpTask, TaskStatus};
use mcp_task_operator_harness::frontend::{Frontend, UNLIMITED};
use mcp_task_operator_harness::mcp_client::Mcp;
use mcp_task_operator_harness::operator::{
    Operator, TaskRecorder, ensure_example_images, printed_time, result_text,
};
use serde_json::{Value, json};

use crate::phases::PhaseRecorder;
use crate::report::Section;
use crate::sections::Bench;
use setup::{COLD_ECHO, COLD_TIME, STEADY, WARM_ECHO, WARM_TIME};

/// The kinds of call of a round, in the order of the first round (rotated every round).
const KINDS: [Kind; 4] = [
    Kind::WarmEcho,
    Kind::ColdEcho,
    Kind::WarmTime,
    Kind::ColdTime,
];
/// The load point: a limit of 10 tasks at once, each sleeping 8 s, so 1 call a second.
const LIMIT: i64 = 10;
const WORK: Duration = Duration::from_secs(8);
/// Calls before the load point's recorded window.
const LOAD_WARMUP: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    WarmEcho,
    ColdEcho,
    WarmTime,
    ColdTime,
}

impl Kind {
    fn tool(self) -> &'static str {
        match self {
            Kind::WarmEcho => WARM_ECHO,
            Kind::ColdEcho => COLD_ECHO,
            Kind::WarmTime => WARM_TIME,
            Kind::ColdTime => COLD_TIME,
        }
    }

    fn arguments(self) -> Value {
        match self {
            Kind::WarmEcho | Kind::ColdEcho => json!({}),
            Kind::WarmTime | Kind::ColdTime => json!({"timezone": "Etc/UTC"}),
        }
    }

    fn warm(self) -> bool {
        matches!(self, Kind::WarmEcho | Kind::WarmTime)
    }

    fn native(self) -> bool {
        matches!(self, Kind::WarmEcho | Kind::ColdEcho)
    }

    fn label(self) -> &'static str {
        match self {
            Kind::WarmEcho => "native, warm",
            Kind::ColdEcho => "native, cold",
            Kind::WarmTime => "mcp-server-time, warm",
            Kind::ColdTime => "mcp-server-time, cold",
        }
    }
}

/// One call's timeline on this machine's clock (the node shares it).
struct Call {
    called: SystemTime,
    /// The CreateTaskResult arrived: the task exists.
    answered: SystemTime,
    /// The tool noted its start (native calls).
    started: Option<SystemTime>,
    /// The task watch saw statusMessage `Running`, if the task ever showed it.
    running_message: Option<SystemTime>,
    /// The pod watch saw the task's own pod running (cold calls).
    pod_running: Option<SystemTime>,
    /// The task watch saw it completed.
    completed: SystemTime,
    /// It ran in a claimed pool Job.
    claimed: bool,
}

/// Runs the section in namespace `ns`.
pub async fn run(bench: Bench<'_>, section: &mut Section) -> Result<(), String> {
    let Bench { config, client, ns } = bench;
    tokio::task::block_in_place(ensure_example_images);
    let operator = Operator::start(
        ns,
        &format!("{ns}-lease"),
        "operator-0",
        &[("BRIDGE_IMAGE", &config.bridge_image)],
    )
    .await;
    operator.wait_leading().await;
    let frontend = Frontend::start(ns, UNLIMITED).await;
    let mcp = Mcp::new(&frontend.url);
    setup::register_tools(&client, ns, LIMIT, WORK.as_secs()).await;
    setup::register_servers(&client, ns).await?;
    mcp.wait_for_tools(&[WARM_ECHO, COLD_ECHO, WARM_TIME, COLD_TIME, STEADY])
        .await;
    let pools = [
        setup::tool_object(&client, ns, WARM_ECHO).await?,
        setup::tool_object(&client, ns, WARM_TIME).await?,
    ];
    let mut floor = floor::StdioServer::start().await?;
    for _ in 0..3 {
        floor.call().await?;
    }
    let recorder = TaskRecorder::start(&client, ns).await;
    let phases = PhaseRecorder::start(&client, ns);

    let mut calls: [Vec<Call>; 4] = Default::default();
    let mut floors = Vec::new();
    for round in 0..config.runs {
        for i in 0..KINDS.len() {
            let index = (round + i) % KINDS.len();
            let kind = KINDS[index];
            if kind.warm() {
                let pool = if kind.native() { &pools[0] } else { &pools[1] };
                setup::wait_ready(&client, ns, pool).await?;
            }
            let call = one_call(&client, ns, &mcp, &recorder, &phases, kind).await?;
            calls[index].push(call);
        }
        floors.push(floor.call().await?);
    }
    drop(floor);
    table::rows(section, &calls, &mut floors);
    section.note(format!(
        "One call at a time through the front end, {} rounds of the four calls, the order \
         rotated every round; before a warm call the section waits (untimed) until the pool \
         has a ready pod. Warm calls that ran in a claimed pool Job: {} of {} native, {} of {} \
         mcp-server-time. Tool started = the time the busybox script noted first thing \
         (adjtimex, µs), on the node's clock, which is this machine's. The pods run the bridge \
         image {} (the launcher; an init container copies it in).",
        config.runs,
        calls[0].iter().filter(|c| c.claimed).count(),
        calls[0].len(),
        calls[2].iter().filter(|c| c.claimed).count(),
        calls[2].len(),
        config.bridge_image
    ));

    for load in steady::LOADS {
        let settings = steady::Settings {
            load,
            limit: LIMIT,
            work: WORK,
            warmup: LOAD_WARMUP,
            window: config.warm_load_time,
        };
        let steady_tool = setup::tool_object(&client, ns, STEADY).await?;
        let outcome = steady::run(&client, ns, &mcp, &steady_tool, settings).await?;
        section.tables.push(table::load_table(&settings, &outcome));
    }
    drop(frontend);
    Ok(())
}

/// The section's empty table.
pub fn section() -> Section {
    Section::new(
        "8. Warm starts",
        &["figure", "n", "median", "p90", "worst", "goal"],
    )
}

/// One `tools/call` of `kind`, followed to `completed`.
async fn one_call(
    client: &Client,
    ns: &str,
    mcp: &Mcp,
    recorder: &TaskRecorder,
    phases: &PhaseRecorder,
    kind: Kind,
) -> Result<Call, String> {
    let called = SystemTime::now();
    let reply = mcp.call_tool(kind.tool(), kind.arguments()).await;
    let answered = SystemTime::now();
    let id = reply.body["result"]["taskId"]
        .as_str()
        .ok_or_else(|| format!("{}: tools/call made no task: {}", kind.tool(), reply.body))?
        .to_owned();
    let (done, completed) = super::life::ended(client, ns, recorder, &id, TaskStatus::Completed)
        .await
        .map_err(|e| format!("{}: {e}", kind.tool()))?;
    let started = if kind.native() {
        Some(
            printed_time(&result_text(&done), "started at ")
                .ok_or_else(|| format!("{}: no start time in {:?}", kind.tool(), done.status))?,
        )
    } else {
        None
    };
    let running_message = recorder
        .of(&id)
        .into_iter()
        .find(|t| t.message.as_deref() == Some("Running"))
        .map(|t| t.seen_at);
    Ok(Call {
        called,
        answered,
        started,
        running_message,
        pod_running: phases.of(&id).running,
        completed,
        claimed: claimed(&done),
    })
}

/// Whether the task ran in a Job not named after it: a claimed pool Job.
fn claimed(task: &McpTask) -> bool {
    task.status
        .as_ref()
        .and_then(|s| s.job_name.as_deref())
        .is_some_and(|job| job != task.name_any())
}

fn since(earlier: SystemTime, later: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or_default()
}
