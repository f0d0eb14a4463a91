//! `mto-bench`: the benchmark harness behind `make bench`. It measures, in one run, each figure
//! of issue 7 beside a baseline measured in the same run, the bridge's per-call cost (issue 16)
//! beside a contract-native tool, and warm starts beside cold ones (issue 38); it prints the
//! results as Markdown tables and writes them to `MTO_BENCH_OUT`.
//!
//! `mto-bench` runs the sections (settings in [`config::Config`]); `mto-bench serve-axum ...`,
//! `serve-jsonrpc ...` and `serve-rmcp ...` are the baseline servers it starts as child
//! processes.

mod cluster;
mod config;
mod costs;
mod load;
mod mcp;
mod phases;
mod procs;
mod report;
mod rmcp_server;
mod rounds;
mod sections;
mod servers;
mod stats;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use futures::FutureExt;
use kube::Client;

use crate::config::Config;
use crate::report::{Report, Section};
use crate::sections::{Bench, bridge, call, e2e, get, life, scale, warm};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["serve-axum", content_type, body_file, port] => {
            Ok(
                servers::serve_axum((*content_type).to_owned(), body_file, parse_port(port)?)
                    .await?,
            )
        }
        ["serve-jsonrpc", map_file, port] => {
            Ok(servers::serve_jsonrpc(map_file, parse_port(port)?).await?)
        }
        ["serve-rmcp", port] => Ok(rmcp_server::serve_rmcp(parse_port(port)?).await?),
        [] => run(Config::from_env()?).await,
        _ => Err(
            "usage: mto-bench [serve-axum CONTENT_TYPE BODY_FILE PORT | serve-jsonrpc MAP_FILE PORT \
             | serve-rmcp PORT]".into(),
        ),
    }
}

fn parse_port(port: &str) -> Result<u16, String> {
    port.parse().map_err(|_| format!("{port} is not a port"))
}

/// Runs every configured section, then prints and writes the report.
async fn run(config: Config) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let started = Instant::now();
    let config = &config;
    let mut report = Report {
        preamble: machine(),
        sections: Vec::new(),
    };
    // The sections of `make bench`, in the order they run.
    for name in [
        "get", "stored", "call", "life", "scale", "e2e", "bridge", "warm",
    ] {
        if !config.runs_section(name) {
            continue;
        }
        report.sections.push(match name {
            "get" => measure(config, name, get::section(), get::run).await,
            "stored" => measure(config, name, get::stored_section(), get::run_stored).await,
            "call" => measure(config, name, call::section(), call::run).await,
            "life" => measure(config, name, life::section(), life::run).await,
            "scale" => measure(config, name, scale::section(), scale::run).await,
            "e2e" => measure(config, name, e2e::section(), e2e::run).await,
            "bridge" => measure(config, name, bridge::section(), bridge::run).await,
            _ => measure(config, name, warm::section(), warm::run).await,
        });
    }
    if config.runs_section("fleet") {
        let mut section = sections::fleet::section();
        let started = Instant::now();
        for &count in &config.fleet {
            let slot = &mut section;
            let outcome = in_namespace(&format!("bench-fleet-{count}"), |c, ns| async move {
                sections::fleet::run(config, c, &ns, count, slot).await
            })
            .await;
            if let Err(failure) = outcome {
                eprintln!("fleet level {count} failed: {failure}");
                let first_line = failure.lines().next().unwrap_or_default().to_owned();
                section.note(format!("{count} tasks: NOT MEASURED: {first_line}"));
            }
        }
        finish(&mut section, Ok(()), started);
        report.sections.push(section);
    }
    report.preamble.push(format!(
        "Harness wall time: {:.0} s.",
        started.elapsed().as_secs_f64()
    ));
    let markdown = report.to_markdown();
    println!("\n{markdown}");
    if let Some(dir) = std::path::Path::new(&config.out).parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(&config.out, markdown)
        .map_err(|e| format!("cannot write {}: {e}", config.out))?;
    eprintln!("results written to {}", config.out);
    Ok(())
}

/// Runs one section in a fresh namespace `bench-<name>-<random>` with the CRDs installed, and
/// notes its failure, if any, and its time.
async fn measure<F>(config: &Config, name: &str, mut section: Section, body: F) -> Section
where
    F: AsyncFnOnce(Bench<'_>, &mut Section) -> Result<(), String>,
{
    let started = Instant::now();
    let slot = &mut section;
    let outcome = in_namespace(&format!("bench-{name}"), |client, ns| async move {
        mcp_task_operator_harness::ensure_crds(&client).await;
        body(
            Bench {
                config,
                client,
                ns: &ns,
            },
            slot,
        )
        .await
    })
    .await;
    finish(&mut section, outcome, started);
    section
}

/// Runs `body` in a fresh namespace `<prefix>-<random>` (deleted afterwards); a failure or a
/// panic comes back as an error instead of ending the run.
async fn in_namespace<F, Fut>(prefix: &str, body: F) -> Result<(), String>
where
    F: FnOnce(Client, String) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut outcome = Ok(());
    let outcome_slot = &mut outcome;
    let ran = AssertUnwindSafe(mcp_task_operator_harness::with_temp_ns(
        prefix,
        |client, ns| async move {
            *outcome_slot = body(client, ns).await;
        },
    ))
    .catch_unwind()
    .await;
    match ran {
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panicked".to_owned())),
        Ok(()) => outcome,
    }
}

/// Notes a section's failure ("not measured") and its time.
fn finish(section: &mut Section, outcome: Result<(), String>, started: Instant) {
    if let Err(failure) = outcome {
        eprintln!("section {} failed: {failure}", section.title);
        let first_line = failure.lines().next().unwrap_or_default().to_owned();
        section.note(format!("NOT MEASURED (or only partly): {first_line}"));
    }
    section.note(format!(
        "section time {:.0} s",
        started.elapsed().as_secs_f64()
    ));
}

/// The machine the numbers come from: CPU model and count, memory, kernel, and the date.
fn machine() -> Vec<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default();
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .map(|kib| kib / 1024.0 / 1024.0)
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    vec![format!(
        "Machine: {cpus} × {model}, {memory:.1} GiB RAM, Linux {}; run {date}; front end, \
         operator and baseline servers are release builds, each a child process of the harness \
         on the same cores as the load generator and the cluster (the tasks/get section pins \
         the load generator and the servers to separate cores, see its notes).",
        kernel.trim()
    )]
}
