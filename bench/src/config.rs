//! Settings of one run, from `MTO_BENCH_*` environment variables (all optional).

use std::time::Duration;

/// What to run and for how long.
#[derive(Clone, Debug)]
pub struct Config {
    /// Sections to run (`MTO_BENCH_SECTIONS`, comma-separated; default all:
    /// `get,call,life,scale,e2e,bridge,warm`).
    pub sections: Vec<String>,
    /// Recorded time per load point (`MTO_BENCH_SECONDS`, default 4).
    pub load_time: Duration,
    /// Unrecorded warm-up before each load point (1 s).
    pub warmup: Duration,
    /// Interleaved rounds per `tasks/get` point (`MTO_BENCH_ROUNDS`, default 10): in each
    /// round every server of the point is measured once, in an order rotated round by round.
    pub rounds: usize,
    /// Recorded time of one server in one round (`MTO_BENCH_WINDOW_MS`, default 1000), after
    /// an unrecorded warm-up of a quarter of it.
    pub window: Duration,
    /// Tasks the memory point of the `tasks/get` section creates and polls once each
    /// (`MTO_BENCH_MEMORY_TASKS`, default 500).
    pub memory_tasks: usize,
    /// Concurrent connections of the tasks/get points (`MTO_BENCH_CONNECTIONS`, default
    /// `1,16,64`).
    pub connections: Vec<usize>,
    /// Sequential tools/call and bare creates each (`MTO_BENCH_CALLS`, default 100).
    pub calls: usize,
    /// Samples per task-life figure (`MTO_BENCH_RUNS`, default 16).
    pub runs: usize,
    /// Task counts of the scale section (`MTO_BENCH_SCALE`, default `1000,5000,10000`).
    pub scale: Vec<usize>,
    /// Tasks started at once in the end-to-end section (`MTO_BENCH_E2E_TASKS`, default 20).
    pub e2e_tasks: usize,
    /// Recorded time of the warm-start section's steady load (`MTO_BENCH_WARM_SECONDS`,
    /// default 90), after 30 s unrecorded.
    pub warm_load_time: Duration,
    /// Task counts of the fleet section on KWOK fake nodes (`MTO_BENCH_FLEET`, default
    /// `1000,5000`; the section runs only when named in `MTO_BENCH_SECTIONS`, as `make scale`
    /// does).
    pub fleet: Vec<usize>,
    /// Whether the fleet's fake pods run ten times as long (`MTO_BENCH_FLEET_LONG=1`, as
    /// `make scale-long` sets): 600 s instead of 60 s, so that every pod of a level of
    /// thousands runs at the same moment (pods start at 10-50 a second here).
    pub fleet_long: bool,

    /// The Rust tool binary packaged as `localhost/rust-tool:v1` (`MTO_RUST_TOOL_BIN`).
    pub rust_tool_bin: Option<String>,
    /// The minimal Rust MCP server packaged as `localhost/rust-mcp-server:v1`
    /// (`MTO_RUST_MCP_SERVER_BIN`), for the bridge section.
    pub rust_mcp_server_bin: Option<String>,
    /// The bridge image the operator of the bridge and warm sections copies into pods
    /// (`MTO_BRIDGE_IMAGE`, default `localhost/mcp-bridge:bench`, which `hack/bench.sh` builds).
    pub bridge_image: String,
    /// Where the results table goes (`MTO_BENCH_OUT`, default
    /// `$CARGO_TARGET_DIR/bench/results.md`).
    pub out: String,
}

impl Config {
    /// Reads the environment; an unparsable number names its variable.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let number = |name: &str, default: usize| -> Result<usize, String> {
            var(name).map_or(Ok(default), |v| {
                v.parse().map_err(|_| format!("{name}={v} is not a number"))
            })
        };
        let list = |name: &str, default: &str| -> Result<Vec<usize>, String> {
            var(name)
                .unwrap_or_else(|| default.to_owned())
                .split(',')
                .map(|n| {
                    n.trim()
                        .parse()
                        .map_err(|_| format!("{name} holds {n}, not a number"))
                })
                .collect()
        };
        let target = var("CARGO_TARGET_DIR").unwrap_or_else(|| "target".to_owned());
        Ok(Self {
            sections: var("MTO_BENCH_SECTIONS")
                .unwrap_or_else(|| "get,call,life,scale,e2e,bridge,warm".to_owned())
                .split(',')
                .map(|s| s.trim().to_owned())
                .collect(),
            load_time: Duration::from_secs(number("MTO_BENCH_SECONDS", 4)? as u64),
            warmup: Duration::from_secs(1),
            rounds: number("MTO_BENCH_ROUNDS", 10)?.max(1),
            window: Duration::from_millis(number("MTO_BENCH_WINDOW_MS", 1000)?.max(100) as u64),
            memory_tasks: number("MTO_BENCH_MEMORY_TASKS", 500)?,
            connections: list("MTO_BENCH_CONNECTIONS", "1,16,64")?,
            calls: number("MTO_BENCH_CALLS", 100)?,
            runs: number("MTO_BENCH_RUNS", 16)?,
            scale: list("MTO_BENCH_SCALE", "1000,5000,10000")?,
            e2e_tasks: number("MTO_BENCH_E2E_TASKS", 20)?,
            warm_load_time: Duration::from_secs(
                number("MTO_BENCH_WARM_SECONDS", 90)?.max(10) as u64
            ),
            fleet: list("MTO_BENCH_FLEET", "1000,5000")?,
            fleet_long: var("MTO_BENCH_FLEET_LONG").is_some_and(|v| v != "0"),

            rust_tool_bin: var("MTO_RUST_TOOL_BIN"),
            rust_mcp_server_bin: var("MTO_RUST_MCP_SERVER_BIN"),
            bridge_image: var("MTO_BRIDGE_IMAGE")
                .unwrap_or_else(|| "localhost/mcp-bridge:bench".to_owned()),
            out: var("MTO_BENCH_OUT").unwrap_or_else(|| format!("{target}/bench/results.md")),
        })
    }

    /// [`Config::rust_tool_bin`], or the error that it is not set.
    pub fn require_rust_tool_bin(&self) -> Result<&str, String> {
        self.rust_tool_bin.as_deref().ok_or_else(|| {
            "MTO_RUST_TOOL_BIN is not set (make bench builds the rust-tool binary)".to_owned()
        })
    }

    /// Whether section `name` is to run.
    pub fn runs_section(&self, name: &str) -> bool {
        self.sections.iter().any(|s| s == name)
    }
}
